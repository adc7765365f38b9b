"""Shared test fixtures: the project's own transcripts, where third-party ones may be, a private
ctxlamp home per test, a service's folders."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Days are cut in the machine's time zone (issue 26): every test (and the commands it starts) runs in UTC
# unless it names another zone, so figures per day do not depend on where the suite runs.
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()
# Transcripts the real Claude Code CLI wrote through tests/fakeapi (tests/fakeapi/make_fixtures.py).
FIXTURES = ROOT / "tests" / "fixtures"
CC = FIXTURES / "claude-code-2.1.328"
# The same scenarios written by each Claude Code version the project has pinned, oldest first. CC (above) is
# the corpus the golden counts, replays and benchmarks use; the checks that follow from the scenarios alone
# (counts, calls against the fake API's log, what Claude Code billed) run on every version.
CLI_VERSIONS = ("2.1.328", "2.1.332")
CLI_CORPORA = {version: FIXTURES / f"claude-code-{version}" for version in CLI_VERSIONS}
# Sessions the real CLI wrote while a user rewound them (tests/fakeapi/make_rewind_fixtures.py): their own
# golden tests (tests/test_rewind_fixtures.py), not part of the scenario corpus the counts above sum over.
REWIND = FIXTURES / "rewind"
# Transcripts of other projects (1.0.x to 2.1.x), kept outside this repository; used when present.
REAL_FIXTURES = (ROOT / ".." / "shared" / "fixtures" / "real").resolve()
REAL_ABSENT = "third-party transcripts ../shared/fixtures/real are not beside this checkout"
needs_real_fixtures = pytest.mark.skipif(not REAL_FIXTURES.is_dir(), reason=REAL_ABSENT)


def scenario_sessions(name: str, corpus: Path = CC) -> list[Path]:
    """The main session files one scenario's run left, oldest first (by their first line's timestamp)."""

    files = [p for p in (corpus / name / "projects").glob("*/*.jsonl")]

    def started(path: Path) -> str:
        for line in path.read_text(encoding="utf-8").splitlines():
            stamp = json.loads(line).get("timestamp")
            if stamp:
                return stamp
        return ""

    return sorted(files, key=started)


def scenario_session(name: str, corpus: Path = CC) -> Path:
    """The one main session file of a scenario that leaves one."""
    (path,) = scenario_sessions(name, corpus)
    return path


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
    """Every scenario transcript of the CC corpus (main files and subagent files), not the fake API's logs."""
    return sorted(p for p in CC.rglob("*.jsonl") if p.name not in ("api.jsonl", "results.jsonl"))


def main_transcripts() -> list[Path]:
    """Session files only: not subagents, not the fake API's own logs."""
    out = []
    for p in all_transcripts():
        if "subagents" in p.parts or p.name.startswith("agent-"):
            continue
        out.append(p)
    return out


def real_transcripts(main_only: bool = False) -> list:
    """Parameters for the third-party transcripts: each file when they are present, else one that skips."""
    if not REAL_FIXTURES.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=REAL_ABSENT), id="real-absent")]
    paths = sorted(REAL_FIXTURES.rglob("*.jsonl"))
    if main_only:
        paths = [p for p in paths if "subagents" not in p.parts and not p.name.startswith("agent-")]
    return [pytest.param(p, id="real/" + p.parent.name[:16] + "/" + p.name[:8]) for p in paths]


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
