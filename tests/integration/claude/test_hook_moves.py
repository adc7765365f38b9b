"""The hooks at Claude Code's own moves (issue 47): a resume onto a cold cache, a model switch.

The hook runs as Claude Code runs it (a process fed the event's JSON), against a real `ctxlamp serve`
following a real transcript, or with the service down (handoffs then read from the database). Payloads
carry the fields Claude Code 2.1.332 sends (SessionStart on a resume: seconds_since_last_response,
context_tokens, prompt_cache_likely_expired, estimated_cache_write_usd; PreModelSwitch: from_model,
to_model, requested_model, source, context_tokens, prompt_cache_warm, cache_ttl, estimated_cache_write_usd,
pricing).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.client.figures import tokens, usd
from service.client.words import break_move_sentence
from tests.support import transcripts as T
from tests.support.corpus import ROOT

LIMIT_S = 2.0


def run_hook(event: str, doc, env: dict) -> tuple[dict | None, float]:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "service.cli", "hook", event], input=data, env=env, cwd=ROOT,
                          capture_output=True, timeout=10)
    took = time.monotonic() - started
    assert proc.returncode == 0 and proc.stderr == b""
    return (json.loads(proc.stdout) if proc.stdout.strip() else None), took


def resume(session: str = T.SID, *, expired: bool = True, away: float = 3000, **extra) -> dict:
    return {"session_id": session, "transcript_path": f"/nowhere/{session}.jsonl", "cwd": T.CWD,
            "hook_event_name": "SessionStart", "source": "resume", "seconds_since_last_response": away,
            "context_tokens": 183_000, "prompt_cache_likely_expired": expired, "estimated_cache_write_usd": 0.69,
            **extra}


@pytest.fixture
def home(tmp_path):
    from tests.support.harness import one_session_home

    ctx, env = one_session_home(tmp_path, 30)
    env.pop("CLAUDE_PID", None)
    return ctx, env


def test_resume_onto_a_cold_cache_tells_the_user_both_prices_and_the_handoff_only_once_it_exists(home):
    from service.client.api import ApiClient
    from tests.support.harness import wait_for
    from tests.support.servicectl import running_service

    ctx, env = home
    with running_service(env, ctx) as (_, info):
        api = ApiClient(info)

        def snapshot():
            return next(s for s in api.status()["sessions"] if s["session_id"] == T.SID)

        cache = snapshot()["cache"]
        out, took = run_hook("session-start", resume(), env)
        assert took < LIMIT_S and "hookSpecificOutput" not in out  # nothing into the session's context
        lines = out["systemMessage"].splitlines()
        # the move the advice names once the cache is cold, as the tray's cache notice names it (one rule)
        move = break_move_sentence(cache)
        assert cache["cold_advice"]["move"] == "restart" and move.startswith("A restart saves about ")
        assert lines == [
            f"ctxlamp: cache cold after 50 min: your next message rewrites {tokens(cache['cold_rewrite_tokens'])} "
            f"tokens ({usd(cache['cold_rewrite_usd'])}).",
            f"Fresh start: {tokens(cache['fresh_start_tokens'])} ({usd(cache['fresh_start_usd'])}); a handoff is "
            "cheapest made before a break.", move]
        # the session saves a handoff and answers once more before its break
        token = api.post("/api/v1/handoffs", {"task": "go on", "body": "notes", "project": T.CWD,
                                              "session_id": T.SID})["token"]
        calls = snapshot()["calls"]
        answer = T.call("after-handoff", 0, cr=snapshot()["totalStock"], out=40)
        answer["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        with (Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-user-proj" / f"{T.SID}.jsonl").open("ab") as fh:
            fh.write(T.to_bytes([answer]))
        wait_for(lambda: snapshot()["calls"] > calls, what="the answer read")
        out, _ = run_hook("session-start", resume(away=60), env)
        lines = out["systemMessage"].splitlines()
        assert lines[1].startswith("A fresh session with your handoff writes ")
        assert lines[2].startswith("A restart saves about ")
        assert lines[3] == f"To start fresh with it: /clear, then load token {token}."
        # a warm cache, or a startup: no message
        assert run_hook("session-start", resume(expired=False), env)[0] is None
        started, _ = run_hook("session-start", dict(resume(), source="startup"), env)
        assert started is None or "systemMessage" not in started


def test_with_the_service_down_claude_codes_own_estimate_and_the_databases_handoff(ctx_home):
    from service.store import Store

    env = dict(os.environ, CTXLAMP_HOME=str(ctx_home))
    env.pop("CLAUDE_PID", None)
    out, took = run_hook("session-start", resume(), env)
    assert took < LIMIT_S and "hookSpecificOutput" not in out
    assert out["systemMessage"] == f"ctxlamp: cache cold after 50 min: your next message rewrites 183k tokens " \
                                   f"({usd(0.69)})."
    store = Store(ctx_home / "ctxlamp.db")
    token = store.handoffs.save_handoff(task="t", body="b", paths=[], project=T.CWD, from_session=T.SID)["token"]
    other = store.handoffs.save_handoff(task="t", body="b", paths=[], project=T.CWD, from_session="someone-else")
    store.close()
    out, _ = run_hook("session-start", resume(away=30), env)
    assert out["systemMessage"].splitlines()[1:] == [f"To start fresh with it: /clear, then load token {token}."]
    assert other["token"] not in out["systemMessage"]  # another session's handoff restarts nothing of this one


def test_pre_model_switch_says_what_the_switch_rewrites(ctx_home):
    env = dict(os.environ, CTXLAMP_HOME=str(ctx_home))
    switch = {"session_id": T.SID, "hook_event_name": "PreModelSwitch", "from_model": "claude-sonnet-4-5",
              "to_model": "claude-opus-4-5", "requested_model": "opus", "source": "command",
              "context_tokens": 183_000, "prompt_cache_warm": True, "cache_ttl": "5m",
              "estimated_cache_write_usd": 1.14, "pricing": "catalog"}
    out, took = run_hook("pre-model-switch", switch, env)
    assert took < LIMIT_S and set(out) == {"systemMessage"}
    assert out["systemMessage"] == (f"ctxlamp: switching to Opus 4.5 rewrites 183k tokens ({usd(1.14)}) into its "
                                    "cache; the current model's warm cache is left behind.")
    cold, _ = run_hook("pre-model-switch", dict(switch, prompt_cache_warm=False), env)
    assert cold["systemMessage"].endswith("the cache is cold anyway, so the next message pays a rewrite either way.")
    assert run_hook("pre-model-switch", dict(switch, context_tokens=0), env)[0] is None  # nothing to rewrite yet
    evil, _ = run_hook("pre-model-switch", dict(switch, to_model="x\x1b]0;owned\x07", context_tokens=-5), env)
    assert evil is None
    named, _ = run_hook("pre-model-switch", dict(switch, to_model="x\x1b]0;owned\x07"), env)
    assert "\x1b" not in named["systemMessage"] and "\x07" not in named["systemMessage"]
    for garbage in (b"", b"not json", b"[1]", json.dumps(dict(switch, estimated_cache_write_usd="lots")).encode()):
        assert run_hook("pre-model-switch", garbage, env)[0] is None
