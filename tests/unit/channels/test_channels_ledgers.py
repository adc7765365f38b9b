"""The native ledger (<data dir>/ledgers/*.jsonl) and the ChannelMeters entry point."""
from __future__ import annotations

import json

import pytest

from service.channels import ChannelMeters
from service.channels.ledgers import iso_ts, read_native_ledger
from service.report.summary import build_summary
from service.engine_setup.tokenizer import encode_len

from tests.support.channels import price_lookup

GOOD = [
    {"kind": "edit", "ts": "2026-11-01T10:00:00Z", "anchored_calls": 1, "anchored_ops": 3,
     "anchored_avoided_output_tokens": 412, "anchored_conflicts": 0},
    {"kind": "edit", "ts": "2026-11-01T10:05:00+02:00", "str_replace_calls": 2, "str_replace_old_string_tokens": 50,
     "str_replace_misses": {"not_found": 1, "ambiguous": 2}},
    {"kind": "pinch", "ts": "2026-11-01T11:00:00Z", "original_tokens": 88069, "final_tokens": 50000,
     "model": "claude-sonnet-4-5", "cache_rate": 0.9},
    {"kind": "retrieval", "ts": "2026-11-02T09:00:00Z", "tool": "cl_search", "calls": 2, "bytes_served": 1800,
     "bytes_saved": 24000},
]
BROKEN = [
    b"{not json",
    b'["a list"]',
    json.dumps({"kind": "edit", "anchored_calls": 1}).encode(),                      # no ts
    json.dumps({"kind": "teleport", "ts": "2026-11-01T10:00:00Z"}).encode(),         # unknown kind
    json.dumps({"kind": "pinch", "ts": "2026-11-01T10:00:00Z", "original_tokens": 5}).encode(),  # no final
    json.dumps({"kind": "edit", "ts": "yesterday", "anchored_calls": 1}).encode(),   # unreadable ts
    json.dumps({"kind": "retrieval", "ts": "2026-11-01T10:00:00Z"}).encode(),        # no tool
]


def write_ledger(path, good, broken=()):
    lines = [json.dumps(d).encode() for d in good] + list(broken)
    path.write_bytes(b"\n".join(lines) + b"\n\n")


def test_every_kind_parses_and_malformed_lines_are_counted_and_skipped(tmp_path):
    p = tmp_path / "mytool.jsonl"
    write_ledger(p, GOOD[:2], BROKEN)
    p.write_bytes(p.read_bytes() + b"\n".join(json.dumps(d).encode() for d in GOOD[2:]) + b"\n")
    got = read_native_ledger(p)
    assert got["malformed"] == len(BROKEN) == 7
    assert got["lines"] == 4 + 7
    assert [e["channel"] for e in got["events"]] == ["edit", "edit", "pinch", "retrieval"]
    assert all(e["source"] == "ledger:mytool.jsonl" for e in got["events"])
    assert got["events"][1]["ts"] == "2026-11-01T08:05:00Z"  # offsets normalised to UTC


def test_ledger_events_reach_the_totals(tmp_path):
    p = tmp_path / "t.jsonl"
    write_ledger(p, GOOD)
    ev = read_native_ledger(p)["events"]
    s = build_summary({}, price_lookup(), external=ev, ledger_stats={"files": 1, "malformed": 0})
    e = s["edit"]
    assert (e["anchored_calls"], e["anchored_ops"], e["anchored_avoided_output_tokens"]) == (1, 3, 412)
    assert e["str_replace_calls"] == 2 and e["str_replace_misses"] == {"not_found": 1, "ambiguous": 2, "total": 3}
    p_ = s["pinch"]
    # 88069 - 50000 = 38069 saved at 0.1 * 3e-6 + 0.9 * 0.3e-6 = 5.7e-7 per token -> $0.02169933
    assert p_["tokens_saved_total"] == 38069 and p_["saved_usd"] == pytest.approx(38069 * 5.7e-7)
    r = s["retrieval"]["tools"]["cl_search"]
    assert (r["calls"], r["bytes_served"], r["bytes_saved"]) == (2, 1800, 24000)
    only_day2 = build_summary({}, price_lookup(), external=ev, since="2026-11-02")
    assert only_day2["edit"]["anchored_calls"] == 0 and only_day2["retrieval"]["calls"] == 2


def test_negative_counters_never_book_negative(tmp_path):
    p = tmp_path / "t.jsonl"
    write_ledger(p, [{"kind": "edit", "ts": "2026-11-01T10:00:00Z", "anchored_calls": 1,
                      "anchored_avoided_output_tokens": -50},
                     {"kind": "pinch", "ts": "2026-11-01T10:00:00Z", "original_tokens": 10, "final_tokens": 30}])
    ev = read_native_ledger(p)["events"]
    s = build_summary({}, price_lookup(), external=ev)
    assert s["edit"]["anchored_avoided_output_tokens"] == 0
    assert s["pinch"]["tokens_saved_total"] == 0 and s["pinch"]["events"] == 0


def test_iso_ts_reads_iso_and_epoch():
    assert iso_ts("2026-11-01T10:00:00Z") == "2026-11-01T10:00:00Z"
    assert iso_ts(1_793_527_200) == "2026-11-01T10:00:00Z"
    assert iso_ts(1_793_527_200_000) == "2026-11-01T10:00:00Z"  # milliseconds
    assert iso_ts("nope") is None and iso_ts(None) is None


def test_channel_meters_feed_returns_events_of_all_three_channels():
    from tests.support.transcripts import call, compact, result, tool
    m = ChannelMeters("s1", count_tokens=encode_len)
    entries = [call("m1", 0, cr=50_000, tools=[tool("t1", "Edit", file_path="/a", old_string="hello world", new_string="x"),
                                                tool("t2", "Glob", pattern="*")]),
               result("t1", "updated", 1), result("t2", "a", 2),
               compact(3, pre=60_000, post=3_000)]
    kinds = [(e.channel, e.kind, e.label) for entry in entries for e in m.feed(entry, {})]
    assert kinds == [("edit", "str_replace", "measured"), ("retrieval", "tool", "estimated"),
                     ("pinch", "compaction", "measured")]
    assert m.feed("not a dict", {}) == []


def test_damaged_databases_are_reported_not_fatal(tmp_path):
    from service.channels.ledgers import read_router_db, read_usage_db
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a sqlite file at all" * 10)
    assert read_usage_db(junk) is None
    r = read_router_db(junk)
    assert r["requests"] == [] and r["error"]
