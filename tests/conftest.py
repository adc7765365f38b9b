"""Shared pytest fixtures: a private ctxlamp home per test, a service's folders. Constants and helpers are
in tests/support/ (import them from there)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import settings

pytest_plugins = ["tests.support.o200k", "tests.support.tray"]  # shared fixtures: o200k counters, the tray

# Days are cut in the machine's time zone (issue 26): every test (and the commands it starts) runs in UTC
# unless it names another zone, so figures per day do not depend on where the suite runs.
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()


# Hypothesis: `make test` explores new examples on every run (a failure it finds becomes an @example);
# CI (`.ci/run` sets HYPOTHESIS_PROFILE=ci) draws the same examples for the same commit, with no example
# database, so one commit gives one result.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


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
