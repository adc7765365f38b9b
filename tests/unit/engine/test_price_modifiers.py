"""Issue 38, price modifiers: fast mode and US-only inference, per model and dated, in the price table
and in the engine (each call at its own speed and geography; a speed switch is a cache break).

Rates by hand, USD per million tokens, from Anthropic's pages (resources/prices.json names them):
Opus 5.5 standard $4 / $20, cache reads $0.20, 5-minute writes $5; fast mode $8 / $40 (2x);
US-only inference 1.1x on every rate of Claude 4.6 and later models, standard on older ones.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resources import resource_path
from service.engine.prices import PriceTable
from service.engine_setup.engines import load_prices, replay_file
from tests.support import modifiers as M
from tests.support import transcripts as T
from tests.support.engine_runs import calls_of, run

OPUS55 = "claude-opus-5-5"
STANDARD = {"input": 4.0, "output": 20.0, "cache_read": 0.20, "cache_write_5m": 5.0, "cache_write_1h": 8.0}
FIELDS = {"input": "p_in", "output": "p_out", "cache_read": "p_r", "cache_write_5m": "p_w5", "cache_write_1h": "p_w1h"}


def bundled() -> PriceTable:
    return PriceTable.from_json(json.loads(resource_path("prices.json").read_text(encoding="utf-8")))


def per_million(price) -> dict[str, float]:
    return {name: getattr(price, attr) * 1e6 for name, attr in FIELDS.items()}


@pytest.mark.parametrize("speed, geo, factor", [
    ("fast", None, 2.0), (None, "us", 1.1), ("fast", "us", 2.2),
    ("standard", None, 1.0), (None, "global", 1.0), (None, "not_available", 1.0), (None, "", 1.0),
    ("standard", "global", 1.0),
])
def test_fast_mode_and_us_only_multiply_every_rate_and_stack(speed, geo, factor):
    price, how = bundled().lookup_at(OPUS55, "2026-12-01T10:00:00Z", speed, geo)
    assert how == "table" and price.unknown_modifiers == ()
    assert per_million(price) == pytest.approx({k: v * factor for k, v in STANDARD.items()}, rel=1e-12)
    # the label of a fast call prices the same as the speed named apart
    if speed == "fast":
        assert bundled().lookup_at(OPUS55 + "-fast", "2026-12-01T10:00:00Z", None, geo)[0] == price


@pytest.mark.parametrize("model, when, factor", [
    ("claude-opus-4-6", "2026-03-01T12:00:00Z", 6.0),   # $30 / $150 against $5 / $25
    ("claude-opus-4-6", "2026-06-28T23:59:59Z", 6.0),
    ("claude-opus-4-6", "2026-02-06T12:00:00Z", 6.0),   # no start day: a call that says fast ran fast
    ("claude-opus-4-7", "2026-06-01T12:00:00Z", 6.0),
    ("claude-opus-4-8", "2026-10-01T12:00:00Z", 2.0),   # $10 / $50
    ("claude-opus-5", "2026-08-01T12:00:00Z", 2.0),
])
def test_each_model_has_its_own_fast_multiplier_in_its_own_dates(model, when, factor):
    table = bundled()
    standard, _ = table.lookup_at(model, when)
    fast, _ = table.lookup_at(model + "-fast", when)
    assert fast.unknown_modifiers == ()
    assert per_million(fast) == pytest.approx({k: v * factor for k, v in per_million(standard).items()}, rel=1e-12)


@pytest.mark.parametrize("model, when", [
    ("claude-opus-4-6", "2026-06-29T00:00:00Z"),   # fast mode removed from Opus 4.6 that day
    ("claude-opus-4-7", "2026-07-24T00:00:00Z"),
    ("claude-opus-4-8", "2026-11-30T00:00:00Z"),
    ("claude-fable-5-2", "2026-11-20T00:00:00Z"),  # no figure on Anthropic's pages
    ("claude-sonnet-4-5", "2026-11-20T00:00:00Z"),  # never had fast mode
])
def test_a_fast_call_with_no_figure_for_its_day_is_priced_at_standard_and_named(model, when):
    table = bundled()
    fast, _ = table.lookup_at(model + "-fast", when)
    assert per_million(fast) == per_million(table.lookup_at(model, when)[0])
    assert fast.unknown_modifiers == ("speed=fast",)


def test_us_only_is_standard_on_models_before_claude_4_6_and_unknown_values_are_named():
    table = bundled()
    for old in ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5"):
        price, _ = table.lookup(old, geo="us")
        assert price == table.lookup(old)[0]  # documented: no premium, and nothing unknown
    for newer in ("claude-sonnet-4-6", "claude-haiku-5-5", "claude-fable-5-1"):
        assert table.lookup(newer, geo="us")[0].p_out == pytest.approx(table.lookup(newer)[0].p_out * 1.1)
    eu, _ = table.lookup(OPUS55, "turbo", "eu")
    assert per_million(eu) == pytest.approx(STANDARD) and eu.unknown_modifiers == ("speed=turbo", "inference_geo=eu")
    weird, _ = table.lookup(OPUS55, geo={"not": "text"})  # type: ignore[arg-type]  # untrusted transcript field
    assert weird.unknown_modifiers == ("inference_geo=(not text)",)


def test_the_us_multiplier_stacks_with_the_long_context_tier():
    haiku, _ = bundled().lookup("claude-haiku-5-5", geo="us")
    # Haiku 5.5 over 100,000 prompt tokens: $0.50 / $2.50, times 1.1
    long = haiku.for_prompt(150_000)
    assert long.p_in * 1e6 == pytest.approx(0.55) and long.p_out * 1e6 == pytest.approx(2.75)


def test_every_modifier_in_the_table_names_its_source():
    raw = json.loads(resource_path("prices.json").read_text(encoding="utf-8"))
    for mid, entry in raw["models"].items():
        for by_value in entry.get("modifiers", {}).values():
            for periods in by_value.values():
                assert all(p.get("source") for p in periods), mid


def test_a_users_override_replaces_one_modifier_and_keeps_the_others():
    table = bundled().merged({"models": {OPUS55: {"modifiers": {"speed": {"fast": [{"multiplier": 3}]}}}}})
    assert table.lookup(OPUS55 + "-fast")[0].p_in * 1e6 == pytest.approx(12.0)
    assert table.lookup(OPUS55, geo="us")[0].p_in * 1e6 == pytest.approx(4.4)  # the geography's figure stays
    # and a rate override keeps applying under the modifiers
    cheaper = bundled().merged({"models": {OPUS55: {"input": 3}}})
    assert cheaper.lookup(OPUS55 + "-fast")[0].p_in * 1e6 == pytest.approx(6.0)


@pytest.mark.parametrize("mods, message", [
    ({"speed": {"fast": []}}, "non-empty list"),
    ({"speed": {"fast": [{"multiplier": 0}]}}, "above 0"),
    ({"speed": {"fast": [{"multiplier": 1e9}]}}, "at most"),
    ({"speed": {"fast": [{"multiplier": True}]}}, "above 0"),
    ({"speed": {"fast": [{"multiplier": 2, "from": "2026-13-01"}]}}, "must be a day"),
    ({"speed": {"fast": [{"multiplier": 2, "from": "2026-05-01", "until": "2026-04-01"}]}}, "in order"),
    ({"speed": {"fast": [{"multiplier": 2, "until": "2026-05-01"}, {"multiplier": 3, "from": "2026-04-01"}]}},
     "overlapping"),
    ({"speed": {"standard": [{"multiplier": 2}]}}, "not a value that changes"),
    ({"region": {"us": [{"multiplier": 2}]}}, "speed and/or inference_geo"),
    ({"speed": {"fast": [{"multiplier": 2, "factor": 3}]}}, "must be an object of"),
])
def test_a_bad_modifier_is_a_clear_error(mods, message):
    entry = {"input": 2, "output": 10, "cache_read": 0.1, "cache_write_5m": 2.5, "cache_write_1h": 4,
             "context_window": 1_000_000, "modifiers": mods}
    with pytest.raises(ValueError, match=message):
        PriceTable({"claude-opus-9": entry})


# ---- the engine: a real session replayed at fast speed, US-only, both, and with a speed switch ----

def replayed(tmp_path, usage=None, middle=None, models=None, day=None) -> list[dict]:
    path = M.derive(tmp_path, usage, models=models or {M.FIRST: OPUS55, M.MIDDLE: OPUS55}, middle=middle, day=day)
    return list(replay_file(path, load_prices()))


def spent(events) -> float:
    spend = calls_of(events)[-1]["spend"]
    return spend["bill_in_usd"] + spend["bill_out_usd"]


@pytest.mark.parametrize("usage, factor", [
    ({"speed": "fast"}, 2.0), ({"inference_geo": "us"}, 1.1), ({"speed": "fast", "inference_geo": "us"}, 2.2),
    ({"speed": "standard", "inference_geo": "global"}, 1.0), ({"inference_geo": "not_available"}, 1.0),
    ({"speed": None, "inference_geo": None}, 1.0),
])
def test_a_session_costs_its_modifiers_times_the_same_session_at_standard(tmp_path, usage, factor):
    events = replayed(tmp_path, usage)
    by_hand = M.usd(STANDARD)
    assert by_hand == pytest.approx(0.3684926, abs=1e-12)  # 65,074 writes, 192,113 reads, 235 output
    assert spent(events) == pytest.approx(factor * by_hand, rel=1e-12)
    # the rent is the call's own: a fast session's is twice the standard one's, its reminders the same
    standard = replayed(tmp_path / "standard", {})
    mine, theirs = calls_of(events)[-1], calls_of(standard)[-1]
    assert mine["bill_cycle_usd"] == pytest.approx(factor * theirs["bill_cycle_usd"], rel=1e-9)
    assert mine["cache"]["cold_rewrite_usd"] == pytest.approx(factor * theirs["cache"]["cold_rewrite_usd"], rel=1e-12)
    assert (mine["laps"], mine["lamp"]["state"]) == (theirs["laps"], theirs["lamp"]["state"])


def test_a_speed_switch_is_a_cache_break_and_each_stretch_has_its_own_rates(tmp_path):
    events = replayed(tmp_path, middle={"speed": "fast"})
    calls = calls_of(events)
    assert [c["model"] for c in calls] == [OPUS55] * 3 + [OPUS55 + "-fast"] * 3 + [OPUS55] * 2
    middle = M.usd(STANDARD, M.MIDDLE_CALLS)
    assert middle == pytest.approx(0.1768128, abs=1e-12)
    assert spent(events) == pytest.approx(M.usd(STANDARD) + middle, rel=1e-12)  # the fast stretch twice
    # the first fast call wrote the prompt anew (the real CLI's switch did) and restarting is priced fast
    fourth = calls[3]
    assert fourth["cache"]["cold_rewrite_usd"] == pytest.approx(2 * 5.0e-6 * fourth["totalStock"], rel=1e-12)
    assert calls[6]["cache"]["cold_rewrite_usd"] == pytest.approx(5.0e-6 * calls[6]["totalStock"], rel=1e-12)
    profile = events[-1]["segments"][0]
    listed = {m["model"]: m["bill_in_usd"] + m["bill_out_usd"] for m in profile["models"]}
    assert listed == pytest.approx({OPUS55: M.usd(STANDARD) - middle, OPUS55 + "-fast": 2 * middle}, rel=1e-12)


def test_a_fast_call_after_its_models_fast_mode_ended_is_billed_at_standard(tmp_path):
    models = {M.FIRST: "claude-opus-4-8", M.MIDDLE: "claude-opus-4-8"}
    opus48 = {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write_5m": 6.25}
    assert spent(replayed(tmp_path / "a", {"speed": "fast"}, models=models, day="2026-10-01")) == pytest.approx(
        2 * M.usd(opus48), rel=1e-12)
    assert spent(replayed(tmp_path / "b", {"speed": "fast"}, models=models, day="2026-12-01")) == pytest.approx(
        M.usd(opus48), rel=1e-12)


# ---- the property: a segment's bill is the sum of its calls, each priced alone at its speed and geography ----

FACTORS = {("standard", ""): 1.0, ("fast", ""): 2.0, ("standard", "us"): 1.1, ("fast", "us"): 2.2,
           ("standard", "global"): 1.0, ("fast", "not_available"): 2.0}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(sorted(FACTORS)), st.integers(0, 5_000), st.integers(0, 300)),
                min_size=1, max_size=12))
def test_each_call_is_billed_at_its_own_speed_and_geography(steps):
    entries, by_hand, stock = [T.prompt("go", 0)], [], 20_000
    for i, ((speed, geo), growth, out) in enumerate(steps):
        e = T.call(f"m{i}", i + 1, inn=0, cw5=growth, cr=stock, out=out, model=OPUS55)
        e["message"]["usage"].update(speed=speed, inference_geo=geo)
        entries.append(e)
        rates = {k: v * FACTORS[(speed, geo)] for k, v in STANDARD.items()}
        by_hand.append(M.usd(rates, {"cw5": growth, "cr": stock, "out": out}))
        stock += growth
    _, events = run(entries)
    assert spent(events) == pytest.approx(sum(by_hand), rel=1e-9)
    labels = {c["model"] for c in calls_of(events)}
    assert labels <= {OPUS55, OPUS55 + "-fast"}
    assert (OPUS55 + "-fast" in labels) == any(s == "fast" for (s, _), _, _ in steps)


def test_replay_and_live_ingestion_give_the_same_figures_for_a_speed_switch(tmp_path):
    """The service's live engine (snapshots between lines, reminders at once) ends where the replay ends."""
    from service.engine_setup.engines import new_engine

    path = M.derive(tmp_path, {"inference_geo": "us"}, models={M.FIRST: OPUS55, M.MIDDLE: OPUS55},
                    middle={"speed": "fast"})
    replayed_end = list(replay_file(path, load_prices()))[-1]
    live = new_engine(str(path), load_prices(), full_events=False)
    for line in path.read_bytes().splitlines():
        live.feed_line(line)
        live.snapshot(with_curve=False)
    live.finish()
    live_end = live.drain_events()[-1]
    assert live_end["event"] == replayed_end["event"] == "end"
    assert live_end["segments"] == replayed_end["segments"] and live_end["status"] == replayed_end["status"]
    assert {m["model"] for m in live_end["segments"][0]["models"]} == {OPUS55, OPUS55 + "-fast"}
