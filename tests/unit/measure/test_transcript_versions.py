"""Older and newer transcript shapes (1.0.x, 2.0.x, 2.1.x), made by tests/support/transcripts.versioned_story.

The same session written as each generation of Claude Code wrote it: usage without the cache_creation
breakdown (1.0) or with server_tool_use, speed and iterations (2.1); one response over several lines
whose output_tokens grow (1.0) or repeat (2.0, after a thinking line); a never-updated streaming
placeholder (1.0); errors bare (1.0, 2.0) or in <tool_use_error> (2.1); MultiEdit (1.0); the subagent
inline as sidechain entries (1.0), in a flat agent-<id>.jsonl (2.0) or in <session>/subagents/ with its
meta.json (2.1); entry types that came and went (summary, queue-operation, permission-mode,
last-prompt, system entries with and without subtype). Expected figures are the story's own facts.
"""
from __future__ import annotations


import pytest

from service.report.scan import ScanCache, discover, scan
from service.channels.spend import is_placeholder_output
from service.engine_setup.engines import load_prices, replay_file
from tests.support.transcripts import VERSIONS, priced_by_hand, versioned_story, write_story

GENERATIONS = sorted(VERSIONS)


@pytest.fixture(params=GENERATIONS)
def laid_out(request, tmp_path):
    gen = request.param
    story = versioned_story(gen)
    return gen, story, write_story(tmp_path / "projects", gen, story), tmp_path / "projects"


def test_the_scanner_finds_each_layout_and_counts_what_the_story_holds(laid_out):
    gen, story, paths, projects = laid_out
    files = discover(projects)
    assert {f.path for f in files} == {str(p) for p in paths.values() if p}
    assert [f.subagent for f in files if f.path == str(paths["agent"])] == ([True] if paths["agent"] else [])
    results = scan(files, ScanCache(None), workers=1)
    events = [e for r in results.values() for e in r["events"]]
    calls = [c for r in results.values() for c in r["calls"]]
    kinds = [(e["kind"], e["data"].get("miss") or e["data"].get("tool")) for e in events]
    facts = story["facts"]
    assert sum(k == "str_replace" for k, _ in kinds) == facts["edits_ok"] == 2  # one in the subagent
    assert kinds.count(("str_replace_miss", "not_found")) == facts["not_found"] == 1
    assert kinds.count(("str_replace_miss", "ambiguous")) == facts["ambiguous"] == 1
    assert kinds.count(("str_replace_error", "other")) == facts["other"] == 1  # rejected; the Write is no edit
    assert kinds.count(("tool", "Grep")) == facts["grep"] and kinds.count(("tool", "Glob")) == facts["glob"]
    assert sorted(c[0] for c in calls) == sorted(c["id"] for c in facts["main_calls"] + facts["sub_calls"])
    assert sum(is_placeholder_output(c) for c in calls) == facts["placeholders"] == (1 if gen == "1.0" else 0)
    assert all(r["malformed"] == 0 for r in results.values())


def test_replay_keeps_the_subagent_out_of_the_context_and_bills_the_main_chain(laid_out):
    gen, story, paths, _ = laid_out
    events = list(replay_file(paths["main"], load_prices()))
    calls = [e for e in events if e["event"] == "call"]
    main = story["facts"]["main_calls"]
    assert [c["key"] for c in calls] == [c["id"] for c in main]  # no sidechain call, even inline (1.0)
    last = main[-1]["usage"]
    assert calls[-1]["totalStock"] == (last["input_tokens"] + last["cache_creation_input_tokens"]
                                       + last["cache_read_input_tokens"])
    end = events[-1]
    model = VERSIONS[gen]["model"]
    bill_in = sum(s["bill_in_usd"] for s in end["segments"])
    assert bill_in == pytest.approx(priced_by_hand(model, [{"usage": dict(c["usage"], output_tokens=0)} for c in main]),
                                    rel=1e-9)
