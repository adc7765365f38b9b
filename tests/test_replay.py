"""`ctxlamp replay`: the section 11 contract, golden fixtures, determinism, bad input."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from service.engine import LineSplitter
from service.measure.engines import load_prices, new_engine, replay_file
from tests.support import transcripts as T
from tests.support.corpus import main_transcripts, real_transcripts, ROOT, scenario_session

PRICES = load_prices()
CTXLAMP = [sys.executable, "-m", "service.cli"]


def replay_cli(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLAMP, "replay", str(path), *extra], capture_output=True, cwd=ROOT, timeout=300)


def jsonl(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def independent_calls(path: Path) -> list[dict]:
    """Main-chain calls folded by key, highest total kept (computed without the engine)."""
    calls: dict[str, dict] = {}
    for raw in path.read_bytes().splitlines():
        try:
            e = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(e, dict) or e.get("type") != "assistant" or e.get("isSidechain"):
            continue
        msg = e["message"]
        u = msg.get("usage")
        if not isinstance(u, dict) or msg.get("model") == "<synthetic>":
            continue
        key = msg.get("id") or ("req:" + e["requestId"] if e.get("requestId") else f"anon{len(calls)}")
        total = sum(u.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens",
                                            "cache_read_input_tokens", "output_tokens"))
        stock = total - (u.get("output_tokens") or 0)
        row = {"key": key, "total": total, "stock": stock, "L": u.get("cache_read_input_tokens") or 0,
               "u": u, "model": msg["model"]}
        if key not in calls or total >= calls[key]["total"]:
            calls[key] = {**row, "order": calls.get(key, {"order": len(calls)})["order"]}
    return sorted(calls.values(), key=lambda c: c["order"])


def golden_params() -> list:
    out = [pytest.param(p, id=p.parts[-4] + "/" + p.name[:8]) for p in main_transcripts()]
    return out + real_transcripts(main_only=True)


@pytest.mark.parametrize("path", golden_params())
def test_golden_fixture_calls_resets_and_spend(path):
    events = list(replay_file(path, PRICES))
    calls = [e for e in events if e["event"] == "call"]
    expected = independent_calls(path)
    assert [c["key"] for c in calls] == [c["key"] for c in expected]
    # the line printed for a call carries the stock of its final (largest) revision
    assert [c["totalStock"] for c in calls] == [c["stock"] for c in expected]
    assert [c["L"] for c in calls] == [c["L"] for c in expected]
    boundaries = sum(1 for raw in path.read_bytes().splitlines()
                     if b"compact_boundary" in raw and json.loads(raw).get("subtype") == "compact_boundary"
                     and not json.loads(raw).get("isSidechain"))
    assert sum(1 for e in events if e["event"] == "reset") == boundaries
    end = events[-1]
    assert end["event"] == "end" and len(end["segments"]) == boundaries + 1
    # spend: every call priced independently with the published table, summed over the segments
    bill_in = 0.0
    for c in expected:
        price, _ = PRICES.lookup(c["model"])
        price = price.for_prompt(c["stock"])
        u = c["u"]
        cc = u.get("cache_creation") or {}
        w1h = cc.get("ephemeral_1h_input_tokens", 0) if cc else 0
        w5 = (u.get("cache_creation_input_tokens") or 0) - w1h
        bill_in += (price.p_in * u["input_tokens"] + price.p_w5 * w5 + price.p_w1h * w1h
                    + price.p_r * (u.get("cache_read_input_tokens") or 0))
    assert sum(s["bill_in_usd"] for s in end["segments"]) == pytest.approx(bill_in, rel=1e-9)
    assert sum(s["calls"] for s in end["segments"]) == len(expected)


def test_replay_jsonl_contract_on_a_compaction_fixture():
    path = scenario_session("subagent-and-compact")
    proc = replay_cli(path, "--jsonl")
    assert proc.returncode == 0, proc.stderr
    events = jsonl(proc)
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "end" and kinds.count("end") == 1 and "reset" in kinds
    required = ("session_id transcript segment calls turns model price_source totalStock L L_peak B B_default floor "
                "D g cRatio x xSweet u dhat mf pp bp br bill_cycle_usd wallet_phase laps lamp skeleton reminder "
                "spend window cache").split()
    for e in events:
        if e["event"] == "call":
            assert all(k in e for k in required), set(required) - set(e)
            assert isinstance(e["totalStock"], int) and isinstance(e["B"], int)
            assert e["session_id"] == path.stem
    after_reset = kinds.index("reset")
    assert events[after_reset + 1]["segment"] == 1


def test_byte_chunks_give_the_same_output_as_the_whole_file():
    path = scenario_session("long-session")
    data = path.read_bytes()
    whole = list(replay_file(path, PRICES))
    for seed in range(3):
        rnd = random.Random(seed)
        engine = new_engine(str(path), PRICES)
        splitter = LineSplitter()
        events, pos = [], 0
        while pos < len(data):
            step = rnd.choice([1, 7, 100, 4096, 65536])
            for line in splitter.feed(data[pos:pos + step]):
                engine.feed_line(line)
            events.extend(engine.drain_events())
            pos += step
        engine.finish()
        events.extend(engine.drain_events())
        assert events == whole


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
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, cwd=ROOT, timeout=120)
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
