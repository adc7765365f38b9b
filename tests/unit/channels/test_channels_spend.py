"""Spend: calls folded by message.id, priced per day/model/project/session, and the data-quality block."""
from __future__ import annotations

import pytest

from service.report.summary import build_summary
from tests.support.transcripts import call, sidechain

from tests.support.channels import price_lookup, result_file

# claude-sonnet-4-5 per token: in 3e-6, out 15e-6, cache read 0.3e-6, write 5m 3.75e-6, write 1h 6e-6.
# in 1000, cw5 2000, cw1h 1000, cr 10000, out 500:
#   0.003 + 0.0075 + 0.006 + 0.003 + 0.0075 = $0.027
BIG = dict(inn=1000, cw5=2000, cw1h=1000, cr=10_000, out=500)
BIG_USD = 0.027


def spend(files, **kw):
    return build_summary(files, price_lookup(), **kw)


def test_call_cost_by_hand():
    s = spend({"f": result_file([call("m1", 0, **BIG)])})["spend"]
    assert s["total_usd"] == pytest.approx(BIG_USD)
    assert s["by_model"] == {"claude-sonnet-4-5": pytest.approx(BIG_USD)}


def test_one_response_over_several_lines_is_one_call_keeping_the_largest_revision():
    lines = [call("m1", 0, **{**BIG, "out": 3}), call("m1", 0, **BIG), call("m1", 0, **{**BIG, "out": 100})]
    s = spend({"f": result_file(lines)})["spend"]
    assert s["calls"] == 1 and s["total_usd"] == pytest.approx(BIG_USD)


def test_request_id_is_the_key_when_message_id_is_missing():
    a = call(None, 0, **BIG, request_id="req_1")
    s = spend({"f": result_file([a, a])})["spend"]
    assert s["calls"] == 1 and s["total_usd"] == pytest.approx(BIG_USD)


def test_a_call_copied_into_another_file_counts_once():
    s = spend({"f1": result_file([call("m1", 0, **BIG)], session="a"),
               "f2": result_file([call("m1", 0, **BIG)], session="b")})["spend"]
    assert s["calls"] == 1


def test_a_call_copied_into_a_resumed_session_is_booked_where_and_when_it_first_happened():
    """Older Claude Code writes a resumed session's earlier calls again into the continuation file, stamped
    with the copy's time; the copy's file sorts first here, and its day is another."""
    original = {**call("m1", 0, **BIG), "sessionId": "first"}
    copy = {**call("m1", 24 * 3600, **BIG), "sessionId": "continued"}
    own = {**call("m2", 24 * 3600 + 5, **BIG), "sessionId": "continued"}
    files = {"/p/a-continued.jsonl": result_file([copy, own], session="continued"),
             "/p/b-first.jsonl": result_file([original], session="first")}
    s = spend(files)["spend"]
    assert s["calls"] == 2
    assert s["by_day"] == {"2026-11-01": pytest.approx(BIG_USD), "2026-11-02": pytest.approx(BIG_USD)}
    assert {sid: v["calls"] for sid, v in s["by_session"].items()} == {"first": 1, "continued": 1}


def test_a_subagents_call_in_a_progress_line_and_in_its_own_file_counts_once():
    sub_call = sidechain(call("s1", 5, **BIG))
    progress = {"type": "progress", "sessionId": "sess", "timestamp": sub_call["timestamp"],
                "data": {"type": "agent_progress", "message": {k: v for k, v in sub_call.items() if k != "sessionId"}}}
    main = result_file([call("m1", 0, **BIG), progress], session="sess")
    alone = spend({"main": main})["spend"]
    assert alone["calls"] == 2 and alone["subagents_usd"] == pytest.approx(BIG_USD)
    both = spend({"main": main, "sub": result_file([sub_call], subagent=True, session="sess")})["spend"]
    assert both["calls"] == 2 and both["subagents_usd"] == pytest.approx(BIG_USD)
    assert both["total_usd"] == pytest.approx(2 * BIG_USD)


def test_synthetic_entries_are_not_calls():
    s = spend({"f": result_file([call("e1", 0, inn=0, out=0, model="<synthetic>")])})
    assert s["spend"]["calls"] == 0 and s["data_quality"]["unpriced_models"] == []


def test_subagents_are_spend_kept_apart_inline_and_in_files():
    main = result_file([call("m1", 0, **BIG), sidechain(call("s1", 5, **BIG))], session="sess")
    sub = result_file([call("s2", 6, **BIG)], subagent=True, session="sess")
    s = spend({"main": main, "sub": sub})["spend"]
    assert s["total_usd"] == pytest.approx(3 * BIG_USD)
    assert s["subagents_usd"] == pytest.approx(2 * BIG_USD)
    assert s["main_usd"] == pytest.approx(BIG_USD)
    from tests.support.transcripts import SID  # the entries' sessionId wins over the file name
    assert s["by_session"][SID]["subagents_usd"] == pytest.approx(2 * BIG_USD)


def test_by_day_and_period_filter():
    from tests.support.transcripts import T0  # 2026-11-01 09:00 UTC
    day2 = 24 * 3600
    f = result_file([call("m1", 0, **BIG), call("m2", day2, **BIG)])
    s = spend({"f": f})["spend"]
    assert s["by_day"] == {"2026-11-01": pytest.approx(BIG_USD), "2026-11-02": pytest.approx(BIG_USD)}
    assert spend({"f": f}, since="2026-11-02")["spend"]["calls"] == 1
    assert spend({"f": f}, until="2026-11-01")["spend"]["calls"] == 1
    assert spend({"f": f}, since="2026-11-03")["spend"]["calls"] == 0
    assert T0.day == 1


def test_unpriced_models_are_listed_not_guessed():
    s = spend({"f": result_file([call("m1", 0, **BIG, model="gpt-4o"), call("m2", 1, **BIG)])})
    assert s["data_quality"]["unpriced_models"] == ["gpt-4o"]
    assert s["data_quality"]["unpriced"]["gpt-4o"]["calls"] == 1
    assert s["spend"]["total_usd"] == pytest.approx(BIG_USD)


def test_placeholder_output_calls():
    # kept revision reports output_tokens 1 while the response has a tool_use: a placeholder
    from tests.support.transcripts import tool
    placeholder = call("m1", 0, inn=10, out=1, tools=[tool("t1", "Read", file_path="/a")])
    fine = call("m2", 1, inn=10, out=40)
    empty = call("m3", 2, inn=10, out=0)
    empty["message"]["content"] = []
    s = spend({"f": result_file([placeholder, fine, empty])})["data_quality"]
    assert s["placeholder_output_calls"] == 1
    assert "output_tokens <= 1" in s["placeholder_output_definition"]


def test_placeholder_outputs_are_estimated_from_what_they_wrote_and_shown_apart():
    from service.engine_setup.tokenizer import encode_len
    from tests.support.transcripts import tool

    words = "the quick brown fox jumps over the lazy dog " * 40
    thinking = call("m1", 0, inn=10, out=1)
    thinking["message"]["content"] = [{"type": "thinking", "thinking": words}]
    answer = call("m1", 0, inn=10, out=1, tools=[tool("t1", "Read", file_path="/a/b.py")])
    finished = call("m2", 1, inn=10, out=1)  # the same shape, but its usage is final: 1 token is what it wrote
    finished["message"]["stop_reason"] = "end_turn"
    fine = call("m3", 2, inn=10, out=400)
    for line in (thinking, answer, fine):
        line["message"]["stop_reason"] = None
    s = spend({"f": result_file([thinking, answer, finished, fine])})
    wrote = encode_len(words) + encode_len('Read{"file_path":"/a/b.py"}')
    assert s["data_quality"]["placeholder_output_calls"] == 2
    assert s["data_quality"]["placeholder_output_estimate_usd"] == pytest.approx((wrote - 1) * 15e-6)
    assert s["spend"]["total_usd"] == pytest.approx(3 * 10 * 3e-6 + (1 + 1 + 400) * 15e-6)  # as recorded


def cost_state(total, t=0):
    from tests.support.transcripts import SID
    return {"type": "cost-state", "sessionId": SID, "totalCostUSD": total,
            "modelUsage": {"claude-sonnet-4-5": {"costUSD": total}}}


def test_cost_state_difference_uses_the_last_entry_and_calls_before_it():
    # ours for the calls before the last cost-state: 0.027; Claude Code says 0.03 -> (0.027 - 0.03) / 0.03 = -10%
    entries = [call("m1", 0, **BIG), cost_state(0.01), cost_state(0.03), call("m2", 10, **BIG)]
    dq = spend({"f": result_file(entries, session="s")})["data_quality"]
    assert dq["cost_state_diff_pct"] == pytest.approx(-10.0)
    assert dq["cost_state_sessions"][0]["ours_usd"] == pytest.approx(BIG_USD)


def test_cost_state_includes_the_sessions_subagents_and_is_null_without_entries():
    main = result_file([call("m1", 0, **BIG), cost_state(0.054)], session="s")
    sub = result_file([call("s1", 1, **BIG)], subagent=True, session="s")
    assert spend({"a": main, "b": sub})["data_quality"]["cost_state_diff_pct"] == pytest.approx(0.0)
    assert spend({"a": result_file([call("m1", 0, **BIG)])})["data_quality"]["cost_state_diff_pct"] is None


def test_a_sessions_model_is_its_latest_main_chain_calls_whatever_the_order_files_arrive_in():
    """Pinch events without a model are priced with it."""
    from service.report.summary import spend_tally

    def rec(key, ts, model, side=False):
        return [key, ts, model, side, 10, 0, 0, 0, 5, True, None, None]  # standard speed and geography

    def result(calls, *, subagent=False):
        return {"session_id": "s", "project": "-p", "cwd": None, "subagent": subagent, "calls": calls,
                "events": [], "cost_state": None}

    early = result([rec("a", "2026-11-01T10:00:00Z", "claude-sonnet-4-5"),
                    rec("b", "2026-11-01T11:00:00Z", "claude-opus-4-7"),
                    rec("c", "2026-11-01T12:00:00Z", "claude-haiku-4-5", side=True)])
    late = result([rec("d", "2026-11-02T09:00:00Z", "claude-sonnet-4-5")])
    sub = result([rec("e", "2026-11-03T09:00:00Z", "claude-haiku-4-5")], subagent=True)
    for order in (["early", "late", "sub"], ["sub", "late", "early"]):
        tally = spend_tally(price_lookup())
        for name in order:
            tally.add(f"/{name}.jsonl", {"early": early, "late": late, "sub": sub}[name])
        assert tally.session_models() == {"s": "claude-sonnet-4-5"}
    tally = spend_tally(price_lookup())
    tally.add("/early.jsonl", early)
    assert tally.session_models() == {"s": "claude-opus-4-7"}  # not the inline subagent's call
