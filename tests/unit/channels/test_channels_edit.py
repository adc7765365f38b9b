"""Edit channel (seed: edit-metering-v1): str_replace calls, old_string tokens, misses, anchored patches."""
from __future__ import annotations

import json

import pytest

from service.channels.edit import EditMeter, classify_miss, is_anchored_tool
from service.channels.ledgers import counter_delta, lean_ctx_path, read_lean_ctx
from service.report.summary import build_summary
from service.engine_setup.tokenizer import encode_len
from tests.support.transcripts import call, result, tool

from tests.support.channels import price_lookup, result_file


def feed_all(entries):
    meter = EditMeter(encode_len)
    out = []
    for e in entries:
        out += meter.feed(e)
    return out


def test_successful_edit_books_old_string_tokens_priced_at_output():
    # "hello world" is 2 o200k tokens (hand check: "hello", " world"); ratio 1.0
    entries = [call("m1", 0, tools=[tool("t1", "Edit", file_path="/p/a.py", old_string="hello world", new_string="x")]),
               result("t1", "The file /p/a.py has been updated successfully.", 1)]
    events = feed_all(entries)
    assert [(e.kind, e.data["old_string_tokens"], e.data["ops"]) for e in events] == [("str_replace", 2, 1)]
    s = build_summary({"f": result_file(entries)}, price_lookup())
    assert s["edit"]["str_replace_calls"] == 1
    assert s["edit"]["str_replace_old_string_tokens"] == 2
    # claude-sonnet-4-5 output: $15 per million -> 2 * 15e-6 = 3e-5 USD
    assert s["edit"]["str_replace_old_string_usd"] == pytest.approx(3e-5)


def test_multiedit_is_one_call_with_every_old_string_paid():
    edits = [{"old_string": "hello world", "new_string": "a"}, {"old_string": "def clamp(v, lo, hi):", "new_string": "b"}]
    events = feed_all([call("m1", 0, tools=[tool("t1", "MultiEdit", file_path="/p/a.py", edits=edits)]),
                       result("t1", "Applied 2 edits", 1)])
    # 2 + 8 tokens (o200k: "def clamp(v, lo, hi):" is 8)
    assert [(e.kind, e.data["ops"], e.data["old_string_tokens"]) for e in events] == [("str_replace", 2, 10)]


def test_misses_are_split_into_not_found_and_ambiguous_and_other_refusals_kept_apart():
    texts = {
        "t1": "<tool_use_error>String to replace not found in file.\nString: foo</tool_use_error>",
        "t2": "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false.</tool_use_error>",
        "t3": "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
        "t4": "The user doesn't want to proceed with this tool use.",
    }
    entries = []
    for i, (tid, text) in enumerate(texts.items()):
        entries.append(call(f"m{i}", i * 10, tools=[tool(tid, "Edit", file_path="/p/a.py", old_string="foo", new_string="x")]))
        entries.append(result(tid, text, i * 10 + 1, is_error=True))
    events = feed_all(entries)
    assert [(e.kind, e.data["miss"]) for e in events] == [
        ("str_replace_miss", "not_found"), ("str_replace_miss", "ambiguous"),
        ("str_replace_error", "other"), ("str_replace_error", "other")]
    s = build_summary({"f": result_file(entries)}, price_lookup())["edit"]
    assert s["str_replace_calls"] == 0 and s["str_replace_old_string_tokens"] == 0  # a miss pays no "success" tokens
    assert s["str_replace_misses"] == {"not_found": 1, "ambiguous": 1, "total": 2}
    assert s["str_replace_other_errors"] == 2


def test_classify_miss_texts_seen_in_transcripts():
    assert classify_miss("String to replace not found in file.") == "not_found"
    assert classify_miss("Found 3 matches of the string to replace, but replace_all is false.") == "ambiguous"
    assert classify_miss("File has not been read yet.") == "other"


def test_write_create_is_not_a_str_replace_and_books_nothing():
    events = feed_all([call("m1", 0, tools=[tool("t1", "Write", file_path="/p/n.md", content="# hi")]),
                       result("t1", "File created successfully at: /p/n.md", 1)])
    assert events == []


def test_anchored_patch_tools_any_server_prefix_ops_and_conflicts():
    assert is_anchored_tool("mcp__lean-ctx__ctx_patch") and is_anchored_tool("ctx_patch")
    assert not is_anchored_tool("mcp__lean-ctx__ctx_edit")
    ops = [{"op": "replace", "line": 3, "hash": "ab12"}, {"op": "create", "path": "n.py"}, {"op": "insert", "line": 9}]
    entries = [call("m1", 0, tools=[tool("t1", "mcp__lean-ctx__ctx_patch", path="a.py", ops=ops)]),
               result("t1", "patched 3 ops", 1),
               call("m2", 10, tools=[tool("t2", "mcp__lean-ctx__ctx_patch", path="a.py", ops=ops[:1])]),
               result("t2", "CONFLICT: anchor 3:ab12 is stale", 11)]
    events = feed_all(entries)
    assert [(e.kind, e.data.get("ops"), e.data.get("create_ops")) for e in events] == [
        ("anchored", 3, 1), ("anchored_conflict", None, None)]
    # a transcript cannot see the replaced span: avoided tokens 0, nothing extrapolated
    assert events[0].data["avoided_output_tokens"] == 0
    s = build_summary({"f": result_file(entries)}, price_lookup())["edit"]
    assert (s["anchored_calls"], s["anchored_ops"], s["anchored_conflicts"]) == (1, 3, 1)


def test_tool_call_without_result_yet_books_nothing_and_result_is_counted_once():
    entries = [call("m1", 0, tools=[tool("t1", "Edit", file_path="/p/a.py", old_string="hello world", new_string="x")])]
    assert feed_all(entries) == []
    dup = result("t1", "ok", 1)
    assert len(feed_all(entries + [dup, dup])) == 1


# -- lean-ctx edit_metering.json ------------------------------------------------------------

def test_lean_ctx_path_respects_data_dir(tmp_path):
    assert lean_ctx_path({"LEAN_CTX_DATA_DIR": str(tmp_path)}) == tmp_path / "edit_metering.json"
    assert lean_ctx_path({}).name == "edit_metering.json" and lean_ctx_path({}).parent.name == ".lean-ctx"


def test_lean_ctx_partial_and_missing_fields_default_to_zero(tmp_path):
    p = tmp_path / "edit_metering.json"
    p.write_text(json.dumps({"anchored_calls": 4, "anchored_ops": 9, "str_replace_misses": "n/a", "future_field": 1}))
    got = read_lean_ctx(p)
    assert got == {"anchored_calls": 4, "anchored_ops": 9, "anchored_avoided_output_tokens": 0, "anchored_conflicts": 0,
                   "str_replace_calls": 0, "str_replace_old_string_tokens": 0, "str_replace_misses": 0}
    assert read_lean_ctx(tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert read_lean_ctx(tmp_path / "bad.json") is None


def test_snapshot_deltas_are_per_field_and_never_negative():
    a = {"anchored_calls": 4, "anchored_avoided_output_tokens": 100}
    b = {"anchored_calls": 6, "anchored_avoided_output_tokens": 130}
    assert counter_delta(None, a) == a
    assert counter_delta(a, b) == {"anchored_calls": 2, "anchored_avoided_output_tokens": 30}
    # a reset (file deleted, counters restart): what was counted since the reset, never a negative delta
    assert counter_delta(b, {"anchored_calls": 1, "anchored_avoided_output_tokens": 5}) == \
        {"anchored_calls": 1, "anchored_avoided_output_tokens": 5}


def test_lean_ctx_ledger_wins_for_anchored_and_adds_its_own_str_replace(tmp_path):
    from service.channels.ledgers import snapshot_events
    entries = [call("m1", 0, tools=[tool("t1", "mcp__lean-ctx__ctx_patch", ops=[{"op": "replace"}])]),
               result("t1", "ok", 1)]
    snaps = [{"ts": "2026-11-01T09:00:00Z", "counters": {"anchored_calls": 1, "anchored_ops": 1,
                                                         "anchored_avoided_output_tokens": 40, "anchored_conflicts": 0,
                                                         "str_replace_calls": 2, "str_replace_old_string_tokens": 30,
                                                         "str_replace_misses": 1}}]
    ext = [e.to_dict() for e in snapshot_events("lean-ctx", snaps)]
    s = build_summary({"f": result_file(entries)}, price_lookup(), external=ext, lean_ctx_present=True)["edit"]
    # the ctx_patch call in the transcript is the same call lean-ctx recorded: counted once
    assert (s["anchored_calls"], s["anchored_avoided_output_tokens"]) == (1, 40)
    assert s["by_source"]["transcript"]["anchored_calls"] == 1
    # lean-ctx's ctx_edit path is its own tool: added; its misses are not-found responses
    assert s["str_replace_calls"] == 2 and s["str_replace_old_string_tokens"] == 30
    assert s["str_replace_misses"]["not_found"] == 1
