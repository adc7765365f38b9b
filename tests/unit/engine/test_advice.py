"""The three moves priced at every call (docs/measurement.md section 15), by hand and as properties.

Prices are read from resources/prices.json as the file gives them (USD per million tokens), not
through the engine's price table, so the expected figures are computed independently.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resources import resource_path
from service.engine import EngineConfig, LineSplitter
from service.engine.advice import AdviceBasis
from service.engine_setup.engines import new_engine
from service.report.restart import advice_basis
from tests.support import transcripts as T
from tests.support.engine_runs import PRICES, calls_of, run
from tests.unit.engine.test_engine_properties import build, sessions

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TABLE = json.loads(Path(resource_path("prices.json")).read_text(encoding="utf-8"))["models"]
M = 1e-6
MOVES = ("continue", "compact", "restart")


def rates(model: str, prompt: int) -> dict[str, float]:
    (entry,) = [v for k, v in TABLE.items() if model == k or model in v.get("aliases", ())]
    lc = entry.get("long_context")
    if lc and prompt > lc["threshold_tokens"]:
        entry = lc
    return {"r": entry["cache_read"] * M, "w5": entry["cache_write_5m"] * M, "out": entry["output"] * M}


def by_hand(line: dict, basis: AdviceBasis) -> dict[str, float]:
    """The three prices of measurement.md section 15 from a call line's own figures (5-minute writes)."""
    p = rates(line["model"], line["totalStock"])
    h, g, s, b0, f = basis.horizon_calls, line["g"], line["totalStock"], line["B_default"], line["floor"]

    def carry(x: float) -> float:
        return h * p["r"] * x + p["r"] * g * h * (h - 1) / 2 + h * p["w5"] * g

    summary = min(basis.compact_keep * s, s - f)
    c = f + summary
    w = basis.compact_write_share
    q = s * (w * p["w5"] + (1 - w) * p["r"]) + summary * p["out"] + c * (p["w5"] - p["r"])
    return {"continue": carry(s), "restart": b0 * (p["w5"] - p["r"]) + carry(b0), "compact": q + carry(c),
            "own restart": b0 * (p["w5"] - p["r"]), "own compact": q}


def check_consistent(advice: dict) -> None:
    priced = {m: advice[f"{m}_usd"] for m in MOVES}
    assert advice["label"] == "estimated"
    assert advice["move"] in MOVES
    assert priced[advice["move"]] == min(priced.values())  # the move is the argmin
    assert advice["saves_usd"] == advice["continue_usd"] - priced[advice["move"]]
    assert advice["saves_usd"] >= 0
    if advice["saves_usd"] == 0:
        assert advice["move"] == "continue"  # never a move that saves nothing
    assert isinstance(advice["pays_twice"], bool)
    if advice["move"] == "continue":
        assert advice["pays_twice"] is False


# ---- by hand ----------------------------------------------------------------------------------------

def test_a_long_prompt_with_little_useful_stock_is_advised_to_restart_by_hand():
    # Sonnet 4.5: reads $0.30/MTok, 5-minute writes $3.75/MTok, output $15/MTok. Floor 10,000 (= B0),
    # prompts 10,000 then 110,000: g = 100,000. Over the default 30 calls:
    #   continue - restart = (110,000 - 10,000) x 30 x 0.3e-6 - 10,000 x 3.45e-6 = 0.9 - 0.0345 = $0.8655
    #   compaction: summary min(0.06 x 110,000, 100,000) = 6,600; C = 16,600
    #     q = 110,000 x 3.75e-6 + 6,600 x 15e-6 + 16,600 x 3.45e-6 = 0.4125 + 0.099 + 0.05727 = $0.56877
    #     continue - compact = (110,000 - 16,600) x 30 x 0.3e-6 - q = 0.8406 - 0.56877 = $0.27183
    _, events = run([T.prompt("go", 0), T.call("m1", 1, inn=0, cw5=10_000), T.call("m2", 2, inn=0, cw5=100_000,
                                                                                     cr=10_000)])
    first, last = (c["advice"] for c in calls_of(events))
    assert first["move"] == "continue" and first["saves_usd"] == 0.0  # a fresh segment goes on
    assert last["move"] == "restart" and last["horizon_calls"] == 30
    assert last["continue_usd"] - last["restart_usd"] == pytest.approx(0.8655, abs=1e-12)
    assert last["continue_usd"] - last["compact_usd"] == pytest.approx(0.27183, abs=1e-12)
    assert last["saves_usd"] == pytest.approx(0.8655, abs=1e-12)
    assert last["pays_twice"] and not first["pays_twice"]  # $0.8655 against a $0.0345 rebuild


def test_compact_wins_when_the_useful_stock_is_large_and_the_summary_small():
    # The same prompts, but the segment read a file worth most of the prompt: a restart must rebuild it,
    # a summary of 6 % does not; with the compaction request read from the cache (w = 0) compact is cheapest.
    basis = AdviceBasis(horizon_calls=50, compact_keep=0.02, compact_write_share=0.0)
    entries = [T.prompt("go", 0), T.call("m1", 1, inn=0, cw5=10_000,
                                         tools=[T.tool("t1", "Read", file_path=f"{T.CWD}/big.py")]),
               T.result("t1", "x = 1\n" * 20_000, 1.5), T.call("m2", 2, inn=0, cw5=150_000, cr=10_000)]
    _, events = run(entries, EngineConfig(advice=basis))
    last = calls_of(events)[-1]
    assert last["B_default"] > 100_000
    assert last["advice"]["move"] == "compact" and last["advice"]["horizon_calls"] == 50
    want = by_hand(last, basis)
    for m in MOVES:
        assert last["advice"][f"{m}_usd"] == pytest.approx(want[m], rel=1e-12)


def test_the_basis_comes_from_the_users_history_else_the_defaults():
    def seg(after, keep=None):
        return {"restart_savings": {"first_reminder_call": None if after is None else 3, "first_reminder_usd": 0.0,
                                    "best_call": None, "best_usd": 0.0, "calls_after_reminder": after,
                                    "compaction_keep": keep}}

    basis, sources = advice_basis([seg(4), seg(10, 0.02), seg(40, 0.5), seg(None, 0.04), {"restart_savings": None}])
    assert basis.horizon_calls == 10.0 and basis.compact_keep == 0.04  # medians of (4, 10, 40), (0.02, 0.5, 0.04)
    assert sources == {"horizon": "history", "compact_keep": "history", "miss_share": "default"}
    basis, sources = advice_basis([seg(None)])
    assert basis == AdviceBasis() and sources == {"horizon": "default", "compact_keep": "default",
                                                  "miss_share": "default"}
    assert basis.horizon_calls == 30 and basis.compact_keep == 0.06 and basis.compact_write_share == 1.0
    assert advice_basis([seg(0)])[0].horizon_calls == 1.0  # a run of 0 calls still looks one call ahead
    wild = AdviceBasis(horizon_calls=float("inf"), compact_keep=-3, compact_write_share=9).bounded()
    assert wild == AdviceBasis(horizon_calls=30.0, compact_keep=0.0, compact_write_share=1.0)


def test_a_real_compaction_says_what_it_kept_and_a_compact_at_the_first_reminder_is_priced():
    # the segment after T.compact (preTokens 100,000, postTokens 20,000) kept 0.2 of its prompt
    prompts = [10_000, 110_000, 150_000, 190_000, 199_000]
    entries = [T.prompt("go", 0)]
    prev = 0
    for i, stock in enumerate(prompts):
        entries.append(T.call(f"m{i}", 10.0 * (i + 1), inn=0, cw5=stock - prev, cr=prev, out=10))
        prev = stock
    entries += [T.compact(60), T.summary_user(61), T.call("n1", 62, inn=0, cw5=25_000)]
    _, events = run(entries)
    first, second = (p["restart_savings"] for p in events[-1]["segments"])
    assert first["compaction_keep"] is None and second["compaction_keep"] == pytest.approx(0.2)
    # the reminder came at call 2 (110,000, floor 10,000): C = 10,000 + 6,600 = 16,600, q = $0.56877 (above);
    # calls 3, 4 and 5 then read 93,400 fewer tokens at $0.30/MTok: 3 x 0.02802 - 0.56877 = -$0.48471
    assert first["first_reminder_call"] == 2
    assert first["compact_first_reminder_usd"] == pytest.approx(3 * 93_400 * 0.3e-6 - 0.56877, abs=1e-12)
    assert second["compact_first_reminder_usd"] == 0.0  # no reminder in it


# ---- properties -------------------------------------------------------------------------------------

bases = st.builds(AdviceBasis, st.floats(1, 400), st.floats(0, 1), st.floats(0, 1))


@SETTINGS
@given(sessions, bases)
def test_every_call_line_carries_a_consistent_advice_priced_as_section_15_says(steps, basis):
    _, events = run(build(steps), EngineConfig(advice=basis))
    lines = calls_of(events)
    seen: set[int] = set()
    for line in lines:
        advice = line["advice"]
        check_consistent(advice)
        assert advice["horizon_calls"] == basis.horizon_calls
        want = by_hand(line, basis)
        for m in MOVES:
            assert advice[f"{m}_usd"] == pytest.approx(want[m], rel=1e-9, abs=1e-15)
        if advice["move"] != "continue":  # pays twice: saves its own price again (not asserted at the edge)
            margin = advice["saves_usd"] - want[f"own {advice['move']}"]
            assert advice["pays_twice"] is (margin >= 0) or abs(margin) < 1e-12
        if line["segment"] not in seen:  # a fresh segment goes on
            seen.add(line["segment"])
            assert advice["move"] == "continue"


@SETTINGS
@given(sessions, st.lists(st.integers(1, 4000), min_size=1, max_size=30), bases)
def test_live_in_chunks_with_snapshots_between_equals_replay(steps, cuts, basis):
    """The service reads a growing file in pieces and asks for snapshots between them: every call line
    and the end match a replay of the whole file, to the bit, and so does the snapshot at the end."""
    data = T.to_bytes(build(steps))
    config = EngineConfig(advice=basis)
    whole = new_engine("/tmp/advice.jsonl", PRICES, config)
    for line in data.splitlines():
        whole.feed_line(line)
    live = new_engine("/tmp/advice.jsonl", PRICES, config)
    splitter, pos, asked = LineSplitter(), 0, []
    for cut in cuts + [len(data)]:
        for line in splitter.feed(data[pos:pos + cut]):
            live.feed_line(line)
        asked.append(live.snapshot(with_curve=False)["advice"])  # the status a client reads meanwhile
        pos += cut
    for line in splitter.feed(data[pos:]):
        live.feed_line(line)
    assert whole.snapshot()["advice"] == live.snapshot()["advice"]
    whole.finish()
    live.finish()
    assert json.dumps(whole.drain_events(), sort_keys=True) == json.dumps(live.drain_events(), sort_keys=True)
    for advice in asked:
        if advice is not None:
            check_consistent(advice)


# ---- the project's fixtures -------------------------------------------------------------------------

def test_the_long_session_fixture_is_advised_to_go_on_then_to_restart():
    from tests.support.corpus import scenario_session

    eng = new_engine("/tmp/long.jsonl", PRICES)
    for line in scenario_session("long-session").read_bytes().splitlines():
        eng.feed_line(line)
    eng.finish()
    events = eng.drain_events()
    lines = calls_of(events)
    reminders = [e for e in events if e["event"] == "reminder"]
    assert reminders
    for line in lines:
        check_consistent(line["advice"])
    assert lines[0]["advice"]["move"] == "continue"
    after = [c for c in lines if c["calls"] > reminders[-1]["call"]]
    assert after and all(c["advice"]["move"] in ("compact", "restart") and c["advice"]["saves_usd"] > 0.1
                         for c in after)


def test_expected_misses_price_the_dead_weight_at_the_write_price():
    """A share m of the coming calls miss the cache: each carries its prompt at the write price, so continuing
    costs more by exactly H·m·(p_w − p_r)·S over the prompt read, and a restart saves that much more on the
    dead weight it drops (docs/measurement.md 14-15)."""
    from service.engine.advice import AdviceBasis, MovePrices, advise

    p = MovePrices(p_r=0.3e-6, p_w=3.75e-6, p_w5=3.75e-6, p_out=15e-6)
    plain = advise(150_000, 40_000.0, 20_000.0, 800.0, p, AdviceBasis())
    missing = advise(150_000, 40_000.0, 20_000.0, 800.0, p, AdviceBasis(miss_share=0.1))
    h, extra = 30, 0.1 * (3.75e-6 - 0.3e-6)
    grown = extra * 800.0 * h * (h - 1) / 2
    assert missing["continue_usd"] - plain["continue_usd"] == pytest.approx(h * extra * 150_000 + grown)
    assert missing["restart_usd"] - plain["restart_usd"] == pytest.approx(h * extra * 40_000 + grown)
    assert missing["saves_usd"] > plain["saves_usd"]
    assert AdviceBasis(miss_share=7.0).bounded().miss_share == 1.0


def test_the_basis_learns_the_miss_share_from_the_archived_segments():
    from service.report.restart import advice_basis

    rows = [{"restart_savings": {"calls": 40, "missed_calls": 2}}, {"restart_savings": {"calls": 60, "missed_calls": 8}},
            {"restart_savings": {"best_usd": 0.0}}]  # an older row: no counts, left out
    assert advice_basis(rows)[0].miss_share == 0.0  # two segments are too few to go by
    basis, where = advice_basis(rows * 3)  # six: the share over all their calls
    assert basis.miss_share == pytest.approx(0.1) and where["miss_share"] == "history"
    assert advice_basis([])[0].miss_share == 0.0


# ---- once the cache has gone cold (docs/measurement.md 16) ------------------------------------------

def test_a_cold_cache_prices_each_moves_first_call_at_the_write_price_by_hand():
    # Sonnet 4.5 as above, floor 10,000 (= B0), prompts 10,000 then 14,000: warm, over 30 calls, the dead weight
    # of 4,000 read 30 times ($0.036) does not pay the 10,000 rebuild ($0.0345) twice; going cold, the next call
    # writes what it carries at $3.75/MTok instead of reading it at $0.30:
    #   continue + 14,000 x 3.45e-6 = + $0.0483; restart + 10,000 x 3.45e-6 = + $0.0345
    #   compact: C = 10,000 + min(0.06 x 14,000, 4,000) = 10,840, + 10,840 x 3.45e-6 = + $0.037398
    _, events = run([T.prompt("go", 0), T.call("m1", 1, inn=0, cw5=10_000), T.call("m2", 2, inn=0, cw5=4_000,
                                                                                     cr=10_000)])
    eng_advice = calls_of(events)[-1]["advice"]
    from service.engine.advice import MovePrices, advise

    p = rates("claude-sonnet-4-5", 14_000)
    prices = MovePrices(p_r=p["r"], p_w=p["w5"], p_w5=p["w5"], p_out=p["out"])
    warm = advise(14_000, 10_000.0, 10_000.0, 4_000.0, prices, AdviceBasis())
    cold = advise(14_000, 10_000.0, 10_000.0, 4_000.0, prices, AdviceBasis(), cold=True)
    assert warm == eng_advice  # the same call, the same advice: the engine's is this function's
    assert cold["continue_usd"] - warm["continue_usd"] == pytest.approx(0.0483, abs=1e-12)
    assert cold["restart_usd"] - warm["restart_usd"] == pytest.approx(0.0345, abs=1e-12)
    assert cold["compact_usd"] - warm["compact_usd"] == pytest.approx(0.037398, abs=1e-12)
    check_consistent(cold)
    assert cold["continue_usd"] - cold["restart_usd"] > warm["continue_usd"] - warm["restart_usd"]


@SETTINGS
@given(stock=st.integers(1, 2_000_000), b0=st.integers(1, 2_000_000), floor=st.integers(0, 2_000_000),
       miss=st.sampled_from([0.0, 0.05, 1.0]), hour=st.booleans())
def test_going_cold_never_makes_going_on_look_cheaper_against_a_restart(stock, b0, floor, miss, hour):
    from service.engine.advice import MovePrices, advise

    p = rates("claude-sonnet-4-5", stock)
    prices = MovePrices(p_r=p["r"], p_w=p["w5"] * (1.6 if hour else 1.0), p_w5=p["w5"], p_out=p["out"])
    basis = AdviceBasis(miss_share=miss)
    warm = advise(stock, float(b0), float(min(floor, stock)), 500.0, prices, basis)
    cold = advise(stock, float(b0), float(min(floor, stock)), 500.0, prices, basis, cold=True)
    check_consistent(cold)
    # the rewrite each move adds is its starting prompt at the write price less what it expected to pay
    extra = prices.p_w - (prices.p_r + miss * (prices.p_w - prices.p_r))
    assert cold["continue_usd"] - warm["continue_usd"] == pytest.approx(extra * stock, rel=1e-9, abs=1e-15)
    assert cold["restart_usd"] - warm["restart_usd"] == pytest.approx(extra * b0, rel=1e-9, abs=1e-15)
    if stock >= b0:  # a larger prompt than the useful stock: the cold cache widens the restart's lead
        rounding = 1e-12 * (cold["continue_usd"] + cold["restart_usd"])  # differences of sums of large terms
        assert (cold["continue_usd"] - cold["restart_usd"]) >= (warm["continue_usd"] - warm["restart_usd"]) - rounding
