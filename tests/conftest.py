"""Shared test fixtures: where ../shared is, a private ctxlamp home per test, a service's folders."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = (ROOT / ".." / "shared").resolve()
FIXTURES = SHARED / "fixtures"


@pytest.fixture
def shared_dir() -> Path:
    return SHARED


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


def all_transcripts() -> list[Path]:
    """Every .jsonl under shared/fixtures (main files and subagent files)."""
    return sorted(FIXTURES.rglob("*.jsonl"))


def main_transcripts() -> list[Path]:
    """Session files only: not subagents, not the fake API's own logs."""
    out = []
    for p in all_transcripts():
        if p.name in ("api.jsonl", "results.jsonl") or "subagents" in p.parts or p.name.startswith("agent-"):
            continue
        out.append(p)
    return out


def children_of(pid: int) -> set[int]:
    """Live (not zombie) child processes of `pid`, from /proc."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(entry))
    return out


def no_children_left(ignore: set[int] = frozenset(), timeout: float = 5.0) -> bool:
    """Whether this process's children (but `ignore`) are all gone, or zombies, within `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not children_of(os.getpid()) - ignore:
            return True
        time.sleep(0.02)
    return False
