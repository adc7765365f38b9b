"""The service keeps the list of every archived profile between answers (each report and Overview reads it),
and never answers with a list that lacks a profile archived before the question."""
from __future__ import annotations

import random

import pytest

from service.daemon.persist import Persistence
from service.store import Store

ALL = 100_000  # what the API asks for: every segment


@pytest.fixture
def persist(tmp_path):
    store = Store(tmp_path / "ctxlamp.db")
    yield Persistence(store)
    store.close()


def _profile(session: str, segment: int, calls: int) -> dict:
    return {"session_id": session, "segment": segment, "started_at": "2026-03-01T10:00:00Z",
            "ended_at": f"2026-03-01T10:{segment:02d}:00Z", "end_reason": "reset", "model": "m", "calls": calls,
            "turns": 1, "B": 1000, "L_peak": 5000, "g": 1.5, "br": 0.2, "mf": None, "bill_in_usd": 0.1,
            "bill_out_usd": 0.02, "rent_usd": 0.05, "laps": 1, "duration_s": 60.0, "path_totals": {"/p/a.py": 3}}


def _fresh(persist: Persistence) -> list[dict]:
    return persist.store.sessions.segments(None, ALL)


def test_every_answer_holds_each_profile_archived_before_it(persist):
    rng = random.Random(7)
    for step in range(40):
        if rng.random() < 0.6:  # a new segment, or one archived again with other figures (a replay)
            persist.archive_profile(_profile(rng.choice("abc"), rng.randrange(4), calls=step))
        got = persist.segments(limit=ALL)
        assert got == _fresh(persist), f"step {step}"
        assert got == persist.segments(limit=ALL)  # asked again, unchanged: the same rows


def test_a_caller_that_changes_its_answer_does_not_change_the_next_one(persist):
    persist.archive_profile(_profile("a", 0, calls=3))
    first = persist.segments(limit=ALL)
    first[0]["calls"] = 999
    first.clear()
    assert [p["calls"] for p in persist.segments(limit=ALL)] == [3]
