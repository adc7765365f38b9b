"""The service keeps the list of every archived profile between answers (each report and Overview reads it),
and never answers with a list that lacks a profile archived before the question."""
from __future__ import annotations

import dataclasses
import random
import threading

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


def test_an_answer_read_while_the_history_commits_is_not_kept_after_the_commit(persist):
    """The first pass archives its profiles in one batch, which commits after they are asked for. An Overview
    asking at that moment reads the rows as they were; the next answer, after the commit, holds the new ones
    (in CI under load the kept answer lacked the whole history until the next archived profile)."""
    persist.archive_profile(_profile("a", 0, calls=1))
    assert len(persist.segments(limit=ALL)) == 1
    writer = persist.store.writer
    operation = writer._operations["profile"]
    asked: list[list[dict]] = []

    def land_while_another_thread_asks(m, payloads):
        operation.apply_many(m, payloads)  # in the transaction, not committed yet
        reader = threading.Thread(target=lambda: asked.append(persist.segments(limit=ALL)))
        reader.start()
        reader.join()

    writer._operations["profile"] = dataclasses.replace(operation, apply_many=land_while_another_thread_asks)
    with persist.store.batch():
        persist.archive_profile(_profile("b", 0, calls=2))
        persist.archive_profile(_profile("c", 0, calls=3))
    assert [len(rows) for rows in asked] == [1]  # the database before the commit
    got = persist.segments(limit=ALL)
    assert got == _fresh(persist) and {p["session_id"] for p in got} == {"a", "b", "c"}
