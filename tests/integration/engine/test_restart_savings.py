"""What one restart would have saved (docs/measurement.md section 14), counted by hand and by brute force.

Prices here are read from resources/prices.json as the file gives them (USD per million tokens),
not through the engine's price table, so the expected figures are computed independently.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from resources import resource_path
from service.engine.restart_savings import RestartLedger, restart_now
from tests.support import transcripts as T
from tests.support.corpus import ROOT, scenario_session
from tests.support.engine_runs import PRICES, calls_of, run
from tests.support.harness import service_env

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TABLE = json.loads(Path(resource_path("prices.json")).read_text(encoding="utf-8"))["models"]
M = 1e-6


def rates(model: str, prompt: int) -> tuple[float, float]:
    """(cache read, 5-minute cache write) in USD per token of a call, long-context tier included."""
    (entry,) = [v for k, v in TABLE.items() if model == k or model in v.get("aliases", ())]
    lc = entry.get("long_context")
    if lc and prompt > lc["threshold_tokens"]:
        entry = lc
    return entry["cache_read"] * M, entry["cache_write_5m"] * M


def carried_at(line: dict) -> float:
    """What a replay line's call paid per prompt token it carried: its read price where it read at least
    half its prompt from the cache (`L`), else the 5-minute write price (these transcripts write 5-minute)."""
    p_r, p_w5 = rates(line["model"], line["totalStock"])
    return p_r if 2 * line["L"] >= line["totalStock"] else p_w5


def brute_force(rows: list[tuple], first_reminder: int | None = None) -> dict:
    """Every restart at every call tried against the segment's whole list: O(n^2) and plain.

    rows: (call, read price, write price, totalStock, B_default[, carry price]) in order; each later call
    carries the dropped tokens at its carry price (its read price when not given).
    """
    best, best_call, first = 0.0, None, 0.0
    for i, (call, p_r, p_w5, stock, b, *_) in enumerate(rows):
        saved = sum((stock - b) * later[-1] for later in rows[i + 1:]) - b * (p_w5 - p_r)
        if saved > best:
            best, best_call = saved, call
        if call == first_reminder:
            first = saved
    return {"best_usd": best, "best_call": best_call, "first_reminder_usd": first}


def segment(stocks: list[int], models: list[str] | None = None) -> list[dict]:
    """A segment whose calls have these prompts (the first is the floor, nothing read: B_default = floor)."""
    models = models or ["claude-sonnet-4-5"] * len(stocks)
    entries, prev, prev_model = [T.prompt("go", 0)], 0, None
    for i, (stock, model) in enumerate(zip(stocks, models)):
        cr = prev if model == prev_model else 0
        entries.append(T.call(f"m{i}", 10.0 * (i + 1), inn=0, cw5=stock - cr, cr=cr, out=10, model=model))
        prev, prev_model = stock, model
    return entries


def profile_of(entries: list[dict]) -> dict:
    _, events = run(entries)
    (profile,) = events[-1]["segments"]
    return profile["restart_savings"]


# ---- by hand ----------------------------------------------------------------------------------------

def test_a_growing_segment_by_hand():
    # Sonnet 4.5: reads $0.30/MTok, 5-minute writes $3.75/MTok. B_default = floor = 10,000 throughout,
    # so a restart rebuilds 10,000 tokens for 10,000 x $3.45/MTok = $0.0345 more than reading them.
    # Restart after call 2: 100,000 fewer tokens on calls 3, 4, 5: 3 x 100,000 x $0.30/MTok = $0.09 -> $0.0555
    # after call 3: 2 x 140,000 x 0.3e-6 = $0.084 -> $0.0495; after call 4: 180,000 x 0.3e-6 -> $0.0195
    got = profile_of(segment([10_000, 110_000, 150_000, 190_000, 199_000]))
    assert got["best_call"] == 2
    assert got["best_usd"] == pytest.approx(0.0555, abs=1e-12)
    # the jump to 110,000 pays a restart's worth of rent at once: the lamp's reminder comes at call 2
    assert got["first_reminder_call"] == 2 and got["calls_after_reminder"] == 3
    assert got["first_reminder_usd"] == pytest.approx(0.0555, abs=1e-12)


def test_no_restart_saves_on_a_short_segment():
    # after call 2: 20,000 x 0.3e-6 = $0.006 against a $0.0345 rebuild: every restart loses
    got = profile_of(segment([10_000, 20_000, 30_000]))
    assert got["best_usd"] == 0.0 and got["best_call"] is None


def test_later_calls_at_their_long_context_tier():
    # Sonnet 4.5 over 200K prompt tokens: reads $0.60/MTok, writes $7.50/MTok (the whole request).
    # After call 2 (150,000, standard tier): 140,000 fewer on calls 3 and 4, both long-context:
    #   2 x 140,000 x 0.6e-6 = $0.168, minus 10,000 x (3.75 - 0.30)e-6 = $0.0345 -> $0.1335
    # After call 3 (250,000, long tier): 240,000 x 0.6e-6 = $0.144 minus 10,000 x (7.5 - 0.6)e-6 = $0.069 -> $0.075
    got = profile_of(segment([10_000, 150_000, 250_000, 260_000]))
    assert got["best_call"] == 2
    assert got["best_usd"] == pytest.approx(0.1335, abs=1e-12)


def test_a_model_switch_inside_the_segment():
    # Calls 1-2 on Sonnet 4.5, 3-4 on Opus 4.5 (reads $0.50/MTok, writes $6.25/MTok); no reset.
    # The switch is a cache miss: call 3 writes its whole prompt, so what it would not have carried is
    # priced at Opus's write price, call 4's at its read price (it read the cache).
    # After call 2: 90,000 x 6.25e-6 + 90,000 x 0.5e-6 = $0.6075, rebuild at Sonnet's prices: $0.0345 -> $0.573
    # After call 3: 110,000 x 0.5e-6 = $0.055 minus 10,000 x (6.25 - 0.5)e-6 = $0.0575 -> -$0.0025
    got = profile_of(segment([10_000, 100_000, 120_000, 130_000],
                             ["claude-sonnet-4-5", "claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-4-5"]))
    assert got["best_call"] == 2
    assert got["best_usd"] == pytest.approx(0.573, abs=1e-12)


def test_the_first_reminder_is_signed_and_counted_from_its_own_call():
    ledger = RestartLedger()
    # (call, read, write, stock, B_default): the useful stock grows at call 3 (a file read)
    for row in [(7, 0.3 * M, 3.75 * M, 10_000, 10_000), (8, 0.3 * M, 3.75 * M, 60_000, 10_000),
                (9, 0.3 * M, 3.75 * M, 90_000, 40_000), (10, 0.3 * M, 3.75 * M, 95_000, 40_000)]:
        ledger.add_call(*row)
        if row[0] == 9:
            ledger.mark_reminder(9)
            ledger.mark_reminder(10)  # a second reminder is not the lamp's first advice
    got = ledger.figures()
    # after call 9: 50,000 fewer on call 10 = $0.015, rebuild 40,000 x 3.45e-6 = $0.138 -> -$0.123
    assert got.first_reminder_call == 9 and got.calls_after_reminder == 1
    assert got.first_reminder_usd == pytest.approx(-0.123, abs=1e-12)
    # after call 8: 50,000 fewer on calls 9, 10 = $0.03, rebuild $0.0345 -> -$0.0045: nothing saves
    assert got.best_usd == 0.0 and got.best_call is None
    now = restart_now(95_000, 40_000, 0.3 * M, 3.75 * M, calls_ahead=20)
    # a restart after call 10: 55,000 fewer on 20 calls = $0.33, minus $0.138 -> $0.192; pays back in 8.36 calls
    assert now["saving_usd"] == pytest.approx(0.192, abs=1e-12)
    assert now["payback_calls"] == pytest.approx(0.138 / (55_000 * 0.3 * M))


def test_the_issues_worked_example():
    """Issue 29: an Opus 5.5 segment of 107 calls whose first reminder came at call 57, with 334,793
    tokens in context, 173,730 of them useful: 50 later calls x 161,063 tokens x $0.20/MTok = $1.61,
    one rebuild of 173,730 tokens at $5.00 - $0.20 per MTok = $0.83: about $0.78 saved."""
    p_r, p_w5 = rates("claude-opus-5-5", 334_793)
    assert (p_r, p_w5) == (0.2 * M, 5.0 * M)
    ledger = RestartLedger()
    for call in range(1, 108):
        stock, useful = (334_793, 173_730) if call == 57 else (150_000, 150_000)
        ledger.add_call(call, p_r, p_w5, stock, useful)
    ledger.mark_reminder(57)
    got = ledger.figures()
    assert got.first_reminder_usd == pytest.approx(50 * 161_063 * 0.2e-6 - 173_730 * 4.8e-6, abs=1e-12)
    assert round(got.first_reminder_usd, 2) == 0.78 and got.calls_after_reminder == 50


# ---- properties -------------------------------------------------------------------------------------

row = st.tuples(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.6, 1.5]), st.floats(0, 20),
                st.integers(0, 2_000_000), st.integers(0, 2_000_000))


@settings(SETTINGS, max_examples=300)
@given(st.lists(row, min_size=1, max_size=60), st.integers(0, 80))
def test_the_envelope_equals_brute_force_at_every_call(plan, reminder_at):
    """Slopes in any order (the useful stock may even exceed the prompt): the Li Chao envelope
    gives, after every call, what trying every restart gives."""
    ledger, rows = RestartLedger(), []
    for i, (p_r, extra_w, stock, b) in enumerate(plan):
        call = 100 + i
        p_r *= M
        p_w5 = p_r + extra_w * M
        carry = p_w5 if stock % 3 == 0 else p_r  # a third of the calls missed the cache
        if i == reminder_at:
            ledger.mark_reminder(call)
        ahead = ledger.figures((call, p_r, p_w5, stock, b, carry))  # the live view: the call counted, not added
        ledger.add_call(call, p_r, p_w5, stock, b, carry)
        rows.append((call, p_r, p_w5, stock, b, carry))
        assert ledger.figures() == ahead  # to the bit: what a replay line shows later is what live showed
        got, want = ledger.figures(), brute_force(rows, 100 + reminder_at if reminder_at <= i else None)
        assert got.best_usd == pytest.approx(want["best_usd"], rel=1e-9, abs=1e-12)
        assert got.first_reminder_usd == pytest.approx(want["first_reminder_usd"], rel=1e-9, abs=1e-12)
        assert got.best_usd >= got.first_reminder_usd - 1e-12
        if got.best_call is not None:  # the call named saves what is claimed
            k = got.best_call - 100
            assert brute_force(rows[k:])["best_usd"] >= 0  # a suffix, tried alone
            mine = sum((rows[k][3] - rows[k][4]) * r[5] for r in rows[k + 1:]) - rows[k][4] * (rows[k][2] - rows[k][1])
            assert mine == pytest.approx(got.best_usd, rel=1e-9, abs=1e-12)


MODELS = ["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "claude-opus-5-5"]
step = st.one_of(st.tuples(st.just("grow"), st.integers(0, 60_000), st.sampled_from(MODELS)),
                 st.tuples(st.just("read"), st.integers(1, 400), st.sampled_from(MODELS)),
                 st.tuples(st.just("compact"), st.just(0), st.just("")))


def realistic(steps: list[tuple], seed: int) -> list[dict]:
    """A session whose prompt holds what it read: each read's text enters the next call's prompt."""
    rnd = random.Random(seed)
    entries, stock, cached, model_before, n, t = [T.prompt("start", 0)], 20_000, 0, None, 0, 0.0
    carried = 0
    for kind, a, model in steps:
        t += 7
        if kind == "compact":
            entries += [T.compact(t), T.summary_user(t + 1)]
            stock, cached, model_before, carried = 20_000 + rnd.randint(0, 5000), 0, None, 0
            continue
        n += 1
        stock += carried + (a if kind == "grow" else 500)
        carried = 0
        cr = cached if model == model_before else 0
        tools = [T.tool(f"t{n}", "Read", file_path=f"{T.CWD}/f{n}.py")] if kind == "read" else []
        entries.append(T.call(f"m{n}", t, inn=3, cw5=stock - cr - 3, cr=cr, out=20, model=model, tools=tools))
        if tools:
            entries.append(T.result(f"t{n}", "x = 1\n" * a, t + 1))
            carried = 10 * a  # at least the result's tokens
        cached, model_before = stock, model
    return entries


@SETTINGS
@given(st.lists(step, min_size=1, max_size=40), st.integers(0, 1000))
def test_engine_figures_against_brute_force_and_the_rent(steps, seed):
    """From the engine's own replay lines: after every call, the snapshot's figures equal brute force
    over the segment so far; the best restart saves at least the first reminder's; and no restart
    saves more than the rent its segment's remaining calls paid (dead weight priced at their bills)."""
    _, events = run(realistic(steps, seed))
    by_segment: dict[int, list[dict]] = {}
    reminders: dict[int, int] = {}  # the first reminder of each segment (its line follows its call's line)
    for e in events:
        if e["event"] == "reminder":
            reminders.setdefault(e["segment"], e["call"])
    for e in calls_of(events):
        rows = by_segment.setdefault(e["segment"], [])
        rows.append(e)
        plain = [(c["calls"], *rates(c["model"], c["totalStock"]), c["totalStock"], c["B_default"], carried_at(c))
                 for c in rows]
        want = brute_force(plain, reminders.get(e["segment"]))
        got = e["restart_savings"]
        assert got["best_usd"] == pytest.approx(want["best_usd"], rel=1e-9, abs=1e-12)
        assert got["first_reminder_usd"] == pytest.approx(want["first_reminder_usd"], rel=1e-9, abs=1e-12)
        assert got["best_usd"] >= got["first_reminder_usd"] - 1e-12
    for rows in by_segment.values():
        for i, c in enumerate(rows):
            p_r, p_w5 = rates(c["model"], c["totalStock"])
            b = c["B_default"]
            saved = sum((c["totalStock"] - b) * carried_at(r) for r in rows[i + 1:]) \
                - b * (p_w5 - p_r)
            assert saved <= sum(r["bp"] for r in rows[i + 1:]) + 1e-12
    profiles = events[-1]["segments"]
    for p in profiles:
        last = by_segment[p["segment"]][-1]["restart_savings"]
        assert p["restart_savings"] == last


# ---- the project's own long session, recomputed from `ctxlamp replay --jsonl` ---------------------------

def compact_at_first_reminder(lines: list[dict], first: int | None) -> float:
    """A /compact after the first reminder's call (measurement.md 15, the default basis: the summary 6 % of the
    prompt, the request's prompt all written): later calls read S - C fewer tokens, less the compaction's price."""
    for i, c in enumerate(lines):
        if c["calls"] != first:
            continue
        (entry,) = [v for k, v in TABLE.items() if c["model"] == k or c["model"] in v.get("aliases", ())]
        p_r, p_w5 = rates(c["model"], c["totalStock"])
        s, f = c["totalStock"], c["floor"]
        summary = min(0.06 * s, s - f)
        price = s * p_w5 + summary * entry["output"] * M + (f + summary) * (p_w5 - p_r)
        return (s - f - summary) * sum(carried_at(r) for r in lines[i + 1:]) - price
    return 0.0


def recomputed(events: list[dict]) -> dict[int, dict]:
    """Each segment's figures from the replay's call lines and reminder lines alone, by brute force."""
    rows: dict[int, list[tuple]] = {}
    lines: dict[int, list[dict]] = {}
    first: dict[int, int] = {}
    for e in events:
        if e["event"] == "call":
            rows.setdefault(e["segment"], []).append(
                (e["calls"], *rates(e["model"], e["totalStock"]), e["totalStock"], e["B_default"], carried_at(e)))
            lines.setdefault(e["segment"], []).append(e)
        elif e["event"] == "reminder":
            first.setdefault(e["segment"], e["call"])
    return {seg: {**brute_force(r, first.get(seg)), "first_reminder_call": first.get(seg),
                  "compact_first_reminder_usd": compact_at_first_reminder(lines[seg], first.get(seg))}
            for seg, r in rows.items()}


@pytest.mark.parametrize("scenario", ["long-session", "model-switch"])
def test_the_fixture_figures_from_replay_lines_and_in_the_report(scenario, tmp_path):
    transcript = scenario_session(scenario)
    proc = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(transcript), "--jsonl"],
                          check=False, capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    want = recomputed(events)
    profiles = {p["segment"]: p["restart_savings"] for p in events[-1]["segments"]}
    assert set(profiles) == set(want)
    for seg, w in want.items():
        got = profiles[seg]
        assert got["first_reminder_call"] == w["first_reminder_call"]
        assert got["best_call"] == w["best_call"]
        assert got["best_usd"] == pytest.approx(w["best_usd"], rel=1e-12, abs=1e-15)
        assert got["first_reminder_usd"] == pytest.approx(w["first_reminder_usd"], rel=1e-12, abs=1e-15)
        assert got["compact_first_reminder_usd"] == pytest.approx(w["compact_first_reminder_usd"], rel=1e-9,
                                                                  abs=1e-15)
    if scenario == "long-session":  # the lamp's advice, and a better restart it did not name
        reminded = [w for w in want.values() if w["first_reminder_call"] is not None]
        assert reminded and all(0 < w["first_reminder_usd"] < w["best_usd"] for w in reminded)

    env = {**os.environ, "CTXLAMP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user"),
           "CLAUDE_CONFIG_DIR": str(transcript.parents[2])}
    report = subprocess.run([sys.executable, "-m", "service.cli", "report", "--json", "--since", "2000-01-01",
                             "--no-service"], check=False, capture_output=True, cwd=ROOT, env=env,
                            timeout=120)
    assert report.returncode == 0, report.stderr
    block = json.loads(report.stdout)["restart_savings"]
    with_reminder = [w for w in want.values() if w["first_reminder_call"] is not None]
    missed = [w["best_usd"] for w in want.values() if w["first_reminder_call"] is None and w["best_usd"] > 0]
    assert block["label"] == "estimated"
    assert block["segments"] == len(want)
    assert block["segments_with_reminders"] == len(with_reminder)
    assert block["first_reminder_usd"] == pytest.approx(sum(w["first_reminder_usd"] for w in with_reminder), abs=1e-9)
    assert block["compact_first_reminder_usd"] == pytest.approx(
        sum(w["compact_first_reminder_usd"] for w in with_reminder), abs=1e-9)
    if scenario == "long-session":  # a compaction there would have cost more than it saved
        assert block["compact_first_reminder_usd"] < 0
    assert block["best_single_usd"] == pytest.approx(sum(w["best_usd"] for w in want.values()), abs=1e-9)
    assert block["missed_usd"] == pytest.approx(sum(missed), abs=1e-9)
    # the rent on dead weight and the reminders of the same segments, as the replay's profiles book them
    assert block["rent_usd"] == pytest.approx(sum(p["rent_usd"] for p in events[-1]["segments"]), abs=1e-9)
    assert block["reminders"] == sum(p["laps"] for p in events[-1]["segments"])
    # the schedules: each segment's best is at least its best single restart and what following the notices
    # saved; the report sums the profiles' own
    schedules = [p["restart_savings"]["schedule"] for p in events[-1]["segments"]]
    for p, sched in zip(events[-1]["segments"], schedules):
        assert sched["best_usd"] >= sched["best_restarts_only_usd"] >= p["restart_savings"]["best_usd"] - 1e-12
        assert sched["best_usd"] >= sched["followed_usd"] - 1e-12
    got = block["schedule"]
    assert got["label"] == "estimated"
    for key in ("best_usd", "best_restarts_only_usd", "followed_usd"):
        assert got[key] == pytest.approx(sum(s[key] for s in schedules), abs=1e-9)
    for key in ("restarts_followed", "restarts_best", "compactions_followed"):
        assert got[key] == sum(s[key] for s in schedules)
    assert got["capture"] == (pytest.approx(got["followed_usd"] / got["best_usd"], abs=1e-6)
                              if got["best_usd"] > 0 else None)
    if scenario == "long-session":  # the notices were followed, and paid
        assert got["restarts_followed"] + got["compactions_followed"] >= 1 and got["followed_usd"] > 0


def test_the_overview_sums_the_demo_segments_and_says_so():
    """The Overview's figures are the segments' own: archived ones by the day they ended, live ones open."""
    from desktop.present import fmt
    from desktop.present.overview import rent_sentence, spend_figures

    demo = ROOT / "resources" / "demo"
    overview = json.loads((demo / "overview.json").read_text())["30"]
    live = json.loads((demo / "status.json").read_text())["sessions"]
    live_keys = {(s["session_id"], s["segment"]) for s in live}
    archived = [p for p in json.loads((demo / "segments.json").read_text())["segments"]
                if (p["session_id"], p["segment"]) not in live_keys]
    since, until = overview["period"]["since"], overview["period"]["until"]
    rows = [p["restart_savings"] for p in archived if since <= p["ended_at"][:10] <= until]
    rows += [s["restart_savings"] for s in live]
    got = overview["restart_savings"]
    assert got["segments"] == len(rows) == overview["rent"]["segments"]
    reminded = [r for r in rows if r["first_reminder_call"] is not None]
    assert got["segments_with_reminders"] == len(reminded) > 0
    assert got["first_reminder_usd"] == pytest.approx(sum(r["first_reminder_usd"] for r in reminded), abs=1e-8)
    assert got["best_single_usd"] == pytest.approx(sum(r["best_usd"] for r in rows), abs=1e-8)
    assert got["missed_usd"] == pytest.approx(sum(r["best_usd"] for r in rows if r not in reminded), abs=1e-8)
    schedules = [r["schedule"] for r in rows]
    followed = sum(s["followed_usd"] for s in schedules)
    best = sum(s["best_usd"] for s in schedules)
    assert got["schedule"]["followed_usd"] == pytest.approx(followed, abs=1e-8)
    assert got["schedule"]["best_usd"] == pytest.approx(best, abs=1e-8) and best >= followed
    tile = [f for f in spend_figures(overview) if f.caption == "Notices save (est.)"]
    assert tile and tile[0].value == fmt.usd(got["schedule"]["followed_usd"])
    sentence = rent_sentence(overview)
    # the Overview leads with what following every notice saved, against the best in hindsight
    assert sentence.startswith(f"Following every notice would have saved {fmt.usd(followed)}, "
                               f"{got['schedule']['capture'] * 100:.0f} % of the best in hindsight")
    # one figure for following the notices (decision 458): the best single restart beside it, no restart
    # "at its notice" with a share of its own; every share in one form ("44 %"), no "first" notice
    assert f"The best single restart in hindsight would have saved {fmt.usd(got['best_single_usd'])}." in sentence
    assert "at its notice" not in sentence and "% of it" not in sentence, sentence
    assert not re.search(r"\d%", sentence) and "first notice" not in sentence, sentence


def test_the_store_keeps_a_profiles_restart_figures_and_refuses_wrong_types(tmp_path):
    from service.store import Store

    _, events = run(segment([10_000, 110_000, 150_000, 190_000, 199_000]))
    (profile,) = events[-1]["segments"]
    store = Store(tmp_path / "ctxlamp.db")
    try:
        store.sessions.archive_profile(profile)
        store.sessions.archive_profile({**profile, "segment": 1, "restart_savings": {"best_usd": "a lot"}})  # refused
        store.sessions.archive_profile({**profile, "segment": 2, "restart_savings": None})  # an older engine's: kept, none
        rows = {p["segment"]: p for p in store.sessions.segments(profile["session_id"])}
    finally:
        store.close()
    assert set(rows) == {0, 2}
    assert rows[0]["restart_savings"] == profile["restart_savings"]
    assert rows[2]["restart_savings"] is None


def test_history_shows_each_parts_restart_estimates():
    from desktop.present.history import SEGMENT_COLUMNS, segment_rows

    _, events = run(segment([10_000, 110_000, 150_000, 190_000, 199_000]))
    (profile,) = events[-1]["segments"]
    older = {k: v for k, v in profile.items() if k != "restart_savings"}  # archived before the figures existed
    quiet = {**profile, "restart_savings": {"first_reminder_call": None, "first_reminder_usd": 0.0,
                                            "best_call": None, "best_usd": 0.0, "calls_after_reminder": None}}
    cols = [k for k, _ in SEGMENT_COLUMNS]
    first, best = cols.index("restart_first"), cols.index("restart_best")
    rows = segment_rows([profile, older, quiet])
    assert (rows[0][first], rows[0][best]) == ("$0.06, call 2", "$0.06, call 2")  # $0.0555 to the cent
    assert (rows[1][first], rows[1][best]) == ("–", "–")
    assert (rows[2][first], rows[2][best]) == ("no notice", "none saves")


def test_the_reminder_says_what_a_restart_now_would_save_over_the_usual_run(tmp_path):
    """A real service with a History: each reminder carries the estimate over the median run after a
    reminder of the archived segments, priced from the snapshot published just before it."""
    import threading

    from service.client.api import ApiClient
    from service.store import Store
    from tests.support.harness import wait_for
    from tests.support.service_proc import Svc

    home, claude = tmp_path / "home", tmp_path / "claude"
    (claude / "projects" / "-p").mkdir(parents=True)
    home.mkdir()
    store = Store(home / "ctxlamp.db")
    try:  # this user's History: runs of 4, 10 and 30 calls after a first reminder, and a part without one
        for seg, after in enumerate([4, 10, 30, None]):
            store.sessions.archive_profile({"session_id": "old", "segment": seg, "started_at": "2026-11-01T09:00:00Z",
                                   "ended_at": "2026-11-01T10:00:00Z", "calls": 40, "path_totals": {},
                                   "restart_savings": {"first_reminder_call": None if after is None else 5,
                                                       "first_reminder_usd": 0.0, "best_call": None, "best_usd": 0.0,
                                                       "calls_after_reminder": after}})
    finally:
        store.close()
    s = Svc(home, claude).start()
    try:
        got: list = []
        client = ApiClient(s.info)

        def read() -> None:
            with contextlib.suppress(Exception):  # the stream ends with the service
                got.extend(client.events())

        threading.Thread(target=read, daemon=True).start()
        wait_for(lambda: any(k == "service" for k, _ in got), what="SSE stream to open")
        transcript = scenario_session("long-session")
        (claude / "projects" / "-p" / transcript.name).write_bytes(transcript.read_bytes())
        def three() -> list[int] | None:  # the three reminders of the replay
            at = [i for i, (k, _) in enumerate(list(got)) if k == "reminder"]
            return at if len(at) == 3 else None

        reminders = wait_for(three, what="the reminders on SSE")
    finally:
        s.stop()
    # Each reminder is priced with the snapshot its read ended on (a big write is read in slices, so that
    # may be a snapshot never published): the estimate must be a call's state of the replay, over 10 calls.
    proc = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(transcript), "--jsonl"],
                          check=False, capture_output=True, cwd=ROOT, timeout=120)
    states = {(e["totalStock"], e["B_default"]): e["model"] for e in map(json.loads, proc.stdout.splitlines())
              if e["event"] == "call"}
    assert len(reminders) == 3
    for i in reminders:
        now = got[i][1]["restart_now"]
        assert now["label"] == "estimated" and now["calls_ahead"] == 10.0 and now["history_segments"] == 3
        matches = []
        for (stock, b), model in states.items():
            p_r, p_w5 = rates(model, stock)
            per_call, rebuild = (stock - b) * p_r, b * (p_w5 - p_r)
            if now["saving_usd"] == pytest.approx(10 * per_call - rebuild, rel=1e-9) and \
                    now["payback_calls"] == pytest.approx(rebuild / per_call, rel=1e-9):
                matches.append(stock)
        assert matches, now


def test_the_notice_words_the_estimate():
    from desktop.present.coalesce import RENT, notice
    from desktop.present.advice import notice_text

    def body(estimate):
        reminder = {"lap": 1, "restart_usd": 0.5, "payback_calls": 4.2, "rent_usd": 0.6, "restart_now": estimate}
        return notice_text(notice(RENT, "s", 0, reminder)).body.splitlines()[1]

    assert body({"label": "estimated", "calls_ahead": 12.0, "saving_usd": 0.91, "payback_calls": 3.2}) == \
        "Saves about $0.91 if the session runs 12 more calls (estimate)."
    assert body({"calls_ahead": 2.0, "saving_usd": -0.1, "payback_calls": 7.0}) == \
        "Over 2 more calls a restart would not earn its rebuild back (estimate)."
    assert body(None) == "A restart costs $0.50 and pays for itself after 5 calls."  # no History yet: no estimate


def test_the_reports_replay_is_cached_and_skips_files_written_before_the_period(tmp_path):
    import os
    import shutil

    from service.engine_setup.engines import load_prices
    from service.report import restart, scan

    src = scenario_session("long-session")
    path = tmp_path / src.name
    shutil.copyfile(src, path)
    os.utime(path, (1_577_836_800, 1_577_836_800))  # last written on 2020-01-01
    cache = tmp_path / "report-restart.json"
    prices = load_prices()
    assert restart.replayed_segments([str(path)], prices, cache, scan.fingerprint, since="2026-11-01") == []
    assert not cache.exists()  # not replayed at all: nothing to remember
    everything = restart.replayed_segments([str(path)], prices, cache, scan.fingerprint)
    _, events = run([json.loads(line) for line in src.read_text().splitlines()])
    assert [s["restart_savings"] for s in everything] == [p["restart_savings"] for p in events[-1]["segments"]]
    cached = json.loads(cache.read_text())["files"][str(path)]
    assert cached["fp"] == scan.fingerprint(str(path)) and cached["segments"] == everything
    # a file the cache holds is served from it, the period filter or not
    assert restart.replayed_segments([str(path)], prices, cache, scan.fingerprint, since="2026-11-01") == everything


def test_lines_that_tie_all_the_way_down_are_all_kept():
    """Equal restarts walk one level deeper each; past the tree's depth they are kept at the leaf,
    and the earliest call still wins the tie."""
    from service.engine.restart_savings import MAX_DEPTH, Envelope, Line

    envelope = Envelope()
    lines = [Line(call, 2.0, -1.0, 0.0, 0.0) for call in range(1, MAX_DEPTH + 20)]
    for line in lines:
        envelope.add(line)
    node, depth = envelope.root, 0
    while node.right is not None:  # the equal lines went right, one level each
        node, depth = node.right, depth + 1
    assert depth == MAX_DEPTH and len(node.kept) == len(lines) - MAX_DEPTH - 1
    p = envelope.width * 0.999  # in the domain, on the right edge: the walk ends at that leaf
    assert envelope.best(p).call == 1
    better = Line(999, 3.0, -1.0, 0.0, 0.0)  # steeper: wins everywhere past 0
    envelope.add(better)
    assert envelope.best(p) is better and envelope.best(0.0).call == 1  # at 0 all tie at -1
    last = Line(1000, 3.0, -1.0, 0.0, 0.0)  # ties with `better` everywhere: the earlier call wins
    envelope.add(last)
    assert envelope.best(p) is better


def test_the_services_report_sums_its_own_profiles_to_the_replays_figures(tmp_path):
    """With a service running, `report --json` takes what restarting would have saved from the engine's own
    record (the segments the service archived, its live sessions) instead of replaying every transcript
    again (decision 200): the figures are the replay's."""
    import time

    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    transcript = scenario_session("long-session")
    home = tmp_path / "home"
    home.mkdir()
    env = service_env(home, transcript.parents[2], HOME=str(tmp_path / "user"))
    replayed = subprocess.run([sys.executable, "-m", "service.cli", "report", "--json", "--no-service",
                               "--no-cache"], check=True, capture_output=True, cwd=ROOT, env=env, timeout=120)
    want = json.loads(replayed.stdout)["restart_savings"]
    assert want["segments"] >= 1 and want["segments_with_reminders"] >= 1
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info, timeout=30)
        deadline = time.monotonic() + 60
        while client.get("/api/v1/status")["service"]["scan"]["state"] != "idle":
            assert time.monotonic() < deadline, "the service's history scan did not finish"
            time.sleep(0.1)
        status, doc = client.exchange("GET", "/api/v1/report")
        assert status == 200
        got = doc["restart_savings"]
        via_cli = json.loads(subprocess.run([sys.executable, "-m", "service.cli", "report", "--json"], check=True,
                                            capture_output=True, cwd=ROOT, env=env, timeout=120).stdout)
    assert via_cli["restart_savings"] == got
    for key in ("segments", "segments_with_reminders", "missed_segments", "label", "definition"):
        assert got[key] == want[key], key
    for key in ("first_reminder_usd", "best_single_usd", "missed_usd"):
        assert got[key] == pytest.approx(want[key], abs=1e-9), key
    assert not (home / "cache" / "report-restart.json").exists()  # nothing was replayed for it


def _shape(node) -> object:
    """A tree as nested tuples: each node's line, the lines kept at it, and its two subtrees."""
    return None if node is None else (node.line, tuple(node.kept), _shape(node.left), _shape(node.right))


@SETTINGS
@given(st.lists(st.tuples(st.floats(0, 1e-5), st.floats(-2e6, 2e6), st.floats(0, 1e3)), min_size=1, max_size=80),
       st.floats(0, 1))
def test_an_envelope_read_once_is_the_one_read_after_every_call(rows, at):
    """The report's replay reads a segment's envelope once, at its end; the live service after every call.
    Placing the lines when the tree is read gives both the same tree, node for node, so the same answers."""
    from service.engine.restart_savings import Envelope, Line

    live, replay, p_sum = Envelope(), Envelope(), 0.0
    for call, (read_price, slope, rebuild) in enumerate(rows, 1):
        p_sum += read_price
        line = Line(call, slope, -slope * p_sum - rebuild, p_sum, rebuild)
        live.add(line)
        replay.add(line)
        assert live.root is not None  # read now: its lines placed as they come
    assert replay.width == live.width
    assert _shape(replay.root) == _shape(live.root)
    for p in (p_sum * at, p_sum, p_sum * 2 * at, replay.width * 2):
        assert replay.best(p) is live.best(p)


# long runs on one model, now and then a switch or a /compact: segments that raise reminders
long_step = st.one_of(st.tuples(st.sampled_from(["grow", "read", "read"]), st.integers(1, 400),
                                st.just("claude-sonnet-4-5")), step)


@SETTINGS
@given(st.lists(long_step, min_size=30, max_size=80), st.integers(0, 1000))
def test_the_reports_lean_replay_keeps_the_full_replays_figures(steps, seed):
    """The report's replay (an engine that keeps no reminder records, no burn-rate window, no snapshot)
    gives each segment exactly what the full replay's profile says of it, reminders and laps included."""
    from service.engine_setup.engines import new_engine
    from service.report.restart import KEPT

    entries = realistic(steps, seed)
    full, _ = run(entries)
    lean, _ = run(entries, engine=new_engine("/tmp/session.jsonl", PRICES, full_events=False, call_rows=False,
                                              restart_only=True))
    assert lean.profiles == [{k: p.get(k) for k in KEPT} for p in full.profiles]
    assume(any(p["laps"] for p in full.profiles))  # the examples that count: a reminder was raised
