"""Golden: sessions the real Claude Code 2.1.328 wrote while a user rewound them (tests/fixtures/rewind/).

Recorded interactively under tmux against the project's fake API (tests/fakeapi/make_rewind_fixtures.py):
two "Restore conversation" rewinds past a Read of a large file, "Summarize from here", "Summarize up to
here", and a `--fork-session` resume at an earlier answer. The fake API's own log (api.jsonl) says how
large each prompt it received was: after each rewind, B_default must follow that live context.
"""
from __future__ import annotations

import json
import random

import pytest

from tests.support.rewind import STEPS, MAIN, FORK, API, events_of


def prompt_size(record: dict) -> int:
    """What the fake API received: input + cache writes + cache reads of the request."""
    u = record["usage"]
    return u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]


def test_the_fixture_holds_what_the_steps_say():
    options = [s["option"] for s in STEPS if "option" in s]
    assert options == ["Restore conversation", "Summarize from here", "Summarize up to here", "Restore conversation"]
    assert MAIN.exists() and FORK.exists()


def test_after_each_rewind_B_default_follows_the_live_context():
    events, _ = events_of(MAIN.read_bytes())
    rewinds = [i for i, e in enumerate(events) if e["event"] == "rewind"]
    assert len(rewinds) == 2  # the two "Restore conversation"; the summaries are compactions
    for i in rewinds:
        rewind = events[i]
        before = events[i - 1]  # the call before the rewind, as it stood
        after = next(e for e in events[i:] if e["event"] == "call")
        live = prompt_size(API[after["key"]])
        assert after["totalStock"] == live
        # the Read past the ancestor left B whole: B_default is back at the floor, the live context's size
        assert rewind["B_default"] == after["B_default"] == after["floor"]
        assert 0.97 <= after["B_default"] / live <= 1.0
        assert rewind["B_default_before"] == before["B_default"] > 1.3 * live  # what it was: the bug
        assert after["D"] == max(0, after["B_default"] - after["L"])
        assert after["rewinds"] == before["rewinds"] + 1 and rewind["left"] > 0 and rewind["taken"] == 0
        # not a reset: the segment, g's basis, the turn count and the wallet carry on
        assert after["segment"] == before["segment"] and after["turns"] == before["turns"] + 1
        assert after["bill_cycle_usd"] >= before["bill_cycle_usd"] and after["laps"] >= before["laps"]


def test_both_summaries_are_compactions_that_rebuild_B_from_the_live_context():
    events, _ = events_of(MAIN.read_bytes())
    resets = [i for i, e in enumerate(events) if e["event"] == "reset"]
    assert [events[i]["trigger"] for i in resets] == ["manual", "manual"]
    for i in resets:
        first = next(e for e in events[i:] if e["event"] == "call")
        assert first["B_default"] == first["floor"] == first["totalStock"] == prompt_size(API[first["key"]])
        assert first["rewinds"] == events[i - 1]["rewinds"]  # a summary is no rewind
    end = events[-1]
    # the abandoned Reads left nothing behind; the summarized ones stayed in the segment they were read in
    totals = [sorted(s["path_totals"]) for s in end["segments"]]
    assert totals == [["/tmp/ctxlamp-fixture/demo-project/big.py"], ["/tmp/ctxlamp-fixture/demo-project/small.py"], []]


def test_every_billed_call_is_counted_the_abandoned_ones_included():
    events, eng = events_of(MAIN.read_bytes())
    keys = [e["key"] for e in events if e["event"] == "call"]
    billed = [i for i, r in API.items() if r["kind"] == "script" and r["match"] != "RW-FORK"]
    assert sorted(keys) == sorted(billed)  # compaction requests write no assistant entry
    for e in events:
        if e["event"] == "call":
            assert e["totalStock"] == prompt_size(API[e["key"]])


def test_a_forked_session_counts_only_its_own_calls_and_starts_at_its_live_context():
    events, _ = events_of(FORK.read_bytes(), path=FORK)
    calls = [e for e in events if e["event"] == "call"]
    (own,) = [i for i, r in API.items() if r["match"] == "RW-FORK"]
    assert [c["key"] for c in calls] == [own]  # the copied history was billed in the session it came from
    assert calls[0]["B_default"] == calls[0]["floor"] == prompt_size(API[own])
    assert calls[0]["rewinds"] == 0


@pytest.mark.parametrize("seed", range(4))
def test_tailing_in_chunks_equals_replay_on_the_rewind_file(seed):
    data = MAIN.read_bytes()
    rng = random.Random(seed)
    cuts = [rng.randint(1, 60_000) for _ in range(60)]
    whole, _ = events_of(data)
    tailed, _ = events_of(data, cuts=cuts)
    assert json.dumps(whole, sort_keys=True) == json.dumps(tailed, sort_keys=True)


def test_sidechain_copies_corrupt_lines_and_revisions_change_nothing():
    data = MAIN.read_bytes()
    clean, _ = events_of(data)
    rng = random.Random(21)
    noisy = []
    for line in data.splitlines(keepends=True):
        entry = json.loads(line)
        if entry.get("type") == "assistant" and isinstance(entry["message"].get("usage"), dict):
            early = json.loads(line)  # an earlier revision of the same block: same ids, less output
            early["message"]["usage"]["output_tokens"] = 1
            noisy.append(json.dumps(early).encode() + b"\n")
        noisy.append(line)
        if "uuid" in entry and rng.random() < 0.2:
            side = dict(entry, isSidechain=True)
            if isinstance(side.get("message"), dict) and side["message"].get("id"):
                side["message"] = dict(side["message"], id="side-" + side["message"]["id"])
            noisy.append(json.dumps(side).encode() + b"\n")
        if rng.random() < 0.05:
            noisy.append(b'{"parentUuid": "torn\n')
    got, eng = events_of(b"".join(noisy))
    assert eng.skipped_lines > 0
    for ev in clean + got:
        ev.pop("skipped_lines", None)
        if "status" in ev:
            ev["status"].pop("skipped_lines", None)
    assert got == clean
