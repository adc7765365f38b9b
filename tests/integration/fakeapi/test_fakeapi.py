"""The project's fake Anthropic API (tests/fakeapi): what the fixtures' usage figures rest on.

Figures are checked by hand from the rule in server.py's docstring: every tool, system block and
message block counts ceil(bytes / 4) of its canonical JSON (cache_control left out).
"""
from __future__ import annotations

import http.client
import json

import pytest

from tests.fakeapi.scenario import generated_source, substitute
from tests.fakeapi.server import FakeAnthropic, PromptCache, Script, prompt_pieces

EPH = {"type": "ephemeral"}


def tokens_of(role: str, block: dict) -> int:
    text = role + ":" + json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True,
                                   separators=(",", ":"))
    return -(-len(text.encode()) // 4)


def request(model="claude-sonnet-4-5", blocks=(), system_ttl=None, **extra) -> dict:
    system = [{"type": "text", "text": "You are a test." * 40, "cache_control": dict(EPH, **(
        {"ttl": system_ttl} if system_ttl else {}))}]
    return {"model": model, "system": system, "messages": [{"role": "user", "content": list(blocks)}], **extra}


def text(t: str, cached=False) -> dict:
    return {"type": "text", "text": t, **({"cache_control": EPH} if cached else {})}


def test_usage_follows_breakpoints_and_what_an_earlier_request_cached():
    cache = PromptCache()
    sys_tokens = tokens_of("system", {"type": "text", "text": "You are a test." * 40})
    first = cache.usage("m", prompt_pieces(request(blocks=[text("hello", cached=True), text("tail")])))
    hello, tail = tokens_of("user", text("hello")), tokens_of("user", text("tail"))
    assert first["cache_read_input_tokens"] == 0
    assert first["cache_creation_input_tokens"] == sys_tokens + hello
    assert first["input_tokens"] == tail
    # the same prefix plus more: the earlier breakpoint's prefix is read, the rest written
    second = cache.usage("m", prompt_pieces(request(blocks=[text("hello"), text("more", cached=True)])))
    assert second["cache_read_input_tokens"] == sys_tokens + hello
    assert second["cache_creation_input_tokens"] == tokens_of("user", text("more"))
    assert second["input_tokens"] == 0
    # another model has its own cache
    other = cache.usage("n", prompt_pieces(request(blocks=[text("hello", cached=True)])))
    assert other["cache_read_input_tokens"] == 0 and other["cache_creation_input_tokens"] == sys_tokens + hello


def test_one_hour_breakpoints_are_written_as_1h_and_entries_expire():
    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    body = request(blocks=[text("hello", cached=True)], system_ttl="1h")
    sys_tokens = tokens_of("system", {"type": "text", "text": "You are a test." * 40})
    u = cache.usage("m", prompt_pieces(body))
    assert u["cache_creation"] == {"ephemeral_1h_input_tokens": sys_tokens,
                                   "ephemeral_5m_input_tokens": tokens_of("user", text("hello"))}
    now[0] = 301.0  # the 5-minute entry is gone, the 1-hour one is not
    again = cache.usage("m", prompt_pieces(body))
    assert again["cache_read_input_tokens"] == sys_tokens
    assert again["cache_creation"]["ephemeral_5m_input_tokens"] == tokens_of("user", text("hello"))


def test_script_steps_follow_the_prompt_and_resolve_references():
    script = Script({"conversations": [
        {"match": "TASK", "steps": [{"say": "looking", "tools": [{"tool": "Read", "input": {"file_path": "/a"}},
                                                                  {"tool": "Grep", "input": {"pattern": "x"}}]},
                                    {"tool": "Use", "input": {"token": "{{re:token: (\\w+)}}"}},
                                    {"text": "done"}]}],
        "summary": "S"})
    first = script.reply({"messages": [{"role": "user", "content": [text("<system-reminder>x</system-reminder>"),
                                                                     text("TASK one")]}]})
    assert [b["type"] for b in first.blocks] == ["text", "tool_use", "tool_use"] and first.stop_reason == "tool_use"
    history = [{"role": "user", "content": "TASK one"}, {"role": "assistant", "content": first.blocks},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "token: abc1"}]}]
    second = script.reply({"messages": history})
    assert second.step == 1 and second.blocks[0]["input"] == {"token": "abc1"}
    compact = script.reply({"messages": history + [{"role": "user", "content": "Your task is to create a "
                                                    "detailed summary of the conversation so far"}]})
    assert compact.kind == "compaction" and "<summary>\nS\n</summary>" in compact.blocks[0]["text"]
    assert script.reply({"messages": [{"role": "user", "content": "what title?"}]}).kind == "fallback"


def post(url: str, path: str, body: dict) -> tuple[str, bytes]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.getheader("Content-Type"), resp.read()


def test_streamed_and_plain_answers_carry_the_same_message_and_the_log(tmp_path):
    script = {"conversations": [{"match": "hi", "steps": [{"tool": "Read", "input": {"file_path": "/x"}}]}]}
    body = {"model": "claude-opus-4-5", "messages": [{"role": "user", "content": "hi there"}]}
    with FakeAnthropic(script, log=tmp_path / "api.jsonl") as api:
        assert api.url.startswith("http://127.0.0.1:")
        kind, plain = post(api.url, "/v1/messages", body)
        assert kind == "application/json"
        plain = json.loads(plain)
        kind, raw = post(api.url, "/v1/messages?beta=true", dict(body, stream=True))
        assert kind == "text/event-stream"
        counted = json.loads(post(api.url, "/v1/messages/count_tokens", body)[1])
        assert post(api.url, "/api/event_logging/batch", {"events": []})[1] == b"{}"
    events = [json.loads(chunk.split("data: ", 1)[1]) for chunk in raw.decode().split("\n\n") if chunk.strip()]
    assert [e["type"] for e in events] == ["message_start", "content_block_start", "content_block_delta",
                                           "content_block_delta", "content_block_stop", "message_delta",
                                           "message_stop"]
    streamed_input = json.loads("".join(e["delta"]["partial_json"] for e in events
                                        if e["type"] == "content_block_delta"))
    assert plain["model"] == events[0]["message"]["model"] == "claude-opus-4-5"
    assert plain["content"][0]["input"] == streamed_input == {"file_path": "/x"}
    assert events[-2]["delta"]["stop_reason"] == plain["stop_reason"] == "tool_use"
    assert counted["input_tokens"] == -(-len(b"user:hi there") // 4)  # a string message: one piece
    log = [json.loads(line) for line in (tmp_path / "api.jsonl").read_text().splitlines()]
    assert [(x["stream"], x["kind"], x["model"]) for x in log] == [(False, "script", "claude-opus-4-5"),
                                                                   (True, "script", "claude-opus-4-5")]
    # no breakpoints: nothing cached, everything is input
    assert log[1]["usage"]["input_tokens"] == counted["input_tokens"]


def test_generated_files_are_the_same_for_a_seed_and_the_workspace_is_filled_in(tmp_path):
    assert generated_source(50, 7) == generated_source(50, 7) != generated_source(50, 8)
    assert generated_source(50, 7).count("\n") == 50
    assert substitute({"a": ["{workspace}/x"]}, tmp_path) == {"a": [f"{tmp_path}/x"]}


@pytest.mark.parametrize("ttl", [None, "1h"])
def test_pieces_mark_only_blocks_with_cache_control(ttl):
    pieces = prompt_pieces(request(blocks=[text("a"), text("b", cached=True)], system_ttl=ttl))
    assert [p.ttl for p in pieces] == [ttl or "5m", None, "5m"]
