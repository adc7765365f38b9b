"""Shared pytest fixtures: a private ctxlamp home per test, a service's folders. Constants and helpers are
in tests/support/ (import them from there)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def dirs(tmp_path):
    """(CTXLAMP_HOME, CLAUDE_CONFIG_DIR with an empty projects/) for a service under test."""
    home, claude = tmp_path / "home", tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    home.mkdir()
    return home, claude


@pytest.fixture
def ctx_home(tmp_path, monkeypatch) -> Path:
    """CTXLAMP_HOME and CLAUDE_CONFIG_DIR in a temp folder: nothing touches the user's files."""
    home = tmp_path / "ctxlamp-home"
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("CTXLAMP_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    return home
