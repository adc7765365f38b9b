"""A snapshot says when its session started (the session's first call): the window names a session by its
project folder and that time (docs/glossary.md), through a compaction too, and live as from byte zero."""
from __future__ import annotations

import orjson

from service.engine_setup.engines import new_engine
from tests.support.corpus import scenario_session
from tests.support.engine_runs import PRICES


def test_a_session_started_at_its_first_call_and_a_compaction_does_not_move_it():
    lines = scenario_session("long-session").read_bytes().splitlines()
    first_call = next(orjson.loads(raw)["timestamp"] for raw in lines if b'"assistant"' in raw and b'"usage"' in raw)
    eng = new_engine("/tmp/long.jsonl", PRICES)
    assert eng.snapshot()["started_at"] is None  # no call yet: the window names it by its folder alone
    seen = set()
    for raw in lines:
        eng.feed_line(raw)
        if eng.snapshot()["calls"]:
            seen.add(eng.snapshot()["started_at"])
    snap = eng.snapshot()
    assert snap["segment"] >= 1, "the scenario holds a compaction"
    assert seen == {first_call} and snap["started_at"] == first_call
