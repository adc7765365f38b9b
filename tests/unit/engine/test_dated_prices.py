"""Issue 26, prices of their day: a price entry carries its dated changes and each call is priced at the
rates in force at its own time (from the transcript line); a user's override still wins at every date."""
from __future__ import annotations

import json

import pytest

from resources import resource_path
from service.engine.prices import PriceTable
from service.engine_setup.engines import load_prices
from service.report.scan import SizeMemo, TranscriptFile, scan_bytes
from service.report.summary import build_summary
from tests.support import transcripts as T

SONNET_55 = "claude-sonnet-5-5"
# Sonnet 5.5's rates in USD per million tokens, by hand: its cache reads went from $0.20 to $0.10 on
# 2026-10-07 (00:00 UTC); the other rates did not change.
BEFORE = {"input": 2.0, "output": 10.0, "cache_read": 0.20, "cache_write_5m": 2.5, "cache_write_1h": 4.0}
AFTER = dict(BEFORE, cache_read=0.10)
USAGE = {"inn": 5, "cw5": 2_000, "cw1h": 0, "cr": 400_000, "out": 300}


def by_hand(rates: dict, u: dict = USAGE) -> float:
    return (u["inn"] * rates["input"] + u["cw5"] * rates["cache_write_5m"] + u["cw1h"] * rates["cache_write_1h"]
            + u["cr"] * rates["cache_read"] + u["out"] * rates["output"]) / 1e6


def call_at(mid: str, when: str) -> dict:
    e = T.call(mid, 0, model=SONNET_55, **USAGE)
    e["timestamp"] = when
    return e


def bundled() -> PriceTable:
    return PriceTable.from_json(json.loads(resource_path("prices.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("when, rates", [
    ("2026-10-01T12:00:00.000Z", BEFORE),
    ("2026-10-06T23:59:59.999Z", BEFORE),
    ("2026-10-07T00:00:00.000Z", AFTER),
    ("2026-11-20T08:00:00.000Z", AFTER),
    ("2026-10-07T01:30:00+02:00", BEFORE),  # 23:30 UTC on the 6th: the offset is honoured
])
def test_the_table_gives_the_rates_in_force_at_the_calls_time(when, rates):
    price, how = bundled().lookup_at(SONNET_55, when)
    assert how == "table"
    assert price.p_r == pytest.approx(rates["cache_read"] / 1e6, rel=1e-12)
    assert price.p_in == pytest.approx(rates["input"] / 1e6, rel=1e-12)
    assert price.p_out == pytest.approx(rates["output"] / 1e6, rel=1e-12)


def test_today_and_an_unreadable_time_are_todays_rates():
    table = bundled()
    assert table.lookup(SONNET_55)[0].p_r == pytest.approx(0.10 / 1e6)
    assert table.lookup_at(SONNET_55, None) == table.lookup(SONNET_55)
    assert table.lookup_at(SONNET_55, "yesterday") == table.lookup(SONNET_55)
    change = table.changes(SONNET_55)[0]
    assert change["from"] == "2026-10-07" and "source" in change  # entered with its source


def summary_of(entries: list[dict], table: PriceTable) -> dict:
    tf = TranscriptFile(path="/p/-home-user-proj/s.jsonl", project="-home-user-proj", subagent=False,
                        session_hint=T.SID)
    result = scan_bytes(T.to_bytes(entries), tf, SizeMemo(), len)
    return build_summary({tf.path: result}, table.lookup)


def test_the_report_prices_each_call_on_its_own_side_of_the_cut():
    entries = [T.prompt("go", 0), call_at("before", "2026-10-01T12:00:00.000Z"),
               call_at("after", "2026-10-08T12:00:00.000Z")]
    spend = summary_of(entries, bundled())["spend"]
    assert spend["by_day"]["2026-10-01"] == pytest.approx(by_hand(BEFORE), abs=1e-9)
    assert spend["by_day"]["2026-10-08"] == pytest.approx(by_hand(AFTER), abs=1e-9)
    assert spend["total_usd"] == pytest.approx(by_hand(BEFORE) + by_hand(AFTER), abs=1e-9)
    assert by_hand(BEFORE) - by_hand(AFTER) == pytest.approx(0.04)  # 400k cache reads at $0.10 less


def test_a_users_override_wins_at_every_date():
    table = bundled().merged({"models": {SONNET_55: {"cache_read": 0.15}}})
    for when in ("2026-10-01T12:00:00.000Z", "2026-10-08T12:00:00.000Z"):
        assert table.lookup_at(SONNET_55, when)[0].p_r == pytest.approx(0.15 / 1e6)
    # overriding another rate keeps the history of the cache-read rate
    other = bundled().merged({"models": {SONNET_55: {"output": 12}}})
    assert other.lookup_at(SONNET_55, "2026-10-01T00:00:00Z")[0].p_r == pytest.approx(0.20 / 1e6)
    assert other.lookup_at(SONNET_55, "2026-10-01T00:00:00Z")[0].p_out == pytest.approx(12 / 1e6)


def test_the_engine_bills_each_call_at_its_days_rates(tmp_path):
    """Replay (the same engine the service runs live): the segment's bill takes each call at its own rates."""
    from service.engine_setup.engines import replay_file

    path = tmp_path / "s.jsonl"
    entries = [T.prompt("go", 0), call_at("before", "2026-10-06T23:00:00.000Z"),
               call_at("after", "2026-10-07T01:00:00.000Z")]
    path.write_bytes(T.to_bytes(entries))
    calls = [e for e in replay_file(path, load_prices()) if e.get("event") == "call"]
    first, last = calls[0]["spend"], calls[-1]["spend"]
    assert first["bill_in_usd"] + first["bill_out_usd"] == pytest.approx(by_hand(BEFORE), abs=1e-9)
    assert last["bill_in_usd"] + last["bill_out_usd"] == pytest.approx(by_hand(BEFORE) + by_hand(AFTER), abs=1e-9)


@pytest.mark.parametrize("bad, message", [
    ([{"from": "2026-13-01", "was": {"cache_read": 0.2}}], "must be a day"),
    ([{"from": "2026-10-07", "was": {}}], "must name one or more"),
    ([{"from": "2026-10-07", "was": {"cache-read": 0.2}}], "must name one or more"),
    ([{"from": "2026-10-07", "was": {"cache_read": -1}}], "non-negative"),
    ([{"from": "2026-10-07", "was": {"cache_read": 0.2}}, {"from": "2026-10-01", "was": {"input": 1}}], "in order"),
    ([{"from": "2026-10-07", "was": {"cache_read": 0.2}, "rate": 1}], "unknown field"),
    ({"from": "2026-10-07"}, "must be a list"),
])
def test_a_bad_history_is_a_clear_error(bad, message):
    entry = {"input": 2, "output": 10, "cache_read": 0.1, "cache_write_5m": 2.5, "cache_write_1h": 4,
             "context_window": 1_000_000, "changes": bad}
    with pytest.raises(ValueError, match=message):
        PriceTable({"claude-sonnet-9": entry})
