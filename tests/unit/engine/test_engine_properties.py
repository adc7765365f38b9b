"""The engine's guarantees (docs/measurement.md), as hypothesis properties."""
from __future__ import annotations

import math
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.engine import EngineConfig
from service.engine_setup.engines import new_engine
from tests.support.engine_runs import PRICES, calls_of, run
from tests.support import transcripts as T

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# A session as a list of steps: grow, read a file, compact, prompt.
step = st.one_of(
    st.tuples(st.just("call"), st.integers(0, 9000), st.integers(1, 400)),
    st.tuples(st.just("read"), st.integers(0, 5), st.integers(1, 60)),
    st.tuples(st.just("prompt"), st.just(0), st.just(0)),
    st.tuples(st.just("compact"), st.just(0), st.just(0)),
)


def build(steps, model="claude-sonnet-4-5", revisions=False, seed=0):
    rnd = random.Random(seed)
    entries = [T.prompt("start", 0)]
    stock, prev_stock, t, n = 20_000, 0, 0.0, 0
    for kind, a, b in steps:
        t += 7
        if kind == "call":
            n += 1
            stock += a
            cr = min(prev_stock, stock)
            entry = T.call(f"m{n}", t, inn=3, cw5=max(0, stock - cr - 3), cr=cr, out=b, model=model)
            if revisions:  # Claude Code writes one line per content block, output growing
                for part in sorted(rnd.sample(range(1, b + 1), k=min(3, b))):
                    early = T.call(f"m{n}", t, inn=3, cw5=max(0, stock - cr - 3), cr=cr, out=part, model=model)
                    entries.append(early)
            entries.append(entry)
            prev_stock = stock
        elif kind == "read":
            n += 1
            tid = f"t{n}"
            entries.append(T.call(f"m{n}", t, inn=3, cw5=max(0, stock - prev_stock - 3), cr=prev_stock, out=20,
                                  model=model, tools=[T.tool(tid, "Read", file_path=f"{T.CWD}/f{a}.py")]))
            entries.append(T.result(tid, "x = 1\n" * b, t + 1))
            prev_stock = stock
        elif kind == "prompt":
            entries.append(T.prompt(f"next {t}", t))
        else:
            entries.append(T.compact(t))
            stock, prev_stock = 20_000, 0
    return entries


sessions = st.lists(step, min_size=1, max_size=40)


@SETTINGS
@given(sessions, st.integers(0, 1000))
def test_folding_keeps_highest_revision_and_never_opens_a_segment(steps, seed):
    plain, folded = build(steps), build(steps, revisions=True, seed=seed)
    _, ev_plain = run(plain)
    _, ev_folded = run(folded)
    assert [e["key"] for e in calls_of(ev_plain)] == [e["key"] for e in calls_of(ev_folded)]
    resets = sum(1 for e in plain if e.get("subtype") == "compact_boundary")
    assert sum(1 for e in ev_folded if e["event"] == "reset") == resets
    assert ev_plain[-1]["status"]["spend"] == ev_folded[-1]["status"]["spend"]
    assert [c["totalStock"] for c in calls_of(ev_plain)] == [c["totalStock"] for c in calls_of(ev_folded)]


def test_a_late_revision_tops_rent_up_in_place_and_never_reduces_it():
    entries = T.growing_session(20)
    late_low = T.call("m5", 55, inn=1, cw5=1, cr=1, out=1)  # lower total: ignored
    eng, ev = run(entries + [late_low])
    eng2, ev2 = run(entries)
    assert ev[-1]["status"]["bill_cycle_usd"] == ev2[-1]["status"]["bill_cycle_usd"]
    assert ev[-1]["status"]["calls"] == 20


@SETTINGS
@given(sessions)
def test_segment_isolation_resets_state_but_keeps_turns(steps):
    entries = build(steps) + [T.prompt("announced before the reset", 9000), T.compact(9001),
                              T.summary_user(9002), T.call("after", 9010, inn=3, cw5=30_000, out=5)]
    eng, ev = run(entries)
    last = calls_of(ev)[-1]
    turns, announced = 0, False  # a turn opens at the first call after one or more prompts
    for e in entries:
        if e["type"] == "user" and isinstance(e["message"]["content"], str) and not e.get("isCompactSummary"):
            announced = True
        elif e["type"] == "assistant" and announced:
            turns, announced = turns + 1, False
    assert last["turns"] == turns  # the turn announced before the reset opened on its far side
    assert last["g"] == 500.0
    assert last["D"] == 30_003  # nothing of the new segment is confirmed as cache reads yet
    assert last["bill_cycle_usd"] == 0.0 and last["wallet_phase"] == 0.0 and last["laps"] == 0
    assert last["floor"] == last["totalStock"] == 30_003
    assert last["B_default"] == 30_003  # B rebuilt from the first call after the reset, no paths carried


@SETTINGS
@given(st.floats(0.5, 2.0), st.integers(1, 5))
def test_token_at_ingestion_ratio_change_leaves_earlier_contributions_alone(new_ratio, k):
    cfg = EngineConfig(ratios={"sonnet": 1.0})
    eng = new_engine("/tmp/s.jsonl", PRICES, cfg)
    first = build([("read", 0, 30)])
    for line in T.to_bytes(first).splitlines():
        eng.feed_line(line)
    before = {r["path"]: r["tokens"] for r in eng.path_rows()}
    cfg.ratios["sonnet"] = new_ratio
    later = [T.call("z1", 500, inn=3, cw5=100, cr=20_000, out=5,
                    tools=[T.tool("zt", "Read", file_path=f"{T.CWD}/other{k}.py")]),
             T.result("zt", "y = 2\n" * 30, 501)]
    for line in T.to_bytes(later).splitlines():
        eng.feed_line(line)
    after = {r["path"]: r["tokens"] for r in eng.path_rows()}
    assert after[f"{T.CWD}/f0.py"] == before[f"{T.CWD}/f0.py"]
    raw = eng.counter.count("y = 2\n" * 30)
    assert after[f"{T.CWD}/other{k}.py"] == math.ceil(raw * new_ratio)


@SETTINGS
@given(st.integers(2, 30), st.integers(100, 5000))
def test_settlement_deferred_balance_retires_as_L_catches_up(n_reads, size):
    entries = [T.prompt("go", 0), T.call("c0", 1, inn=3, cw5=20_000, out=5)]
    stock = 20_003
    for i in range(n_reads):
        tid = f"r{i}"
        entries.append(T.call(f"c{i + 1}", 2 + i, inn=3, cw5=size, cr=stock, out=5,
                              tools=[T.tool(tid, "Read", file_path=f"{T.CWD}/f{i}.py")]))
        entries.append(T.result(tid, "word " * size, 2.5 + i))
        stock += size + 3
    eng = new_engine("/tmp/s.jsonl", PRICES)
    for line in T.to_bytes(entries).splitlines():
        eng.feed_line(line)
    snap = eng.snapshot()
    assert snap["D"] == max(0, eng.b_all() - snap["L"])
    # the provider confirms everything: a call whose cache read covers all of B retires D
    confirm = T.call("confirm", 999, inn=3, cw5=0, cr=int(eng.b_all()) + 10, out=5)
    eng.feed_line(T.to_bytes([confirm]).strip())
    assert eng.snapshot()["D"] == 0
    eng.finish()
    profile = eng.drain_events()[-1]["segments"][-1]
    assert sum(profile["path_totals"].values()) <= profile["L_peak"] - eng.snapshot()["floor"]


def test_settlement_scales_path_totals_down_to_what_was_confirmed():
    entries = [T.prompt("go", 0), T.call("c0", 1, inn=3, cw5=10_000, out=5,
                                         tools=[T.tool("r", "Read", file_path=f"{T.CWD}/big.py")]),
               T.result("r", "token " * 5000, 2)]
    eng, ev = run(entries)  # never confirmed: L_peak is 0, below the floor
    assert ev[-1]["segments"][0]["path_totals"][f"{T.CWD}/big.py"] == 0


@SETTINGS
@given(sessions, st.data())
def test_sidechain_copies_of_any_entries_change_nothing(steps, data):
    entries = build(steps)
    noisy = T.with_sidechain_copies(entries, data.draw, extra=[T.compact(1), T.prompt("side", 2)])
    _, a = run(entries)
    _, b = run(noisy)
    assert a == b


@SETTINGS
@given(sessions)
def test_public_B_never_exceeds_totalStock(steps):
    _, ev = run(build(steps))
    for c in calls_of(ev):
        assert c["B"] <= c["totalStock"]


@SETTINGS
@given(sessions)
def test_gate_closed_for_unpriced_model(steps):
    _, ev = run(build(steps, model="gpt-unknown"))
    for c in calls_of(ev) + [ev[-1]["status"]]:
        assert c["x"] == 1
        for name in ("u", "pp", "mf", "br", "dhat", "xSweet"):
            assert c[name] is None
        assert c["skeleton"] is None
        assert c["g"] >= 500
        assert c["lamp"]["state"] in ("no_transcript", "insufficient_data")
        assert c["bill_cycle_usd"] == 0 and c["laps"] == 0  # no rent while the gate is closed


def test_gate_opens_on_the_first_call_without_any_file():
    _, ev = run([T.prompt("hi"), T.call("only", 1, inn=3, cw5=15_000, out=5)])
    first = calls_of(ev)[0]
    assert first["B_default"] == first["floor"] == 15_003
    assert first["u"] == 0 and first["skeleton"] is not None


@SETTINGS
@given(sessions)
def test_left_arm_is_never_amber_or_red(steps):
    _, ev = run(build(steps))
    for c in calls_of(ev):
        if c["u"] is not None and c["u"] < 1:
            assert c["lamp"]["colour"] in ("white", "green")
        if c["lamp"]["colour"] in ("amber", "red"):
            assert c["u"] >= 1


@SETTINGS
@given(st.integers(10, 80), st.integers(2000, 20_000))
def test_one_reminder_per_call_stamped_with_the_lap_count(n, growth):
    _, ev = run(T.growing_session(n, growth=growth))
    reminders = [e for e in ev if e["event"] == "reminder"]
    assert len({r["call"] for r in reminders}) == len(reminders)
    laps = [r["lap"] for r in reminders]
    assert laps == sorted(laps) and len(set(laps)) == len(laps)
    final = ev[-1]["status"]
    assert (laps[-1] if laps else 0) == final["laps"]


def test_a_call_crossing_several_laps_raises_one_reminder_with_the_new_count():
    # a huge context over a tiny baseline: the rent of one call covers several restarts
    entries = [T.prompt("go", 0), T.call("a", 1, inn=3, cw5=5000, out=5),
               T.call("b", 2, inn=3, cw5=0, cr=5000, out=5),
               T.call("c", 3, inn=3, cw5=900_000, cr=5000, out=5)]
    _, ev = run(entries)
    reminders = [e for e in ev if e["event"] == "reminder"]
    assert len(reminders) == 1
    assert reminders[0]["lap"] > 1 and reminders[0]["call"] == 3


@SETTINGS
@given(st.integers(15, 50), st.data())
def test_revaluation_never_rewinds_the_phase_nor_withdraws_a_reminder(n, data):
    entries = T.growing_session(n, reads=6)
    cut = data.draw(st.integers(2, len(entries) - 1))
    eng = new_engine("/tmp/s.jsonl", PRICES)
    for line in T.to_bytes(entries[:cut]).splitlines():
        eng.feed_line(line)
    before = eng.snapshot()
    raised = list(eng.reminders)
    eng.set_excluded({r["path"] for r in eng.path_rows()})  # untick every file
    after = eng.snapshot()
    assert after["wallet_phase"] == before["wallet_phase"] and after["laps"] == before["laps"]
    assert eng.reminders == raised
    for line in T.to_bytes(entries[cut:]).splitlines():
        eng.feed_line(line)
    assert eng.reminders[: len(raised)] == raised
    assert eng.snapshot()["laps"] >= before["laps"]
