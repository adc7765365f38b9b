"""The real Claude Code CLI for the end-to-end tests: installed from npm when missing, else a loud skip."""
from __future__ import annotations

import shutil
import sys
import warnings
from typing import NoReturn

import pytest

from tests.fakeapi.scenario import ClaudeUnavailable, claude_binary as installed_claude


def claude_binary() -> str:
    """The CLI from the npm cache (installed now if missing), or a loud skip."""
    try:
        return installed_claude()
    except ClaudeUnavailable as exc:
        reason = f"E2E SKIPPED: the Claude Code CLI could not be installed from npm ({exc or 'no output'})"
    loud_skip(reason)


def claude_and_tmux() -> str:
    """The CLI, for a test that drives it in a tmux pane: a loud skip when either is missing."""
    binary = claude_binary()
    if not shutil.which("tmux"):
        loud_skip("E2E SKIPPED: tmux is not installed")
    return binary


def loud_skip(reason: str) -> NoReturn:
    """Skip, said on stderr and as a warning too, so a run that skipped the real CLI cannot pass unseen."""
    print("\n" + "!" * 78 + f"\n{reason}\n" + "!" * 78, file=sys.stderr)
    warnings.warn(reason)
    pytest.skip(reason)
