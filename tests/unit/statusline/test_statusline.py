"""`ctxlamp statusline` and what the service keeps of it (issue 16).

Pure parts (the input filter, the line, the JSON shortcut, the readings book) are tested
directly; the command runs as Claude Code runs it (a process fed JSON on stdin) against a real
`ctxlamp serve`, a service that is down, and one that never answers.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings, strategies as st

from service.client import where
from service.statusline import fastjson, line, reading
from service.limits.book import Book
from tests.support.corpus import ROOT

SAMPLE = json.loads((ROOT / "tests" / "fixtures" / "statusline" / "subscriber.json").read_text())
NOW = 1795000000.0


# ---- the input filter ---------------------------------------------------------------------------

def test_recorded_subscriber_json_gives_its_limits_cost_context_and_cache():
    r = reading.parse(SAMPLE)
    assert r["session_id"] == SAMPLE["session_id"]
    assert r["rate_limits"] == {"five_hour": {"used_percentage": 37.0, "resets_at": 1795010400.0},
                                "seven_day": {"used_percentage": 12.0, "resets_at": 1795400000.0},
                                "spend_limit": {"used_percentage": 4.5, "resets_at": 1797000000.0}}
    assert r["cost"]["total_cost_usd"] == 1.8342
    assert r["context_window"]["used_percentage"] == 42
    assert r["prompt_cache"] == {"ttl": 300, "requests": 14, "misses": 1, "hit_ratio": 0.93,
                                 "expires_at": 1795000300.0, "warm": True}  # what this older shape held
    assert "output_style" not in r and "workspace" not in r  # unknown or unused fields are dropped


@pytest.mark.parametrize("bad", [None, [], "x", 3, {"session_id": 5}, {"session_id": "../../etc/passwd"},
                                 {"rate_limits": {"five_hour": {"used_percentage": "37"}}},
                                 {"rate_limits": {"five_hour": {"used_percentage": float("nan")}}},
                                 {"rate_limits": [1, 2]}, {"cost": {"total_cost_usd": True}},
                                 {"prompt_cache": {"expires_at": "soon", "warm": "yes"}}])
def test_wrong_types_are_dropped_not_fatal(bad):
    r = reading.parse(bad)
    assert "session_id" not in r and "rate_limits" not in r and "cost" not in r and "prompt_cache" not in r


def test_resets_at_in_milliseconds_or_iso_reads_as_epoch_seconds():
    ms = reading.parse({"rate_limits": {"five_hour": {"used_percentage": 1, "resets_at": 1795010400000}}})
    iso = reading.parse({"rate_limits": {"five_hour": {"used_percentage": 1, "resets_at": "2026-11-18T09:20:00Z"}}})
    assert ms["rate_limits"]["five_hour"]["resets_at"] == 1795010400.0
    assert iso["rate_limits"]["five_hour"]["resets_at"] == 1794993600.0


# ---- the line -----------------------------------------------------------------------------------

def facts(**over):
    base = {"service": "up", "session": {"lamp": {"state": "good", "colour": "green"}, "dhat": 4.2,
                                          "bill_cycle_usd": 0.31},
            "limits": reading.parse(SAMPLE)["rate_limits"], "turn": None, "cache_expires_at": NOW + 192,
            "context_pct": 42}
    base.update(over)
    return base


def test_line_reads_at_a_glance():
    text = line.render(facts(), color=False, now=NOW)
    assert text.startswith("● green 5 calls to sweet spot · rent $0.31 · 5h 37% resets ")
    assert "week 12% resets " in text and "spend 4% resets" in text and text.endswith("cache 3:12")


def test_states_in_words_and_colours():
    red = facts(session={"lamp": {"state": "critical", "colour": "red"}, "dhat": -9})
    assert "restart pays" in line.render(red, color=False, now=NOW)
    assert "\033[31m● red\033[0m" in line.render(red, color=True, now=NOW)
    past = facts(session={"lamp": {"state": "warning", "colour": "amber"}, "dhat": -1.2})
    assert "2 calls past sweet spot" in line.render(past, color=False, now=NOW)
    assert line.render(facts(session=None, service="down"), color=False, now=NOW).startswith("◌ ctxlamp off · 5h 37%")
    hot = facts(limits={"five_hour": {"used_percentage": 96.0}})
    assert "\033[31m5h 96%\033[0m" in line.render(hot, color=True, now=NOW)


def test_cache_expired_and_turn_share():
    text = line.render(facts(cache_expires_at=NOW - 5, turn={"delta_pct": 1.25, "label": "upper bound"}),
                       color=False, now=NOW)
    assert "last turn ≤1.2% of 5h" in text and text.endswith("cache cold")


def test_template_picks_orders_and_drops_empty_pieces():
    f = facts(session=None, service="down", limits={}, cache_expires_at=None)
    assert line.render(f, "{cache} | {limits} | {lamp}", color=False, now=NOW) == "◌ ctxlamp off"
    assert line.render(facts(), "{context} | {lamp}", color=False, now=NOW) == "ctx 42% · ● green"
    with pytest.raises(ValueError):
        line.check_format("{lamp} {nope}")
    assert line.render(facts(), "{nope", color=False, now=NOW) == line.render(facts(), color=False, now=NOW)


def test_config_rejects_an_unknown_part():
    from service import config

    with pytest.raises(config.ConfigError, match="nope"):
        config.merge(config.DEFAULTS, {"statusline": {"format": "{lamp} {nope}"}})
    ok = config.merge(config.DEFAULTS, {"statusline": {"format": "{lamp}|{limits}"}})
    assert ok["statusline"]["format"] == "{lamp}|{limits}"


# ---- JSON through _json alone -------------------------------------------------------------------

JSONS = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=20)


@given(JSONS)
@settings(max_examples=300, deadline=None)
def test_fastjson_matches_json(doc):
    text = json.dumps(doc)
    assert fastjson.loads(text) == json.loads(text)
    assert fastjson.loads(text.encode()) == json.loads(text)
    assert fastjson.dumps(doc) == json.dumps(doc, separators=(",", ":"))


@pytest.mark.parametrize("bad", ["", " ", "{", "[1]x", "x", "{\"a\":}", "[" * 100000, "\ufeff{}"])
def test_fastjson_refuses_what_json_refuses(bad):
    with pytest.raises(ValueError):
        fastjson.loads(bad)


# ---- where api.json is -------------------------------------------------------------------------

@pytest.mark.parametrize("env", [{"CTXLAMP_HOME": "/tmp/x/../ctx"}, {"XDG_DATA_HOME": "/tmp/data"}])
def test_where_agrees_with_service_paths(monkeypatch, env):
    from service.client.paths import app_paths

    for key in ("CTXLAMP_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert where.runtime_dir() == str(app_paths().runtime)


# ---- the readings book --------------------------------------------------------------------------

def limits_reading(sid, five, resets=NOW + 3600, cost=None):
    body = {"session_id": sid, "rate_limits": {"five_hour": {"used_percentage": five, "resets_at": resets}}}
    if cost is not None:
        body["cost"] = {"total_cost_usd": cost}
    return reading.parse(body)


def test_book_deduplicates_and_reports_latest():
    book = Book()
    assert book.limits() == {"five_hour": None, "seven_day": None, "spend_limit": None}
    assert book.record("s1", limits_reading("s1", 10), turns=1, now=NOW) is True
    assert book.record("s1", limits_reading("s1", 10), turns=1, now=NOW + 5) is False
    assert len(book.session_readings("s1")) == 1 and len(book.account_readings()) == 1
    five = book.limits()["five_hour"]
    assert five["used_percentage"] == 10 and five["resets_at"] == "2026-11-18T12:06:40Z"
    assert five["seen_at"] == "2026-11-18T11:06:45Z"  # seen again: the newer time


def test_book_cannot_grow_without_bound():
    book = Book(per_session=50, account=100, max_sessions=8)
    for i in range(5000):
        sid = f"s{i % 40}"
        book.record(sid, limits_reading(sid, i % 97 + (i / 1e6)), turns=i, now=NOW + i)
    assert len(book.sessions) == 8
    assert all(len(v) <= 50 for v in book.sessions.values())
    assert len(book.account) == 100


def test_turn_costs_measured_upper_bound_and_window_reset():
    book = Book()
    book.record("a", limits_reading("a", 10.0, cost=1.0), turns=1, now=NOW)
    book.record("a", limits_reading("a", 12.5, cost=1.5), turns=2, now=NOW + 60)       # turn 2: 2.5 %
    book.record("b", limits_reading("b", 14.0), turns=7, now=NOW + 90)                  # another session moves it
    book.record("a", limits_reading("a", 15.0, cost=1.9), turns=3, now=NOW + 120)      # turn 3: upper bound
    book.record("a", limits_reading("a", 1.0, NOW + 20000, cost=2.0), turns=4, now=NOW + 180)  # new window
    turns = book.turn_costs("a")
    assert [(t["turn"], t["label"]) for t in turns] == [(2, "measured"), (3, "upper bound"), (4, "window reset")]
    assert turns[0]["delta_pct"] == 2.5 and math.isclose(turns[0]["cost_usd"], 0.5)
    assert turns[1]["delta_pct"] == 2.5 and turns[2]["delta_pct"] is None
    assert book.pct_per_usd() == pytest.approx(5.0)  # 2.5 % for $0.50, measured turns only


def test_book_saves_and_loads(tmp_path):
    path = tmp_path / "statusline.json"
    book = Book(path)
    book.record("a", limits_reading("a", 20.0), turns=1, now=NOW)
    book.save()
    again = Book(path)
    assert again.limits()["five_hour"]["used_percentage"] == 20.0
    assert again.session_readings("a")[0]["five_hour"] == 20.0
    path.write_text("{broken")
    assert Book(path).limits()["five_hour"] is None


def test_recorded_api_key_json_of_the_real_cli_parses():
    recorded = json.loads((ROOT / "tests" / "fixtures" / "statusline" / "apikey-2.1.328.json").read_text())
    r = reading.parse(recorded)
    assert r["session_id"] == recorded["session_id"] and "rate_limits" not in r
    assert r["prompt_cache"]["expires_at"] == recorded["prompt_cache"]["expires_at"]
    cache = recorded["prompt_cache"]
    assert r["prompt_cache"] == {"ttl": 300, "warm": True, "caching_observed": True,  # "5m" read as 300 s
                                 "requests": cache["requests"], "misses": 0, "expected_rebuilds": 0, "hit_ratio": 0,
                                 "cache_write_tokens": cache["cache_write_tokens"], "miss_recache_tokens": 0,
                                 "recache_tokens_if_cold": cache["recache_tokens_if_cold"],
                                 "expires_at": cache["expires_at"]}  # null cause, empty causes: nothing kept
    assert r["cost"]["total_cost_usd"] == recorded["cost"]["total_cost_usd"]


# ---- the cold cache (issue 47) -------------------------------------------------------------------

MISSED = {"warm": False, "caching_observed": True, "ttl": "1h", "expires_at": NOW - 5, "requests": 40, "misses": 3,
          "expected_rebuilds": 1, "hit_ratio": 0.91, "cache_write_tokens": 400_000, "miss_recache_tokens": 380_000,
          "last_miss_at": NOW - 3700, "last_miss_cause": {"causes": ["ttl_expired_5m", "model_changed"]},
          "miss_causes": {"ttl_expired_5m": 2, "model_changed": 1}, "recache_tokens_if_cold": 181_000}


def test_the_whole_prompt_cache_of_2_1_332_is_read_field_by_field():
    r = reading.parse({"prompt_cache": MISSED})["prompt_cache"]
    assert r == {**MISSED, "ttl": 3600}


@settings(max_examples=200, deadline=None)
@example({"miss_causes": {"\u00b2": 1, "_": 2, "ok_1": 3}, "last_miss_cause": {"causes": ["\u0663", "_", "ok"]}})
@given(st.dictionaries(st.sampled_from(list(MISSED)), st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True), st.text(max_size=60),
    st.lists(st.text(max_size=50), max_size=40), st.dictionaries(st.text(max_size=50), st.integers(-5, 10**12),
                                                                  max_size=40),
    st.fixed_dictionaries({"causes": st.lists(st.one_of(st.text(max_size=50), st.integers()), max_size=40)}))))
def test_any_prompt_cache_input_comes_out_typed_and_in_range(raw):
    r = reading.parse({"prompt_cache": raw}).get("prompt_cache", {})
    for key in ("warm", "caching_observed"):
        assert type(r.get(key, True)) is bool
    assert 0 <= r.get("ttl", 0) <= 86400 and 0 <= r.get("hit_ratio", 0) <= 1
    for key in ("requests", "misses", "expected_rebuilds"):
        assert type(r.get(key, 0)) is int and 0 <= r.get(key, 0) <= 1e9
    for key in ("cache_write_tokens", "miss_recache_tokens", "recache_tokens_if_cold"):
        assert type(r.get(key, 0)) is int and 0 <= r.get(key, 0) <= 1e10
    names = list(r.get("miss_causes", {})) + (r.get("last_miss_cause") or {}).get("causes", [])
    assert len(r.get("miss_causes", {})) <= reading.MAX_CAUSES
    assert all(0 < len(n) <= 40 and n.replace("_", "").isalnum() and n == n.lower() and n.isascii() for n in names)
    assert all(type(n) is int and 0 <= n <= 1e9 for n in r.get("miss_causes", {}).values())


def cold_facts(**extra):
    session = {"lamp": {"state": "good", "colour": "green"},
               "cache": {"cold_rewrite_usd": 0.9, "fresh_start_usd": 0.13, "expires_at": "x"}}
    return {"session": session, "service": "up", "limits": {}, "cache_expires_at": NOW - 1, **extra}


def test_a_cold_cache_prices_the_rewrite_beside_the_fresh_start_and_names_the_restart_only_with_a_handoff():
    assert line.cache_part(cold_facts(), False, NOW) == "cache cold: next msg rewrites $0.90 · fresh start $0.13"
    assert line.cache_part(cold_facts(handoff=True), False, NOW) == \
        "cache cold: next msg rewrites $0.90 · restart w/ handoff $0.13"
    # Claude Code's own word that the cache is cold comes first, whatever the clock says
    assert line.cache_part(cold_facts(cache_expires_at=NOW + 100, cache_warm=False), False, NOW).startswith(
        "cache cold: next msg rewrites $0.90")
    assert line.cache_part(cold_facts(cache_expires_at=NOW + 100), False, NOW) == "cache 1:40"
    # without the service: Claude Code's count of what the next message rewrites
    down = {"session": None, "service": "down", "limits": {}, "cache_expires_at": NOW - 1, "recache_tokens": 181_000}
    assert line.cache_part(down, False, NOW) == "cache cold: next msg rewrites 181k tokens"
    assert line.cache_part(dict(down, recache_tokens=None), False, NOW) == "cache cold"


def test_a_cold_cache_names_the_move_the_cache_notice_names():
    # the engine's advice once cold and its `break_move`: the status line says what the tray's notice says
    cold = {"move": "restart", "horizon_calls": 30.0, "continue_usd": 2.0, "compact_usd": 1.6, "restart_usd": 0.99,
            "saves_usd": 1.01, "label": "estimated", "pays_twice": True}
    facts = cold_facts()
    facts["session"]["cache"].update(cold_advice=cold, break_move="restart")
    assert line.cache_part(facts, False, NOW) == "cache cold: next msg rewrites $0.90 · restart saves ~$1.01/30 calls"
    facts["handoff"] = True
    assert line.cache_part(facts, False, NOW) == \
        "cache cold: next msg rewrites $0.90 · restart w/ handoff saves ~$1.01/30 calls"
    facts["handoff"] = False
    facts["session"]["cache"]["break_move"] = "continue"  # the notice names none: the fresh start as before
    assert line.cache_part(facts, False, NOW) == "cache cold: next msg rewrites $0.90 · fresh start $0.13"


@settings(max_examples=200, deadline=None)
@given(rewrite=st.floats(0, 1e9, allow_nan=False), share=st.floats(0, 1), handoff=st.booleans(),
       others=st.booleans(), saves=st.floats(0, 1e9, allow_nan=False), ahead=st.floats(1, 2000))
def test_every_cold_form_fits_one_status_line_of_80_columns(rewrite, share, handoff, others, saves, ahead):
    facts = cold_facts(handoff=handoff)
    facts["session"]["cache"] = {"cold_rewrite_usd": rewrite, "fresh_start_usd": rewrite * share}
    if others:  # the move the cache notice names, at any saving
        facts["session"]["cache"].update(break_move="restart", cold_advice={
            "move": "restart", "horizon_calls": ahead, "continue_usd": saves, "restart_usd": 0.0, "compact_usd": 0.0})
    text = line.cache_part(facts, False, NOW)
    assert "\n" not in text and len(text) <= 80
    assert text.startswith("cache cold")


def test_claude_codes_word_on_warmth_counts_only_where_it_saw_caching():
    from service.statusline.run import _local_facts
    cold = _local_facts(reading.parse({"prompt_cache": {"warm": False, "caching_observed": True}}))
    assert cold["cache_warm"] is False
    never = _local_facts(reading.parse({"prompt_cache": {"warm": False, "caching_observed": False}}))
    assert never["cache_warm"] is None and line.cache_part(never, False, NOW) == ""
