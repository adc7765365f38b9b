"""`ctxlamp mcp`: a real stdio MCP session (the mcp SDK's own client) against the real server."""
from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time

import pytest

from service.client.api import ApiClient
from service.claude.mcp_server import resolve_caller
from tests.support.servicectl import running_service
from tests.support.corpus import ROOT

TOOLS = {"handoff_save", "handoff_load", "rotate_session", "history_page", "history_search", "history_locate"}
TOKEN = re.compile(r"load token: ([A-Za-z0-9_-]+)")


def server_params(env: dict, session_id: str | None, project: str):
    from mcp import StdioServerParameters

    extra = {k: v for k, v in env.items() if k in ("CTXLAMP_HOME", "CLAUDE_CONFIG_DIR", "HOME", "PATH")}
    extra["CLAUDE_PROJECT_DIR"] = project
    if session_id:
        extra["CLAUDE_CODE_SESSION_ID"] = session_id
    return StdioServerParameters(command=sys.executable, args=["-m", "service.cli", "mcp"], env=extra, cwd=str(ROOT))


def talk(env: dict, session_id: str | None, calls: list[tuple[str, dict]], project: str = "/work/proj",
         between=None) -> tuple[list[str], list]:
    """Open one stdio session, list the tools, make the calls in order; returns (tool names, texts)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def go():
        async with stdio_client(server_params(env, session_id, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                texts = []
                for i, (name, args) in enumerate(calls):
                    if between is not None:
                        between(i, texts)
                    result = await session.call_tool(name, arguments=args)
                    assert not result.is_error, result
                    texts.append("\n".join(c.text for c in result.content if getattr(c, "type", "") == "text"))
                return listed.tools, texts

    return asyncio.run(asyncio.wait_for(go(), timeout=60))


@pytest.fixture
def env(ctx_home):
    return dict(os.environ)


def test_lists_the_six_tools_with_their_arguments(env):
    tools, _ = talk(env, "s-1", [])
    assert {t.name for t in tools} == TOOLS
    by_name = {t.name: t for t in tools}
    save = by_name["handoff_save"].input_schema
    assert set(save["required"]) == {"task", "body"} and "paths" in save["properties"]
    assert by_name["handoff_load"].input_schema["required"] == ["token"]
    assert by_name["history_search"].input_schema["required"] == ["query"]
    assert by_name["history_locate"].input_schema["required"] == ["path"]
    assert "lineage" not in json.dumps([t.input_schema for t in tools])  # the lineage is never an argument
    assert all(t.description for t in tools)


def test_service_down_every_tool_says_how_to_start_it(env):
    _, texts = talk(env, "s-1", [("history_page", {"page": 1}), ("handoff_save", {"task": "t", "body": "b"}),
                                 ("rotate_session", {})])
    for text in texts:
        assert "not running" in text and "ctxlamp serve" in text


def test_handoff_round_trip_history_and_rotation_with_a_real_service(env, ctx_home):
    with running_service(env, ctx_home) as (_, info):
        api = ApiClient(info)
        # a session that loaded nothing is told so, by each history tool
        _, texts = talk(env, "s-old", [("history_search", {"query": "parser"}), ("history_locate", {"path": "a.py"}),
                                       ("history_page", {"page": 1}),
                                       ("handoff_save", {"task": "finish the parser", "body": "next: tests",
                                                         "paths": ["/work/proj/a.py"]})])
        for text in texts[:3]:
            assert "has not loaded a handoff" in text and "handoff_load" in text
        (token,) = TOKEN.findall(texts[3])
        saved = api.get("/api/v1/handoffs?project=/work/proj&undelivered=1")["handoffs"]
        assert [h["token"] for h in saved] == [token] and saved[0]["from_session"] == "s-old"

        # the same MCP process after /clear: the hook noted the new session for its parent (us)
        sessions = ctx_home / "sessions"

        def clear_happens(i, texts):
            if i == 1:
                sessions.mkdir(exist_ok=True)
                (sessions / f"{os.getpid()}.json").write_text(json.dumps(
                    {"session_id": "s-new", "cwd": "/work/proj", "at": time.time()}))

        _, texts = talk(env, "s-before-clear", [("history_page", {"page": 1}), ("handoff_load", {"token": token}),
                                                ("history_search", {"query": "zzzz-nothing"}),
                                                ("history_locate", {"path": "nowhere.py"}),
                                                ("handoff_load", {"token": "h-doesnotexist"}),
                                                ("rotate_session", {})],
                        between=clear_happens)
        assert "has not loaded a handoff" in texts[0]
        assert "finish the parser" in texts[1] and "next: tests" in texts[1] and "/work/proj/a.py" in texts[1]
        delivered = api.get("/api/v1/handoffs?project=/work/proj")["handoffs"][0]
        assert delivered["delivered_to_session"] == "s-new"  # not the id the process was started with
        assert "No turn" in texts[2] and "history_locate" in texts[2]  # a miss says which tool to try
        assert "No turn" in texts[3] and "history_search" in texts[3]
        assert "No handoff has the load token" in texts[4]
        assert "now measures this session (s-new)" in texts[5]
        assert api.get("/api/v1/handoffs?project=/work/proj&undelivered=1")["handoffs"] == []


def test_caller_rule_prefers_a_fresh_hook_note_over_the_env(tmp_path):
    runtime = tmp_path
    (runtime / "sessions").mkdir()
    env = {"CLAUDE_CODE_SESSION_ID": "from-env", "CLAUDE_PROJECT_DIR": "/p"}
    assert resolve_caller(runtime, time.time(), env=env, parent_pid=4242).session_id == "from-env"
    note = runtime / "sessions" / "4242.json"
    note.write_text(json.dumps({"session_id": "after-clear", "cwd": "/p/sub", "at": time.time()}))
    caller = resolve_caller(runtime, time.time(), env=env, parent_pid=4242)
    assert (caller.session_id, caller.project, caller.source) == ("after-clear", "/p/sub", "hook")
    # a note left by a dead process whose pid was reused: older than this server, another session
    note.write_text(json.dumps({"session_id": "someone-else", "cwd": "/x", "at": time.time() - 3600}))
    assert resolve_caller(runtime, time.time(), env=env, parent_pid=4242).session_id == "from-env"
