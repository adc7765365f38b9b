"""`ctxlamp replay`: the section 11 contract, golden fixtures, determinism, bad input."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import transcripts as T
from tests.support.corpus import ROOT, scenario_session

CTXLAMP = [sys.executable, "-m", "service.cli"]


def replay_cli(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLAMP, "replay", str(path), *extra], capture_output=True, cwd=ROOT, timeout=300)


def jsonl(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_replay_jsonl_contract_on_a_compaction_fixture():
    path = scenario_session("subagent-and-compact")
    proc = replay_cli(path, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    events = jsonl(proc)
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "end" and kinds.count("end") == 1 and "reset" in kinds
    required = ["session_id", "transcript", "segment", "calls", "turns", "model", "price_source", "totalStock", "L", "L_peak", "B", "B_default", "floor", "D", "g", "cRatio", "x", "xSweet", "u", "dhat", "mf", "pp", "bp", "br", "bill_cycle_usd", "wallet_phase", "laps", "lamp", "skeleton", "reminder", "spend", "window", "cache"]
    for e in events:
        if e["event"] == "call":
            assert all(k in e for k in required), set(required) - set(e)
            assert isinstance(e["totalStock"], int) and isinstance(e["B"], int)
            assert e["session_id"] == path.stem
    after_reset = kinds.index("reset")
    assert events[after_reset + 1]["segment"] == 1


@pytest.mark.parametrize("name,content", [
    ("empty", b""),
    ("junk", bytes(random.Random(1).randrange(256) for _ in range(20_000))),
    ("invalid_utf8", b'{"type": "user", "message": {"content": "\xff\xfe"}}\n'),
])
def test_unreadable_input_exits_zero_with_an_end_event(tmp_path, name, content):
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(content)
    proc = replay_cli(path, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    end = jsonl(proc)[-1]
    assert end["event"] == "end" and end["segments"] == []


def test_bad_lines_are_counted_and_every_valid_entry_still_measured(tmp_path):
    good = T.growing_session(12)
    lines = [json.dumps(e).encode() for e in good]
    bad = [b"\x00\x01garbage", b'{"type": "assistant", "message": {"id": "w", "usage": "lots", "model": "m"}}',
           b'{"type": "user", "message": {"content": 42}}', b"[1, 2, 3]", b'{"truncated": ',
           b'{"type": "assistant", "message": {"id": "v", "model": "claude-sonnet-4-5", '
           b'"usage": {"input_tokens": "3"}}}', b"\xff\xfe\xfd not utf8"]
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line)
        if i < len(bad):
            mixed.append(bad[i])
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(mixed) + b"\n" + b'{"type": "assistant", "message": {"id": "half')
    proc = replay_cli(path, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    events = jsonl(proc)
    assert sum(1 for e in events if e["event"] == "call") == 12
    assert events[-1]["skipped_lines"] == len(bad)
    assert events[-1]["held_back_bytes"] == len(b'{"type": "assistant", "message": {"id": "half')  # as live holds it


def test_a_50_mb_line_is_skipped_without_harm(tmp_path):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as fh:
        fh.write(T.to_bytes(T.growing_session(5)))
        fh.write(b'{"type": "assistant", "junk": "' + b"x" * (50 << 20))  # never closed
        fh.write(b"\n")
        fh.write(T.to_bytes([T.call("after", 999, inn=3, cw5=100, cr=30_000, out=5)]))
    proc = replay_cli(path, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    events = jsonl(proc)
    assert sum(1 for e in events if e["event"] == "call") == 6
    assert events[-1]["skipped_lines"] == 1


def test_an_internal_error_exits_non_zero_and_archives_nothing(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(T.to_bytes(T.growing_session(8)))
    code = ("import sys; import service.engine.curve as c; "
            "c.Curve.skeleton = lambda *a, **k: 1 / 0; "
            "from service.cli import main; sys.exit(main(['replay', sys.argv[1], '--jsonl']))")
    # the pure engine: a compiled class (make compiled) cannot be patched, and the subject is the CLI's handling
    env = {**os.environ, "CTXLAMP_ENGINE": "pure"}
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, cwd=ROOT, timeout=120, env=env)
    assert proc.returncode not in (0, None)
    assert b"internal error" in proc.stderr and b"ZeroDivisionError" in proc.stderr
    assert b'"event":"end"' not in proc.stdout


def test_missing_file_is_a_clear_error(tmp_path):
    proc = replay_cli(tmp_path / "nope.jsonl")
    assert proc.returncode == 2 and b"cannot read" in proc.stderr


def test_readable_table_shows_lamp_rent_and_segments():
    path = scenario_session("long-session")  # shell output it carries brings reminders; one /compact
    proc = replay_cli(path)
    assert proc.returncode == 0
    text = proc.stdout.decode()
    assert "lamp" in text and "reminder: lap 1" in text and "segments (2)" in text
    assert text.count("\n") > 60


def test_replay_names_the_file_beside_the_session_and_adds_the_subagents_as_the_report_books_them(tmp_path):
    """A resumed session's file: the engine's session is the one its first line names, the report's is the
    file's own id; with --with-subagents the replay's total is the report's total for that session."""
    big = dict(inn=1000, cw5=2000, cw1h=1000, cr=10_000, out=500)  # $0.027 at Sonnet 4.5's rates
    folder = tmp_path / "projects" / "-w-p"
    main = folder / "resumed.jsonl"
    sub_call = T.sidechain(T.call("s1", 5, **big))
    progress = {"type": "progress", "sessionId": T.SID, "timestamp": T.ts(7),
                "data": {"type": "agent_progress", "message": T.sidechain(T.call("s2", 7, **big))}}
    (folder / "resumed" / "subagents").mkdir(parents=True)
    main.write_bytes(T.to_bytes([T.call("m1", 0, **big), progress, T.call("m2", 9, **big)]))
    (folder / "resumed" / "subagents" / "agent-a1.jsonl").write_bytes(T.to_bytes([sub_call]))
    (folder / "agent-other.jsonl").write_bytes(T.to_bytes([{**T.sidechain(T.call("o1", 5, **big)), "sessionId": "another"}]))
    proc = replay_cli(main, "--with-subagents")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert text.splitlines()[0] == f"session {T.SID} · file resumed"
    assert ("with subagents (1 files): $0.1080 over 4 calls = main chain $0.0540 + subagents $0.0540 "
            "(as the report books them)") in text
    events = jsonl(replay_cli(main, "--jsonl", "--with-subagents"))
    assert [e["event"] for e in events[-2:]] == ["subagents", "end"]
    assert events[-2]["usd"] == pytest.approx(0.108) and events[-2]["files"] == [
        str(folder / "resumed" / "subagents" / "agent-a1.jsonl")]
    report = subprocess.run([*CTXLAMP, "report", "--json", "--no-service", "--no-cache", "--projects",
                             str(tmp_path / "projects")], capture_output=True, cwd=ROOT, timeout=300,
                            env={**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d")})
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["spend"]["by_session"][T.SID]["usd"] == pytest.approx(0.108)
