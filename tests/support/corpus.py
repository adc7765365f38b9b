"""The project's transcript corpus: where it lives, its sessions by scenario, where third-party transcripts
may be, and a CLAUDE_CONFIG_DIR holding all of it."""
from __future__ import annotations

import json
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Transcripts the real Claude Code CLI wrote through tests/fakeapi (tests/fakeapi/make_fixtures.py).
FIXTURES = ROOT / "tests" / "fixtures"
CC = FIXTURES / "claude-code-2.1.328"
# The same scenarios written by each Claude Code version the project has pinned, oldest first. CC (above) is
# the corpus the golden counts, replays and benchmarks use; the checks that follow from the scenarios alone
# (counts, calls against the fake API's log, what Claude Code billed) run on every version.
CLI_VERSIONS = ("2.1.328", "2.1.332")
CLI_CORPORA = {version: FIXTURES / f"claude-code-{version}" for version in CLI_VERSIONS}
# Sessions the real CLI wrote while a user rewound them (tests/fakeapi/make_rewind_fixtures.py): their own
# golden tests (test_rewind_fixtures.py), not part of the scenario corpus the counts above sum over.
REWIND = FIXTURES / "rewind"
# Transcripts of other projects (1.0.x to 2.1.x), kept outside this repository; used when present.
REAL_FIXTURES = (ROOT / ".." / "shared" / "fixtures" / "real").resolve()
REAL_ABSENT = "third-party transcripts ../shared/fixtures/real are not beside this checkout"
needs_real_fixtures = pytest.mark.skipif(not REAL_FIXTURES.is_dir(), reason=REAL_ABSENT)
# Four people's transcripts from public repositories (Claude Code 1.0 to 2.1), as one archive: real-wild/<owner>-<repo>/...
REAL_WILD = (ROOT / ".." / "shared" / "fixtures" / "real-wild.tar.xz").resolve()
REAL_WILD_ABSENT = "third-party transcripts ../shared/fixtures/real-wild.tar.xz are not beside this checkout"


def unpack_real_wild(into: Path) -> Path:
    """The real-wild archive unpacked under `into` (skips when it is absent); returns the folder that plays
    Claude Code's projects/ (one project per repository)."""
    import tarfile

    if not REAL_WILD.is_file():
        pytest.skip(REAL_WILD_ABSENT)
    with tarfile.open(REAL_WILD) as tar:
        tar.extractall(into, filter="data")
    projects = into / "real-wild"
    (projects / "SOURCES.md").unlink(missing_ok=True)
    return projects


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


SHIFTED = "clear"  # its copy is moved three days back, so the date filters have two days to tell apart


def fixture_day() -> str:
    """The day the fixtures were written (make_fixtures runs them all at once), in UTC as the report counts."""
    for line in scenario_sessions("long-session")[0].read_text().splitlines():
        stamp = json.loads(line).get("timestamp")
        if stamp:
            return stamp[:10]
    raise AssertionError("no timestamp in the long session")


DAY = fixture_day()
EARLIER = (date.fromisoformat(DAY) - timedelta(days=3)).isoformat()


def copy_fixtures(dest: Path, real: bool = False) -> Path:
    """A CLAUDE_CONFIG_DIR holding every fixture transcript in Claude Code's layout (the third-party ones too
    when `real`); the SHIFTED scenario's copy dated three days earlier."""
    projects = dest / "projects"
    projects.mkdir(parents=True)
    for run in sorted(CC.iterdir()):
        if run.name == SHIFTED:
            continue
        shutil.copytree(run / "projects", projects, dirs_exist_ok=True)
    for path in scenario_sessions(SHIFTED):
        target = projects / path.parent.name / path.name
        target.write_text(path.read_text().replace(f'"{DAY}T', f'"{EARLIER}T'))
    if real:
        shutil.copytree(REAL_FIXTURES / "iansherr-claude-code-log", projects, dirs_exist_ok=True)
        for folder, project in (("d-kimuson-claude-code-viewer", "sample-project"),
                                ("chiphuyen-sniffly", "-Users-chip-dev-ai-music")):
            (projects / project).mkdir()
            for f in (REAL_FIXTURES / folder).glob("*.jsonl"):
                shutil.copy(f, projects / project / f.name)
    return dest


def fixture_tree(tmp_path: Path) -> Path:
    """The projects/ folders of every scenario run of the pinned Claude Code, merged under tmp_path."""
    projects = tmp_path / "projects"
    for run in CC.iterdir():
        shutil.copytree(run / "projects", projects, dirs_exist_ok=True)
    return projects
