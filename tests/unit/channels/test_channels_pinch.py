"""Pinch channel (seed: pinch-instrumentation): compactions, context edits, router db, blended USD."""
from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, strategies as st

from service.channels.ledgers import read_router_db
from service.channels.pinch import PinchMeter, blended_rate, cache_rate, saved_usd, summarize
from service.report.summary import build_summary
from tests.support.transcripts import SID, call, compact, sidechain

from tests.support.channels import price_lookup, result_file


def feed(entries):
    m = PinchMeter("s1")
    out = []
    for e in entries:
        out += m.feed(e)
    return m, out


def without_post(entry):
    del entry["compactMetadata"]["postTokens"]
    return entry


def test_compaction_pre_to_post_tokens():
    _, ev = feed([call("m1", 0, cr=90_000, cw5=9_997), compact(5, pre=100_000, post=20_000)])
    assert [(e.kind, e.data["original_tokens"], e.data["final_tokens"], e.data["tokens_saved"]) for e in ev] == \
        [("compaction", 100_000, 20_000, 80_000)]


def test_compaction_without_post_tokens_uses_next_main_chain_calls_total_stock():
    # next main-chain call: 3 input + 5000 cache write + 15000 cache read = 20003 -> saved 100000 - 20003
    entries = [call("m1", 0, cr=90_000), without_post(compact(5, pre=100_000)),
               sidechain(call("side", 6, inn=1, cw5=10)),            # a subagent call is not the next request
               call("m2", 10, inn=3, cw5=5_000, cr=15_000)]
    _, ev = feed(entries)
    assert [(e.kind, e.data["final_tokens"], e.data["tokens_saved"]) for e in ev] == [("compaction", 20_003, 79_997)]


def test_client_context_edit_is_a_fall_between_consecutive_calls_without_boundary():
    entries = [call("m1", 0, inn=3, cr=49_997),            # stock 50000
               call("m1", 0, inn=3, cr=49_997, out=90),    # same response, later line: not another call
               call("m2", 10, inn=3, cr=41_997),           # stock 42000: fell by 8000
               call("m3", 20, inn=3, cr=45_000),           # grew: nothing
               call("m4", 30, inn=3, cr=30_000, model="claude-opus-4-7")]  # another model tokenizes differently
    m, ev = feed(entries)
    assert [(e.kind, e.data["original_tokens"], e.data["final_tokens"], e.data["tokens_saved"]) for e in ev] == \
        [("context_edit", 50_000, 42_000, 8_000)]
    assert m.requests == 4


def test_fall_after_a_boundary_is_the_compaction_not_a_context_edit():
    entries = [call("m1", 0, cr=99_997), compact(5, pre=100_000, post=20_000), call("m2", 10, cr=19_997)]
    _, ev = feed(entries)
    assert [e.kind for e in ev] == ["compaction"]


def test_sidechain_and_synthetic_entries_are_not_requests():
    synthetic = call("syn", 5, inn=0, out=0, model="<synthetic>")
    m, ev = feed([call("m1", 0, cr=50_000), sidechain(call("s", 1, cr=100)), synthetic, call("m2", 10, cr=50_100)])
    assert ev == [] and m.requests == 2


def test_cache_rate_is_the_measured_cache_read_share():
    assert cache_rate(10, 90, 900) == pytest.approx(0.9)
    assert cache_rate(0, 0, 0) == 0.0


def test_blended_usd_formula_by_hand():
    # 80000 saved, cache_rate 0.9, p_in $3/M, cached $0.30/M:
    # rate = 0.1 * 3e-6 + 0.9 * 0.3e-6 = 5.7e-7 per token -> 80000 * 5.7e-7 = $0.0456
    assert blended_rate(0.9, 3e-6, 0.3e-6) == pytest.approx(5.7e-7)
    assert saved_usd(80_000, 0.9, 3e-6, 0.3e-6) == pytest.approx(0.0456)
    # NULL cached price falls back to the input price: 80000 * 3e-6 = $0.24 whatever the cache rate
    assert saved_usd(80_000, 0.9, 3e-6, None) == pytest.approx(0.24)


@given(st.integers(0, 10**7), st.floats(0, 1), st.floats(1e-7, 1e-4), st.floats(1e-8, 1e-4))
def test_blended_rate_lies_between_cached_and_full_price(saved, rate, p_in, p_cached):
    usd = saved_usd(saved, rate, p_in, p_cached)
    lo, hi = sorted((p_in, p_cached))
    assert saved * lo - 1e-9 <= usd <= saved * hi + 1e-9


def test_share_median_and_total():
    # pinched [100, 300, 200] of 10 requests: share 0.3, median 200, total 600; zero-saving events are not pinches
    assert summarize([100, 300, 0, 200], 10) == {"events": 3, "requests": 10, "share_pinched": 0.3,
                                                 "tokens_saved_total": 600, "tokens_saved_median": 200}
    assert summarize([], 0)["share_pinched"] == 0.0


def test_summary_prices_saved_tokens_at_the_sessions_blended_rate():
    # session main chain: in 10, cw 90, cr 900 -> cache_rate 0.9 (all calls of the session)
    entries = [call("m1", 0, inn=10, cw5=90, cr=900), compact(5, pre=100_000, post=20_000),
               call("m2", 10, inn=0, cw5=0, cr=0)]
    s = build_summary({"f": result_file(entries)}, price_lookup())["pinch"]
    assert s["events"] == 1 and s["tokens_saved_total"] == 80_000 and s["tokens_saved_median"] == 80_000
    assert s["requests"] == 2 and s["share_pinched"] == 0.5
    # claude-sonnet-4-5: p_in 3e-6, cache read 0.3e-6 -> $0.0456 (worked above)
    assert s["saved_usd"] == pytest.approx(0.0456)
    assert s["label"] == "measured"


def make_router_db(path, rows, *, ts_col="created_at"):
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE route_decisions (id INTEGER PRIMARY KEY, {ts_col} TEXT, model TEXT, "
                "pinch_original_tokens INTEGER, pinch_final_tokens INTEGER)")
    con.executemany(f"INSERT INTO route_decisions ({ts_col}, model, pinch_original_tokens, pinch_final_tokens) "
                    "VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def test_router_db_rows_null_means_pinch_off_and_file_is_untouched(tmp_path):
    db = tmp_path / "router.db"
    make_router_db(db, [("2026-11-01T10:00:00Z", "claude-sonnet-4-5", 1000, 600),
                        ("2026-11-01T10:01:00Z", "claude-sonnet-4-5", None, None),
                        ("2026-11-02T10:00:00Z", "claude-sonnet-4-5", 500, 500)])
    before = db.read_bytes()
    router = read_router_db(db)
    assert router["error"] is None and len(router["requests"]) == 3
    assert db.read_bytes() == before
    s = build_summary({}, price_lookup(), router=router)["pinch"]
    # 3 requests, 1 pinched (1000 -> 600 saves 400); no transcripts: cache_rate 0 -> 400 * 3e-6 = $0.0012
    assert (s["requests"], s["pinched_requests"], s["events"], s["tokens_saved_total"]) == (3, 1, 1, 400)
    assert s["saved_usd"] == pytest.approx(0.0012)
    only_2nd = build_summary({}, price_lookup(), router=router, since="2026-11-02")["pinch"]
    assert (only_2nd["requests"], only_2nd["events"]) == (1, 0)


def test_router_db_without_table_reports_an_error_not_a_crash(tmp_path):
    db = tmp_path / "other.db"
    sqlite3.connect(db).execute("CREATE TABLE x (a)").connection.close()
    assert read_router_db(db)["requests"] == [] and read_router_db(db)["error"]
    assert read_router_db(tmp_path / "missing.db")["requests"] == []


# ---- who compacted: manual, auto, idle (Claude Code 2.1.332) --------------------------------------

def test_idle_note_after_the_summary_makes_the_compaction_idle():
    from tests.support.transcripts import idle_compaction, summary_user
    manual = compact(5, pre=100_000, post=20_000)
    manual["compactMetadata"]["trigger"] = "manual"
    entries = [call("m1", 0, cr=90_000), manual, summary_user(6), call("m2", 10, cr=19_997),
               *idle_compaction(20, pre=212_000, post=9_000), call("m3", 4000, cw5=9_000),
               compact(4100, pre=150_000, post=30_000)]
    _, ev = feed(entries)
    assert [e.data["started_by"] for e in ev] == ["manual", "idle", "auto"]


def test_an_old_claude_codes_manual_trigger_with_the_idle_note_is_idle_and_precomputed_is_idle_without_one():
    from tests.support.transcripts import idle_compaction
    _, ev = feed([call("m1", 0, cr=90_000), *idle_compaction(10, trigger="manual")])
    assert [e.data["started_by"] for e in ev] == ["idle"]
    _, ev = feed([call("m1", 0, cr=90_000), *idle_compaction(10, precomputed=True, note=False)])
    assert [e.data["started_by"] for e in ev] == ["idle"]


def test_a_note_after_a_call_marks_nothing():
    from tests.support.transcripts import idle_note
    _, ev = feed([call("m1", 0, cr=90_000), compact(5), call("m2", 10, cr=19_997), idle_note(11)])
    assert [e.data["started_by"] for e in ev] == ["auto"]


def test_idle_note_before_the_next_call_when_the_boundary_has_no_post_tokens():
    from tests.support.transcripts import idle_compaction
    entries = idle_compaction(10)
    without_post(entries[0])
    _, ev = feed([call("m1", 0, cr=90_000), *entries, call("m2", 4000, cw5=9_000)])
    assert [(e.data["started_by"], e.data["final_from"]) for e in ev] == [("idle", "next_call")]


def test_report_counts_compactions_by_who_started_them_and_prices_each_with_the_compaction_estimate():
    from service.report import unwritten
    from service.report.summary import day_of
    from tests.support.transcripts import idle_compaction, summary_user
    manual = compact(5, pre=100_000, post=20_000)
    manual["compactMetadata"]["trigger"] = "manual"
    entries = [call("m1", 0, cr=99_997), manual, summary_user(6), call("m2", 10, cr=19_997),
               *idle_compaction(20, pre=212_000, post=9_000), call("m3", 4000, cw5=8_997),
               *idle_compaction(9000, pre=150_000, post=7_000, precomputed=True), call("m4", 12000, cw5=6_997),
               compact(12100, pre=180_000, post=30_000)]
    fr = result_file(entries)
    assert fr["events"] == every_line_reference_events(entries)  # the scanner keeps the idle notes
    block = build_summary({"f": fr}, price_lookup())["compactions"]
    assert block["by_trigger"] == {"manual": 1, "auto": 1, "idle": 2}
    assert block["label"] == "estimated" and block["by_session"] == {SID: {"manual": 1, "auto": 1, "idle": 2}}
    # the report's one estimate of a compaction request, over the same boundaries
    est = unwritten.estimated([e for e in fr["events"] if e["kind"] == "compaction"], price_lookup(), day_of)
    assert block["cost_range_usd"] == {"low": pytest.approx(est["low_usd"]), "high": pytest.approx(est["high_usd"])}
    assert block["cost_usd"] == pytest.approx((est["low_usd"] + est["high_usd"]) / 2)
    assert sum(block["cost_usd_by_trigger"].values()) == pytest.approx(block["cost_usd"])


def every_line_reference_events(entries):
    from service.report.scan import TranscriptFile
    from tests.support.channels import every_line_reference
    from tests.support.transcripts import to_bytes
    return every_line_reference(to_bytes(entries), TranscriptFile("/virtual/s1.jsonl", "-p", False, "s1"))[0]
