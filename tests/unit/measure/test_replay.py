"""`ctxlamp replay`: the section 11 contract, golden fixtures, determinism, bad input."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from service.engine import LineSplitter
from service.engine_setup.engines import load_prices, new_engine, replay_file
from tests.support.corpus import main_transcripts, real_transcripts, scenario_session

PRICES = load_prices()


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
