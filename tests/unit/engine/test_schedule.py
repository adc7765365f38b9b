"""The schedules of moves (docs/measurement.md section 14): the dynamic programme against trying every schedule,
and the user who follows every notice against the best one could have picked."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.engine.advice import AdviceBasis, MovePrices, compacted_prompt, compaction_request
from service.engine.schedule import ScheduleCall, ScheduleLedger, reminder_interval

M = 1e-6
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SONNET = MovePrices(p_r=0.3 * M, p_w=3.75 * M, p_w5=3.75 * M, p_out=15 * M)
OPUS = MovePrices(p_r=0.5 * M, p_w=6.25 * M, p_w5=6.25 * M, p_out=25 * M)


def value(calls: list[ScheduleCall], moves: tuple[str, ...], basis: AdviceBasis) -> float:
    """What one schedule saves, written out plainly: each call carries the drop at its carry price; a
    restart drops to the useful stock for its rebuild, a /compact to F + σ for its request and first write."""
    drop, saved = 0.0, 0.0
    for c, move in zip(calls, moves):
        saved += drop * c.carry
        if move == "restart":
            saved -= c.b0 * (c.rates.p_w5 - c.rates.p_r)
            drop = c.stock - c.b0
        elif move == "compact":
            summary, compacted = compacted_prompt(c.stock, c.floor, basis.compact_keep)
            saved -= compaction_request(c.stock - drop, summary, c.rates, basis.compact_write_share)
            saved -= compacted * (c.rates.p_w5 - c.rates.p_r)
            drop = c.stock - compacted
    return saved


def brute(calls: list[ScheduleCall], basis: AdviceBasis, kinds: tuple[str, ...]) -> float:
    return max(value(calls, moves, basis) for moves in itertools.product(kinds, repeat=len(calls)))


@st.composite
def segments(draw: st.DrawFn) -> list[ScheduleCall]:
    """A segment of up to 7 calls: prompts that grow or not, a useful stock that may pass the prompt, misses."""
    n = draw(st.integers(1, 7))
    floor = draw(st.integers(1_000, 30_000))
    stock, b0, t, calls = floor, float(floor), 0.0, []
    for i in range(n):
        stock += draw(st.integers(0, 80_000))
        b0 += draw(st.sampled_from([0, 0, 5_000, 200_000]))
        t += draw(st.sampled_from([5.0, 60.0, 900.0]))
        rates = draw(st.sampled_from([SONNET, OPUS]))
        carry = draw(st.sampled_from([rates.p_r, rates.p_r, rates.p_w5]))
        calls.append(ScheduleCall(100 + i, t, carry, rates, stock, b0, float(floor), 500.0,
                                  carry * stock, rates.p_r, rates.p_w))
    return calls


def fed(calls: list[ScheduleCall], basis: AdviceBasis) -> ScheduleLedger:
    ledger = ScheduleLedger()
    for c in calls:
        ledger.add_call(c, basis)
    return ledger


@SETTINGS
@given(segments(), st.sampled_from([AdviceBasis(), AdviceBasis(compact_keep=0.3, compact_write_share=0.0)]))
def test_the_programme_equals_every_schedule_tried(calls, basis):
    ledger = ScheduleLedger()
    for i, c in enumerate(calls):
        ahead = ledger.figures(c, basis)  # the live view: the call counted as it stands, not added
        ledger.add_call(c, basis)
        got = ledger.figures(None, basis)
        assert got == ahead  # to the bit: what a replay line shows later is what live showed
        so_far = calls[: i + 1]
        assert got.best_usd == pytest.approx(brute(so_far, basis, ("-", "restart", "compact")), rel=1e-9, abs=1e-12)
        assert got.best_restarts_only_usd == pytest.approx(brute(so_far, basis, ("-", "restart")), rel=1e-9,
                                                           abs=1e-12)


@SETTINGS
@given(segments(), st.sampled_from([0.0, 60.0, 600.0]))
def test_following_the_notices_never_beats_the_best_schedule(calls, gap):
    basis = AdviceBasis(notice_gap_s=gap)
    got = fed(calls, basis).figures(None, basis)
    assert got.best_usd >= got.best_restarts_only_usd >= 0
    assert got.best_usd >= got.followed_usd - 1e-12
    assert got.restarts_followed + got.compactions_followed <= len(calls)
    if got.best_usd > 0:
        assert got.restarts_best + got.compactions_best >= 1
    else:
        assert got.restarts_best == got.compactions_best == 0


def test_a_notice_followed_by_hand():
    # Sonnet, floor and useful stock 10,000; the prompt grows by 100,000 a call. The wallet's interval is a
    # restart's worth of rent over the stakes; the rent of call 2 passes it, so the notice comes at call 2
    # and names a restart (the summary would be larger than the rebuild saves over the horizon).
    basis = AdviceBasis(notice_gap_s=0.0)
    calls = [ScheduleCall(i, 10.0 * i, SONNET.p_r, SONNET, 10_000 + 100_000 * (i - 1), 10_000.0, 10_000.0,
                          100_000.0, SONNET.p_r * (10_000 + 100_000 * (i - 1)), SONNET.p_r, SONNET.p_w)
             for i in range(1, 6)]
    got = fed(calls, basis).figures(None, basis)
    # restart after call 2: 100,000 fewer on calls 3, 4 and 5 at $0.30/MTok, less 10,000 x $3.45/MTok
    assert got.restarts_followed >= 1
    assert got.best_usd >= got.followed_usd > 0
    assert got.best_restarts_only_usd >= 3 * 100_000 * 0.3 * M - 10_000 * 3.45 * M - 1e-12


def test_the_notice_gap_holds_the_next_move():
    # Calls 1 s apart: with a gap of 10 minutes, only the first notice of this minute-long segment is acted on
    basis_now, basis_gap = AdviceBasis(notice_gap_s=0.0), AdviceBasis(notice_gap_s=600.0)
    calls = [ScheduleCall(i, float(i), SONNET.p_r, SONNET, 20_000 + 60_000 * i, 20_000.0, 20_000.0, 60_000.0,
                          SONNET.p_r * (20_000 + 60_000 * i), SONNET.p_r, SONNET.p_w) for i in range(1, 60)]
    eager = fed(calls, basis_now).figures(None, basis_now)
    held = fed(calls, basis_gap).figures(None, basis_gap)
    assert eager.restarts_followed + eager.compactions_followed > 1
    assert held.restarts_followed + held.compactions_followed == 1


def test_the_interval_is_shorter_at_higher_stakes():
    low = reminder_interval(3.75 * M, 0.3 * M, 20_000, 500, 25_000)
    high = reminder_interval(3.75 * M, 0.3 * M, 20_000, 500, 400_000)
    assert 0 < high < low
    assert reminder_interval(3.75 * M, 0.3 * M, 0, 500, 25_000) == 0.0  # no useful stock: no wallet
