"""End to end with the REAL Claude Code CLI (the version tests/integration/e2e/install_claude.sh pins) against the project's fake API (tests/fakeapi).

`ctxlamp install` is applied to a temporary HOME, a real `ctxlamp serve` watches
HOME/.claude/projects, and the scenario tests/integration/e2e/scenarios/handoff-clear-history.json
runs three `claude -p` runs: session 1 edits parser.py and saves a handoff through
MCP; `/clear`; session 2 (resumed after the clear) loads the handoff with the token
the SessionStart hook injected, then finds session 1 with history_search and
history_locate. The runner is `python -m tests.fakeapi.scenario`. The CLI is installed
once from npm by install_claude.sh; when that is impossible the test is skipped loudly
(never passed).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from service.claude import settings as claude_settings
from service.client.api import ApiClient
from tests.support.corpus import ROOT
from tests.support.claude_cli import claude_binary
from tests.support.servicectl import running_service
from tests.support.transcripts import read_jsonl

HERE = Path(__file__).resolve().parent
TOKEN = re.compile(r"load token: ([A-Za-z0-9_-]+)")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def tool_calls(entries: list[dict]) -> list[tuple[str, dict, str]]:
    """(tool name, input, result text) for every tool call of a transcript, in order."""
    uses, results = [], {}
    for e in entries:
        content = (e.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                uses.append(block)
            elif block.get("type") == "tool_result":
                body = block.get("content")
                if isinstance(body, list):
                    body = "\n".join(b.get("text", "") for b in body if isinstance(b, dict))
                results[block.get("tool_use_id")] = str(body)
    return [(u["name"], u.get("input") or {}, results.get(u["id"], "")) for u in uses]


def only(calls, name):
    found = [c for c in calls if c[0] == name]
    assert len(found) == 1, f"expected one {name} call, got {[c[0] for c in calls]}"
    return found[0]


def test_handoff_survives_clear_and_history_finds_session_one(tmp_path):
    binary = claude_binary()
    home, ctx, out = tmp_path / "home", tmp_path / "ctx", tmp_path / "out"
    (home / ".claude" / "projects").mkdir(parents=True)
    ctx.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID")}
    env.update(HOME=str(home), CTXLAMP_HOME=str(ctx), CLAUDE_BIN=binary)
    launcher = claude_settings.find_launcher()
    scenario = (HERE / "scenarios" / "handoff-clear-history.json").read_text()
    scenario = scenario.replace("@CTXLAMP@", launcher.shell().replace("\\", "\\\\").replace('"', '\\"'))
    (tmp_path / "scenario.json").write_text(scenario)

    with running_service(env, ctx) as (_, info):
        run = subprocess.run([sys.executable, "-m", "tests.fakeapi.scenario", str(tmp_path / "scenario.json"),
                              "--out", str(out), "--home", str(home)], env=env, cwd=ROOT, capture_output=True,
                             text=True, timeout=540)
        assert run.returncode == 0, run.stderr[-3000:]
        api = ApiClient(info)
        status = api.get("/api/v1/status")
        segments = api.get("/api/v1/segments")["segments"]
        handoffs = api.get("/api/v1/handoffs")["handoffs"]

    # ctxlamp install wrote into the temporary HOME
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert any(claude_settings.is_our_hook(h) for g in settings["hooks"]["SessionStart"] for h in g["hooks"])
    assert "ctxlamp" in json.loads((home / ".claude.json").read_text())["mcpServers"]

    results = read_jsonl(out / "results.jsonl")
    assert len(results) == 3 and not any(r.get("is_error") for r in results), results
    s1, s2 = results[0]["session_id"], results[1]["session_id"]
    assert s1 != s2 and results[2]["session_id"] == s2  # /clear started session 2; run 3 resumed it
    project_dir = next((out / "projects").iterdir())
    first, second = read_jsonl(project_dir / f"{s1}.jsonl"), read_jsonl(project_dir / f"{s2}.jsonl")

    # session 1 saved a handoff through MCP and got its load token
    _, saved_input, saved_text = only(tool_calls(first), "mcp__ctxlamp__handoff_save")
    (token,) = TOKEN.findall(saved_text)
    print(f"\nsession 1 {s1}: handoff_save -> load token {token}")

    # the hook's reminder with that token reached session 2 (after /clear)
    injected = [e["attachment"] for e in second
                if e.get("type") == "attachment" and (e.get("attachment") or {}).get("type") == "hook_additional_context"]
    assert injected, "no hook_additional_context attachment in session 2"
    reminder = "\n".join(injected[0]["content"]) if isinstance(injected[0]["content"], list) else injected[0]["content"]
    print(f"session 2 {s2}: hook_additional_context = {reminder!r}")
    assert TOKEN.findall(reminder) == [token] and "finish the zebrafish parser" in reminder
    ran = [e["attachment"].get("hookName") for e in second
           if e.get("type") == "attachment" and (e.get("attachment") or {}).get("type") == "hook_success"]
    assert "SessionStart:clear" in ran  # it came from the hook run for /clear

    # session 2 loaded it with the token the model read from the reminder, and found session 1
    calls = tool_calls(second)
    _, load_input, load_text = only(calls, "mcp__ctxlamp__handoff_load")
    assert load_input["token"] == token
    assert "finish the zebrafish parser" in load_text and "parser.py" in load_text
    _, _, search_text = only(calls, "mcp__ctxlamp__history_search")
    _, _, locate_text = only(calls, "mcp__ctxlamp__history_locate")
    _, _, page_text = only(calls, "mcp__ctxlamp__history_page")
    print(f"history_search('zebrafish') -> {search_text!r}")
    print(f"history_locate('parser.py') -> {locate_text!r}")
    assert "zebrafish" in search_text and s1[:8] in search_text and "history_page(1)" in search_text
    assert "changed:" in locate_text and "parser.py" in locate_text and s1[:8] in locate_text
    assert "history_page(1)" in locate_text
    assert "S1 zebrafish" in page_text and "S2 pick up" in page_text

    # the service followed the rotation and archived session 1's segment because of it
    print(f"service followed: {status['followed']}; segments: {[(s['session_id'][:8], s['end_reason']) for s in segments]}")
    assert status["followed"] == s2
    assert any(s["session_id"] == s1 and s["end_reason"] == "rotation" for s in segments)
    (handoff,) = [h for h in handoffs if h["token"] == token]
    assert handoff["from_session"] == s1 and handoff["delivered_to_session"] == s2
