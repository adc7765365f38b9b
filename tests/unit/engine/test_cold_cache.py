"""The cold cache and Claude Code's own compactions as the engine reads them (issue 47).

A snapshot's `cache` prices the two ways on after the cache has expired: the next message rewriting
the whole prompt, and a fresh session writing the useful part (both at the cache's write price); on a
1-hour cache with a long prompt, Claude Code's idle compaction at 0.9 of the TTL and its price.
`compactions` counts the session's compactions by who started them.
"""
from __future__ import annotations

import copy
from datetime import datetime

import pytest
from hypothesis import given, settings, strategies as st

from service.engine.advice import compacted_prompt, compaction_price
from tests.support import transcripts as T
from tests.support.engine_runs import PRICES, run


def one_hour(entries: list[dict]) -> list[dict]:
    """The same session written to the 1-hour cache (a subscription's default)."""
    out = copy.deepcopy(entries)
    for e in out:
        usage = (e.get("message") or {}).get("usage") if e.get("type") == "assistant" else None
        if usage and "cache_creation" in usage:
            cc = usage["cache_creation"]
            cc["ephemeral_1h_input_tokens"], cc["ephemeral_5m_input_tokens"] = cc["ephemeral_5m_input_tokens"], 0
    return out


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 40), growth=st.integers(500, 9000), hour=st.booleans())
def test_cold_prices_are_the_prompt_and_its_useful_part_at_the_write_price(n, growth, hour):
    entries = T.growing_session(n, growth=growth, reads=min(n, 3))
    eng, _ = run(one_hour(entries) if hour else entries)
    snap = eng.snapshot()
    cache, price = snap["cache"], PRICES.lookup("claude-sonnet-4-5")[0]  # the segment's rates, as cold_rewrite_usd has them
    p_w = price.p_w1h if hour else price.p_w5
    assert cache["ttl_s"] == (3600 if hour else 300)
    assert cache["cold_rewrite_tokens"] == snap["totalStock"]
    assert cache["cold_rewrite_usd"] == pytest.approx(p_w * snap["totalStock"])
    assert cache["fresh_start_tokens"] == snap["B_default"]
    assert cache["fresh_start_usd"] == pytest.approx(p_w * snap["B_default"], rel=1e-6, abs=p_w)
    assert cache["fresh_start_usd"] <= cache["cold_rewrite_usd"] + 1e-12  # the useful part is part of the prompt


def test_idle_compaction_is_foreseen_on_a_one_hour_cache_for_a_long_prompt_only():
    long_run = T.growing_session(30, growth=7000, floor=20_000)  # ends above 200k tokens
    eng, _ = run(one_hour(long_run))
    snap = eng.snapshot()
    assert snap["totalStock"] >= 200_000
    cache = snap["cache"]
    last_call = epoch(snap["updated_at"])
    assert epoch(cache["idle_compact_at"]) == pytest.approx(last_call + 0.9 * 3600)
    price = PRICES.lookup("claude-sonnet-4-5")[0].for_prompt(snap["totalStock"])
    from service.engine.advice import MovePrices
    rates = MovePrices(p_r=price.p_r, p_w=price.p_w1h, p_w5=price.p_w5, p_out=price.p_out)
    basis = eng.config.advice.bounded()
    summary, compacted = compacted_prompt(snap["totalStock"], snap["floor"], basis.compact_keep)
    assert cache["idle_compact_usd"] == pytest.approx(
        compaction_price(snap["totalStock"], summary, compacted, rates, basis.compact_write_share))
    # the 5-minute cache has no idle compaction; nor has a short prompt on the 1-hour one
    assert run(long_run)[0].snapshot()["cache"]["idle_compact_at"] is None
    short, _ = run(one_hour(T.growing_session(10)))
    assert short.snapshot()["cache"]["idle_compact_at"] is None and short.snapshot()["cache"]["idle_compact_usd"] is None


def test_compactions_by_who_started_them_and_replay_equals_live():
    manual = T.compact(400, pre=60_000, post=9_000)
    manual["compactMetadata"]["trigger"] = "manual"
    entries = (T.growing_session(12) + [manual, T.summary_user(401)] + T.growing_session(5, start=500, prefix="b")
               + T.idle_compaction(1000) + T.growing_session(5, start=5000, prefix="c")
               + T.idle_compaction(9000, precomputed=True) + T.growing_session(3, start=12000, prefix="d")
               + [T.compact(13000)] + T.growing_session(2, start=13100, prefix="e")
               + [T.idle_note(13200)])  # a note after calls: about no compaction
    eng, _ = run(entries)
    assert eng.snapshot()["compactions"] == {"manual": 1, "auto": 1, "idle": 2}
    live = run([])[0]
    for line in T.to_bytes(entries).splitlines():  # line by line, a snapshot after each: the same counts
        live.feed_line(line)
        live.snapshot()
    assert live.snapshot()["compactions"] == eng.snapshot()["compactions"]


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 40), growth=st.integers(500, 9000), hour=st.booleans())
def test_the_cold_caches_move_is_the_advice_with_the_next_call_written(n, growth, hour):
    # The cache notice names `cache.cold_advice`'s move (docs/measurement.md 16): the snapshot's own advice,
    # each move's first call at the write price; the followed schedule takes the same function's move.
    from service.engine.advice import MovePrices, advise
    from service.engine.schedule import break_move

    eng, _ = run(one_hour(T.growing_session(n, growth=growth)) if hour else T.growing_session(n, growth=growth))
    snap = eng.snapshot()
    tier = PRICES.lookup("claude-sonnet-4-5")[0].for_prompt(snap["totalStock"])
    rates = MovePrices(p_r=tier.p_r, p_w=tier.p_w1h if hour else tier.p_w5, p_w5=tier.p_w5, p_out=tier.p_out)
    want = advise(snap["totalStock"], snap["B_default"], snap["floor"], snap["g"], rates, eng.config.advice.bounded(),
                  cold=True)
    got = snap["cache"]["cold_advice"]
    assert got is not None and got["move"] == want["move"]
    assert snap["cache"]["break_move"] == break_move(want)  # the one rule the followed schedule takes
    assert snap["cache"]["break_move"] == ("restart" if want["move"] == "restart" else "continue")
    for key in ("continue_usd", "compact_usd", "restart_usd", "saves_usd"):
        assert got[key] == pytest.approx(want[key], rel=1e-9)
    # the next call rewriting the prompt costs going on more than it costs the restart (a smaller prompt)
    if snap["B_default"] <= snap["totalStock"]:
        warm = snap["advice"]
        assert got["continue_usd"] - warm["continue_usd"] >= got["restart_usd"] - warm["restart_usd"] - 1e-12
