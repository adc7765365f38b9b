"""Retrieval channel (seed: retrieval-usage-metrics): estimated bytes saved per tool."""
from __future__ import annotations

import json
import sqlite3

from hypothesis import given, strategies as st

from service.channels.ledgers import read_usage_db, snapshot_events
from service.channels.retrieval import estimate_saved, tracked_tool
from service.report.scan import SizeMemo
from service.report.summary import build_summary
from tests.support.transcripts import CWD, call, result, tool

from tests.support.channels import price_lookup, result_file, run_meters


def grep_result(tid, text, filenames, t=1):
    r = result(tid, text, t)
    r["toolUseResult"] = {"mode": "files_with_matches", "filenames": filenames, "numFiles": len(filenames)}
    return r


def mcp_result(tid, doc, t=1):
    r = result(tid, "", t)
    r["message"]["content"][0]["content"] = [{"type": "text", "text": json.dumps(doc)}]
    r["toolUseResult"] = [{"type": "text", "text": json.dumps(doc)}]
    return r


def test_saved_is_sum_of_distinct_file_sizes_minus_served():
    # files 3000 + 5000 bytes, 1000 served -> 7000
    assert estimate_saved([3000, 5000], 2, 1000) == (7000, "sizes")


def test_saved_is_floored_at_zero():
    assert estimate_saved([100], 1, 1000) == (0, "sizes")
    assert estimate_saved([None], 1, 9000) == (0, "handles")


def test_fallback_handles_times_4096_when_no_size_is_known():
    # 3 handles * 4096 - 1000 served = 11288
    assert estimate_saved([None, None, None], 3, 1000) == (11288, "handles")
    assert estimate_saved([], 0, 10) == (0, "none")


def test_at_most_50_distinct_files_count():
    # 60 files of 100 bytes: only 50 count -> 5000 - 200 served = 4800
    assert estimate_saved([100] * 60, 60, 200) == (4800, "sizes")
    assert estimate_saved([None] * 60, 60, 200) == (50 * 4096 - 200, "handles")


@given(st.lists(st.one_of(st.none(), st.integers(0, 10**7)), max_size=80), st.integers(0, 200), st.integers(0, 10**8))
def test_saved_is_never_negative_and_never_more_than_50_files(sizes, handles, served):
    saved, _ = estimate_saved(sizes, handles, served)
    assert saved >= 0
    assert saved <= max(sum(s for s in sizes[:50] if s is not None), 50 * 4096)


def test_tracked_tools_and_mcp_prefix():
    assert tracked_tool("Grep") == "Grep" and tracked_tool("Glob") == "Glob"
    assert tracked_tool("mcp__codelens__cl_search") == "cl_search"
    assert tracked_tool("mcp__codelens__cl_expand") == "cl_expand"
    for op in ("cl_refresh", "cl_doctor", "cl_stats", "cl_prune", "cl_drop", "cl_current", "cl_usage", "Read"):
        assert tracked_tool(f"mcp__codelens__{op}") is None


def test_grep_bytes_served_are_utf8_bytes_and_files_come_from_filenames(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_bytes(b"x" * 3000)
    b.write_bytes(b"y" * 5000)
    text = "Found 2 files\né"  # 14 ASCII bytes + "é" (2 bytes in UTF-8) = 16 bytes, though 15 characters
    entries = [call("m1", 0, tools=[tool("t1", "Grep", pattern="x")]),
               grep_result("t1", text, [str(a), str(b), str(a)])]      # a listed twice: distinct files count once
    _, ev = run_meters(entries, SizeMemo())
    assert [(e.data["tool"], e.data["bytes_served"], e.data["files"], e.data["bytes_saved"], e.data["basis"])
            for e in ev] == [("Grep", 16, 2, 3000 + 5000 - 16, "sizes")]


def test_relative_filenames_resolve_against_cwd_and_unknown_sizes_fall_back():
    sizes = {f"{CWD}/src/a.py": 2000}
    entries = [call("m1", 0, tools=[tool("t1", "Glob", pattern="**/*.py")]),
               grep_result("t1", "src/a.py\nsrc/gone.py", ["src/a.py", "src/gone.py"]),
               call("m2", 10, tools=[tool("t2", "Glob", pattern="*.md")]),
               grep_result("t2", "x.md\ny.md", ["x.md", "y.md"], t=11)]
    _, ev = run_meters(entries, sizes)
    # call 1: known size 2000 - 20 served; call 2: nothing known -> 2 * 4096 - 9 served
    assert [(e.data["bytes_saved"], e.data["basis"]) for e in ev] == [(2000 - 20, "sizes"), (8192 - 9, "handles")]


def test_codelens_tools_paths_from_results_files_and_impact_lists():
    sizes = {"/r/a.py": 1000, "/r/b.py": 2000, "/r/c.py": 4000}
    search = {"results": [{"path": "/r/a.py", "line": 3}, {"path": "/r/b.py"}, {"path": "/r/a.py"}]}
    explore = {"files": [{"path": "/r/c.py"}]}
    impact = {"target": {"path": "/r/a.py"}, "callers": [{"path": "/r/b.py"}], "affected": ["/r/c.py"]}
    entries = [call("m1", 0, tools=[tool("t1", "mcp__codelens__cl_search", query="q")]), mcp_result("t1", search),
               call("m2", 1, tools=[tool("t2", "mcp__codelens__cl_explore", path="/r")]), mcp_result("t2", explore),
               call("m3", 2, tools=[tool("t3", "mcp__codelens__cl_impact", symbol="f")]), mcp_result("t3", impact),
               call("m4", 3, tools=[tool("t4", "mcp__codelens__cl_expand", handle="h1")]), mcp_result("t4", explore),
               call("m5", 4, tools=[tool("t5", "mcp__codelens__cl_save", label="n")]), mcp_result("t5", {"ok": True}),
               call("m6", 5, tools=[tool("t6", "mcp__codelens__cl_refresh")]), mcp_result("t6", {"ok": True})]
    _, ev = run_meters(entries, sizes)
    got = {e.data["tool"]: e.data for e in ev}
    assert set(got) == {"cl_search", "cl_explore", "cl_impact", "cl_expand", "cl_save"}  # cl_refresh untracked
    served = {k: len(json.dumps(d).encode()) for k, d in
              (("cl_search", search), ("cl_explore", explore), ("cl_impact", impact))}
    assert got["cl_search"]["bytes_saved"] == 3000 - served["cl_search"]
    assert got["cl_explore"]["bytes_saved"] == 4000 - served["cl_explore"]
    assert got["cl_impact"]["bytes_saved"] == 7000 - served["cl_impact"]
    assert got["cl_expand"]["bytes_saved"] == 0 and got["cl_expand"]["bytes_served"] > 0
    assert got["cl_save"]["bytes_saved"] == 0


def test_sizes_are_remembered_per_path(tmp_path):
    f = tmp_path / "big.py"
    f.write_bytes(b"z" * 1234)
    memo = SizeMemo()
    assert memo.get(str(f)) == 1234
    f.write_bytes(b"z")
    assert memo.get(str(f)) == 1234          # read once, at ingestion
    later = SizeMemo({str(f): 1234})
    f.unlink()
    assert later.get(str(f)) == 1234         # a deleted file keeps the size it had
    assert SizeMemo().get(str(tmp_path / "nope")) is None


def test_summary_is_labelled_estimated_with_per_tool_totals():
    entries = [call("m1", 0, tools=[tool("t1", "Glob", pattern="*")]), grep_result("t1", "a\nb", ["a", "b"])]
    s = build_summary({"f": result_file(entries, sizes=SizeMemo({}))}, price_lookup())["retrieval"]
    assert s["label"] == "estimated"
    assert s["tools"]["Glob"]["calls"] == 1 and s["tools"]["Glob"]["bytes_served"] == 3
    assert s["tools"]["Glob"]["bytes_saved"] == 2 * 4096 - 3


def make_usage_db(path, cols=("tool", "repo_id", "calls", "bytes_served", "bytes_saved"), rows=()):
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE usage ({', '.join(cols)})")
    con.executemany(f"INSERT INTO usage VALUES ({', '.join('?' * len(cols))})", rows)
    con.commit()
    con.close()


def test_usage_db_rows_by_tool_and_repo_tolerant_of_column_names(tmp_path):
    db = tmp_path / "usage.db"
    make_usage_db(db, cols=("tool_name", "repo", "call_count", "served_bytes", "saved_bytes"),
                  rows=[("cl_search", "r1", 3, 900, 12000), ("cl_search", "r2", 1, 100, 0),
                        ("cl_refresh", "r1", 9, 0, 0), ("cl_expand", "r1", 2, 500, 0)])
    before = db.read_bytes()
    got = read_usage_db(db)
    assert db.read_bytes() == before
    assert got == {"cl_search\tr1": {"calls": 3, "bytes_served": 900, "bytes_saved": 12000},
                   "cl_search\tr2": {"calls": 1, "bytes_served": 100, "bytes_saved": 0},
                   "cl_expand\tr1": {"calls": 2, "bytes_served": 500, "bytes_saved": 0}}
    assert read_usage_db(tmp_path / "absent.db") is None


def test_usage_db_snapshots_become_deltas_and_replace_transcript_figures_for_its_tools():
    snaps = [{"ts": "2026-11-01T09:00:00Z", "counters": {"cl_search\tr1": {"calls": 3, "bytes_served": 900, "bytes_saved": 12000}}},
             {"ts": "2026-11-02T09:00:00Z", "counters": {"cl_search\tr1": {"calls": 5, "bytes_served": 1500, "bytes_saved": 20000}}}]
    ext = [e.to_dict() for e in snapshot_events("usage-db", snaps)]
    assert [(e["ts"][:10], e["data"]["calls"], e["data"]["bytes_saved"]) for e in ext] == \
        [("2026-11-01", 3, 12000), ("2026-11-02", 2, 8000)]
    entries = [call("m1", 0, tools=[tool("t1", "mcp__codelens__cl_search", query="q")]),
               mcp_result("t1", {"results": [{"path": "/r/a.py"}]})]
    s = build_summary({"f": result_file(entries)}, price_lookup(), external=ext, usage_db_tools={"cl_search"},
                      since="2026-11-02")["retrieval"]
    # the transcript's cl_search call is the one usage.db recorded: usage.db's delta for the day, not both
    assert s["tools"]["cl_search"]["calls"] == 2 and s["tools"]["cl_search"]["sources"] == ["usage-db"]
