"""The real Claude Code CLI for the end-to-end tests: installed from npm when missing, else a loud skip."""
from __future__ import annotations

import sys
import warnings

import pytest

from tests.fakeapi.scenario import ClaudeUnavailable, claude_binary as installed_claude


def claude_binary() -> str:
    """The CLI from the npm cache (installed now if missing), or a loud skip."""
    try:
        return installed_claude()
    except ClaudeUnavailable as exc:
        reason = f"E2E SKIPPED: the Claude Code CLI could not be installed from npm ({exc or 'no output'})"
    print("\n" + "!" * 78 + f"\n{reason}\n" + "!" * 78, file=sys.stderr)
    warnings.warn(reason)
    pytest.skip(reason)
