"""Turn records built from transcript entries (service/history/turns.py)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from service.history.turns import TurnBuilder, build_turns, prompt_text
from tests.support.corpus import scenario_session, scenario_sessions
from tests.fakeapi.make_fixtures import WORKSPACE
from tests.support.transcripts import read_jsonl


def user(text, **extra):
    return {"type": "user", "message": {"role": "user", "content": text}, **extra}


def assistant(mid, blocks, usage=None, model="claude-sonnet-4-5", **extra):
    return {"type": "assistant", "message": {"id": mid, "model": model, "content": blocks,
                                             "usage": usage or {"input_tokens": 1, "output_tokens": 1}}, **extra}


def tool_use(uid, name, path):
    return {"type": "tool_use", "id": uid, "name": name, "input": {"file_path": path}}


def result(uid, is_error=False):
    block = {"type": "tool_result", "tool_use_id": uid, "content": "x"}
    if is_error:
        block["is_error"] = True
    return {"type": "user", "message": {"role": "user", "content": [block]},
            "toolUseResult": "Error" if is_error else {"filePath": "p"}}


def test_what_counts_as_a_human_prompt():
    assert prompt_text(user("fix the bug")) == "fix the bug"
    assert prompt_text({"type": "user", "message": {"content": [{"type": "text", "text": "hi"}]}}) == "hi"
    assert prompt_text(user("x", isMeta=True)) is None
    assert prompt_text(user("summary", isCompactSummary=True)) is None
    assert prompt_text(user("x", isSidechain=True)) is None
    assert prompt_text(result("t1")) is None
    assert prompt_text(user("<command-name>/clear</command-name>\n<command-message>clear</command-message>")) is None
    assert prompt_text(user("<local-command-stdout></local-command-stdout>")) is None
    assert prompt_text(user("<local-command-caveat>Caveat: ...</local-command-caveat>")) is None
    assert prompt_text(user("<task-notification>\n<task-id>a</task-id>", promptSource="system")) is None
    assert prompt_text({"type": "assistant", "message": {"content": "hi"}}) is None
    assert prompt_text({"type": "user", "message": {"content": 42}}) is None
    assert prompt_text({"type": "user"}) is None


def test_paths_read_and_changed_and_failed_edits_left_out():
    entries = [
        user("refactor util", sessionId="s1", timestamp="2026-01-01T00:00:00Z", uuid="u1"),
        assistant("m1", [tool_use("t1", "Read", "/p/a.py"), tool_use("t2", "Read", "/p/b.py")]),
        result("t1"), result("t2"),
        assistant("m2", [tool_use("t3", "Edit", "/p/a.py"), tool_use("t4", "Edit", "/p/c.py")]),
        result("t3"), result("t4", is_error=True),
        assistant("m3", [tool_use("t5", "Write", "/p/new.md"), tool_use("t6", "Grep", "/p")]),
        result("t5"), result("t6"),
        assistant("m4", [{"type": "text", "text": "done"}], timestamp="2026-01-01T00:01:00Z"),
        user("next thing"),
    ]
    turns = build_turns(entries)
    assert len(turns) == 2
    first = turns[0]
    assert first.session_id == "s1" and first.index == 0 and first.prompt_uuid == "u1"
    assert first.paths_read == ["/p/a.py", "/p/b.py"]
    assert first.paths_changed == ["/p/a.py", "/p/new.md"]  # the failed edit of c.py changed nothing
    assert first.calls == 4 and first.reply == "done"
    assert first.ended_at == "2026-01-01T00:01:00Z"
    assert turns[1].index == 1 and turns[1].calls == 0


def test_one_response_on_several_lines_counts_once_with_the_largest_figures():
    entries = [
        user("go"),
        assistant("m1", [{"type": "text", "text": "a"}], {"input_tokens": 3, "output_tokens": 1,
                                                           "cache_read_input_tokens": 100, "cache_creation_input_tokens": 50}),
        assistant("m1", [tool_use("t1", "Read", "/x")], {"input_tokens": 3, "output_tokens": 90,
                                                          "cache_read_input_tokens": 100, "cache_creation_input_tokens": 50}),
        assistant("syn", [{"type": "text", "text": "No response requested."}], {"input_tokens": 0, "output_tokens": 0},
                  model="<synthetic>"),
    ]
    seen = []

    def cost_of(model, usage):
        seen.append((model, usage["output_tokens"]))
        return usage["output_tokens"] * 0.001

    (turn,) = build_turns(entries, cost_of=cost_of)
    assert (turn.calls, turn.input_tokens, turn.output_tokens) == (1, 3, 90)
    assert (turn.cache_read_tokens, turn.cache_creation_tokens) == (100, 50)
    assert seen == [("claude-sonnet-4-5", 90)]
    assert abs(turn.cost_usd - 0.09) < 1e-12


def test_a_turns_cost_takes_each_call_at_its_speed_and_geography():
    """Issue 38: Opus 5.5 at $4 / $20 per million; fast mode 2x, US-only 1.1x, stacked."""
    from service.history.turns import price_cost
    from service.engine_setup.engines import load_prices

    usage = {"input_tokens": 1_000, "output_tokens": 500, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 0}
    by_hand = (1_000 * 4 + 500 * 20) / 1e6  # $0.014 at standard
    for extra, factor in (({}, 1.0), ({"speed": "fast"}, 2.0), ({"inference_geo": "us"}, 1.1),
                          ({"speed": "fast", "inference_geo": "us"}, 2.2), ({"inference_geo": ""}, 1.0)):
        entries = [user("go"), assistant("m1", [], {**usage, **extra}, model="claude-opus-5-5")]
        (turn,) = build_turns(entries, cost_of=price_cost(load_prices()))
        assert turn.cost_usd == pytest.approx(factor * by_hand, rel=1e-12)
        assert turn.models == ["claude-opus-5-5-fast" if extra.get("speed") else "claude-opus-5-5"]


def test_unpriced_model_makes_the_cost_unknown_not_zero():
    entries = [user("go"), assistant("m1", [], {"input_tokens": 5, "output_tokens": 5}, model="mystery-1")]
    (turn,) = build_turns(entries, cost_of=lambda model, usage: None)
    assert turn.cost_usd is None and turn.input_tokens == 5


def test_store_prompts_false_keeps_every_text_out():
    entries = [user("my secret plan"), assistant("m1", [{"type": "text", "text": "the secret answer"}])]
    (turn,) = build_turns(entries, store_prompts=False)
    assert turn.prompt is None and turn.preview is None and turn.reply is None
    assert "secret" not in json.dumps(turn.as_dict())
    assert turn.calls == 1


def test_real_clear_then_continue_transcripts():
    by_prompt = {}
    for path in scenario_sessions("clear"):
        for turn in build_turns(read_jsonl(path)):
            by_prompt[turn.preview] = turn
            assert turn.session_id == path.stem
    assert set(by_prompt) == {"CLEAR-FIRST read a.py", "CLEAR-SECOND read a.py again"}  # /clear is not a turn
    for turn in by_prompt.values():
        assert turn.paths_read == [f"{WORKSPACE}/a.py"]
        assert turn.calls >= 1 and turn.output_tokens > 0


def test_real_compaction_and_subagent_notification_do_not_start_turns():
    turns = build_turns(read_jsonl(scenario_session("subagent-and-compact")))
    assert [t.preview.split()[0] for t in turns] == ["TASK-A", "TASK-B"]
    assert f"{WORKSPACE}/src/util.py" in turns[0].paths_changed
    assert f"{WORKSPACE}/src/api.py" in turns[1].paths_changed


ENTRY = st.one_of(
    st.builds(lambda t: user(t), st.sampled_from(["a", "b", "<command-name>/x</command-name>"])),
    st.builds(lambda i, o: assistant(f"m{i}", [tool_use(f"t{i}", "Read", f"/f{i}")], {"input_tokens": 2, "output_tokens": o}),
              st.integers(0, 5), st.integers(0, 50)),
    st.builds(lambda i, err: result(f"t{i}", err), st.integers(0, 5), st.booleans()),
    st.just({"type": "summary"}), st.just("not a dict"),
)


@given(st.lists(ENTRY, max_size=40))
@settings(max_examples=200, deadline=None)
def test_incremental_feed_equals_whole_build_and_turns_are_numbered(entries):
    builder = TurnBuilder()
    fed = []
    for entry in entries:
        fed.extend(builder.feed(entry))
    fed.extend(builder.finish())
    whole = build_turns(entries)
    assert [t.as_dict() for t in fed] == [t.as_dict() for t in whole]
    assert [t.index for t in whole] == list(range(len(whole)))
    assert len(whole) == sum(1 for e in entries if isinstance(e, dict) and prompt_text(e) is not None)


@given(st.lists(ENTRY, max_size=30), st.data())
@settings(max_examples=200, deadline=None)
def test_repeating_a_response_line_changes_nothing(entries, data):
    """Claude Code writes one response as several lines with the same message.id."""
    indexes = [i for i, e in enumerate(entries) if isinstance(e, dict) and e.get("type") == "assistant"]
    if not indexes:
        return
    i = data.draw(st.sampled_from(indexes))
    doubled = entries[: i + 1] + [entries[i]] + entries[i + 1:]
    assert [t.as_dict() for t in build_turns(doubled)] == [t.as_dict() for t in build_turns(entries)]


def _fixture_entries(name):
    return [(path, read_jsonl(path)) for path in scenario_sessions(name)]


class _Session:
    """What LiveSession hands its entry sink: a path, an engine (identity only) and an id."""

    def __init__(self, path):
        self.path, self.engine, self.session_id = path, object(), path.stem


@pytest.mark.parametrize("store_prompts", [True, False])
def test_turn_sink_writes_searchable_records_into_the_real_store(tmp_path, store_prompts):
    from service.store import Store
    from service.history.sink import TurnSink

    store = Store(tmp_path / "ctxlamp.db")
    sink = TurnSink(store.history.add_turn_records, store_prompts=store_prompts)
    (path, entries), = [(p, e) for p, e in _fixture_entries("subagent-and-compact")]
    session = _Session(path)
    for entry in entries:
        sink(session, entry)
    sink.finish(session)
    saved = store.handoffs.save_handoff("t", "b", [], str(WORKSPACE), from_session=session.session_id)
    lineage = saved["lineage_id"]
    page = store.history.history_page(lineage, 1)
    assert page["total"] == 2
    previews = [t["prompt_preview"] for t in page["turns"]]
    hits, total = store.history.history_locate(lineage, "src/api.py")
    assert total == 1 and hits[0]["turn"] == 1
    if store_prompts:
        assert previews[0].startswith("TASK-A") and previews[1].startswith("TASK-B")
        assert store.history.history_search(lineage, "check api")[1] == 1
        assert store.history.history_search(lineage, "checked")[1] == 1  # a word only the model's answer had
    else:
        assert previews == [None, None]
        raw = b"".join(p.read_bytes() for p in tmp_path.glob("ctxlamp.db*"))
        assert b"TASK-B check" not in raw
    assert all(t["tokens"] > 0 for t in page["turns"])
    store.close()


def test_turn_sink_writes_each_turn_once_per_flush_in_its_newest_state():
    """A startup read rewrote the running turn after every answer of the model, one transaction each; the
    sink now hands the store each turn it saved once per flush (one transaction), in its latest state."""
    from service.history.sink import TurnSink

    batches: list[list[dict]] = []
    sink = TurnSink(batches.append, clock=lambda: 0.0)
    (path, entries), = [(p, e) for p, e in _fixture_entries("subagent-and-compact")]
    session = _Session(path)
    for entry in entries:
        sink(session, entry)
    assert batches == []  # nothing written before the reader's flush
    sink.flush()
    sink.finish(session)
    first, last = batches  # the read's flush, then the open turn that finish closes
    assert [r["turn"] for r in first] == [0, 1] and [r["turn"] for r in last] == [1]
    assert first[0]["prompt_preview"].startswith("TASK-A") and first[1]["prompt_preview"].startswith("TASK-B")
    assert all(r["tokens"] > 0 for r in first + last)
