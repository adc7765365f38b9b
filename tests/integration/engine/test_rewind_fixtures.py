"""Golden: sessions the real Claude Code 2.1.328 wrote while a user rewound them (tests/fixtures/rewind/).

Recorded interactively under tmux against the project's fake API (tests/fakeapi/make_rewind_fixtures.py):
two "Restore conversation" rewinds past a Read of a large file, "Summarize from here", "Summarize up to
here", and a `--fork-session` resume at an earlier answer. The fake API's own log (api.jsonl) says how
large each prompt it received was: after each rewind, B_default must follow that live context.
"""
from __future__ import annotations

import random
import subprocess
import sys


from tests.support.corpus import ROOT
from tests.support.harness import Service, append_lines, meaningful, replay, service_env, wait_for
from tests.support.rewind import SESSIONS, MAIN, events_of



def test_the_service_tailing_the_rewind_file_ends_where_replay_ends(tmp_path):
    home, claude = tmp_path / "home", tmp_path / "claude"
    project = claude / "projects" / SESSIONS.name
    project.mkdir(parents=True)
    dst = project / MAIN.name
    lines = MAIN.read_bytes().splitlines(keepends=True)
    expected, _, _ = replay(MAIN, tmp_path / "replay-home")
    with Service(service_env(home, claude), home) as svc:
        rng = random.Random(5)
        pos = 0
        while pos < len(lines):
            step = rng.randint(1, 40)
            append_lines(lines[pos:pos + step], dst, pause=0.001)
            pos += step
        sid = expected["session_id"]
        wait_for(lambda: meaningful(svc.api.session(sid)) == meaningful(expected), timeout=30,
                 what="the live snapshot to reach replay's end status")
        snap = svc.api.session(sid)
        assert snap["rewinds"] == expected["rewinds"] == 2
        series = svc.api.get(f"/api/v1/sessions/{sid}/series")
    _, eng = events_of(MAIN.read_bytes(), full=False)
    assert series["rewinds"] == eng.rewinds
    assert [c["B_default"] for c in series["calls"]] == [c["B_default"] for c in eng.series]


def test_the_replay_table_shows_each_rewind():
    out = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(MAIN)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    marks = [line for line in out.stdout.splitlines() if "<<< rewind after call" in line]
    events, _ = events_of(MAIN.read_bytes())
    assert marks == [f"      <<< rewind after call {e['call']}: B_default {e['B_default_before']} -> {e['B_default']} "
                     "(the conversation went back to an earlier message)" for e in events if e["event"] == "rewind"]
