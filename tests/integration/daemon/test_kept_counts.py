"""A restart reads its live sessions again from byte zero without counting their texts again.

The service keeps the token counts it made (decision 504); the next start takes them, counts only what is
new, and its figures are the ones a replay from byte zero gives. A damaged file is counted afresh.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from service.engine_setup import kept_counts
from tests.support.corpus import ROOT, scenario_session
from tests.support.harness import replay, wait_for
from tests.support.service_proc import wait_for_snapshot

SESSION = scenario_session("long-session")  # many files read, written and edited


def _idle_paths(s) -> list[dict]:
    """The session's paths with their token counts once the start's reading is over."""
    wait_for(lambda: s.get("/api/v1/status")["service"]["scan"]["state"] == "idle", what="idle")
    return s.get(f"/api/v1/sessions/{SESSION.stem}/series")["paths"]


def _recent_session(claude: Path) -> Path:
    """SESSION's transcript, written a minute ago: a live session at a start."""
    live = claude / "projects" / "-work" / SESSION.name
    live.parent.mkdir(parents=True)
    live.write_bytes(SESSION.read_bytes())
    os.utime(live, (time.time() - 60,) * 2)
    return live


def test_a_restart_counts_nothing_again_and_keeps_its_figures(svc, dirs):
    home, claude = dirs
    live = _recent_session(claude)
    end, _, _ = replay(live, home.parent / "replay-home")
    kept = kept_counts.path_in(home)

    first = svc().start()
    wait_for_snapshot(first, SESSION.stem, end)  # counted afresh: a replay's figures
    paths = _idle_paths(first)
    assert sum(1 for p in paths if p["tokens"] > 0) >= 5
    assert first.stop() == 0
    written = kept.read_bytes()
    assert len(kept_counts.parse(written)) >= 5
    stamp = kept.stat().st_mtime_ns

    # the History now holds the session's segments, which move the advice's horizon: what the counts
    # decide is compared, each path's tokens
    second = svc().start()
    assert _idle_paths(second) == paths
    assert second.stop() == 0
    assert kept.read_bytes() == written and kept.stat().st_mtime_ns == stamp  # nothing counted again
    log = (home / "service.log").read_text()
    assert log.count(f"token counts: {len(kept_counts.parse(written))} known from the last run") == 1

    kept.write_bytes(written[:-1] + bytes([written[-1] ^ 1]))  # damaged on the disk
    third = svc().start()
    assert _idle_paths(third) == paths
    assert third.stop() == 0
    assert kept.read_bytes() == written  # counted afresh, the same numbers


# `ctxlamp report` with each text it counts named on stderr (a line each, as it is counted)
TALLIED = """
import sys
from service.engine_setup import tokenizer
plain = tokenizer.encode_len
tokenizer.encode_len = lambda text: print("counted a text", file=sys.stderr, flush=True) or plain(text)
from service.cli import entry
sys.argv = ["ctxlamp", *sys.argv[1:]]
entry()
"""


def _report_counting(home: Path, claude: Path) -> tuple[dict, int]:
    env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude), "TZ": "UTC"}
    out = subprocess.run([sys.executable, "-c", TALLIED, "report", "--json", "--no-service"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(out.stdout)
    return report["restart_savings"], out.stderr.count("counted a text")


def test_a_report_run_alone_counts_only_what_the_service_did_not(svc, dirs):
    home, claude = dirs
    live = _recent_session(claude)
    s = svc().start()
    _idle_paths(s)
    assert s.stop() == 0
    assert kept_counts.read(kept_counts.path_in(home))
    os.utime(live, (time.time() - 30,) * 2)  # the session changed since the report's cache: replayed again
    bare = home.parent / "bare-home"
    shutil.copytree(home, bare)
    kept_counts.path_in(bare).unlink()

    figures, counted = _report_counting(home, claude)
    figures_bare, counted_bare = _report_counting(bare, claude)
    assert figures == figures_bare
    assert counted_bare >= 10 and counted <= counted_bare // 4, (counted, counted_bare)
