"""End to end: the REAL Claude Code CLI (the version tests/integration/e2e/install_claude.sh pins) in interactive mode, under tmux, against the project's
fake Anthropic API (tests/fakeapi), with `ctxlamp install` applied to a temporary HOME and a real
`ctxlamp serve` watching it. The pane must show ctxlamp's status line, the line must follow the
session as it grows, and the service must have kept what the status line reported.

API-key sessions get no `rate_limits` from the CLI; those fields are fed from recorded JSON in
tests/unit/statusline/test_statusline.py.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from service.client.api import ApiClient
from tests.support.claude_cli import claude_and_tmux
from tests.fakeapi.tmux import InteractiveClaude
from tests.support.corpus import ROOT
from tests.support.servicectl import running_service
from tests.support.harness import service_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# ctxlamp's line: a lamp glyph, then a lamp colour or "ctxlamp" (Claude Code's own "● text" lines never match)
OUR_LINE = re.compile(r"^\s*([●○◌]) (white|green|amber|red|ctxlamp\b)(.*)$", re.MULTILINE)
TURNS = 14


def scenario(ctx_home: Path) -> dict:
    files = {f"src/part{i}.py": {"generate_lines": 200, "seed": i} for i in range(1, TURNS + 1)}
    # a file read in the first turn (what a restart would rebuild), then command output that
    # piles up as dead weight (what the context carries for nothing): the lamp must move
    conversations = [{"match": f"STEP-{i:02d}", "steps": [
        {"tool": "Read", "input": {"file_path": f"{{workspace}}/src/part{i}.py"}} if i == 1 else
        {"tool": "Bash", "input": {"command": f"seq {i} 4000", "description": "numbers"}},
        {"text": f"finished step {i}"}]} for i in range(1, TURNS + 1)]
    return {
        "model": "claude-sonnet-4-5",
        "workspace": files,
        "script": {"conversations": conversations, "summary": "summary"},
        "env": {"CTXLAMP_HOME": str(ctx_home), "NO_COLOR": "1"},
        "setup": [f"cd {ROOT} && {sys.executable} -m service.cli install"],
    }


def our_line(screen: str) -> str | None:
    found = OUR_LINE.search(screen)
    return found.group(0).strip() if found else None


def test_the_pane_shows_ctxlamps_line_and_it_follows_the_session(tmp_path):
    binary = claude_and_tmux()
    ctx_home, home = tmp_path / "ctx", tmp_path / "home"
    ctx_home.mkdir()
    (home / ".claude" / "projects").mkdir(parents=True)
    env = service_env(ctx_home, home / ".claude", HOME=str(home))
    with running_service(env, ctx_home) as (_, info):
        client = ApiClient(info, timeout=10)
        with InteractiveClaude(scenario(ctx_home), home=home, claude_bin=binary) as claude:
            settings = json.loads((home / ".claude" / "settings.json").read_text())
            assert "service/statusline/fast.py" in settings["statusLine"]["command"]
            claude.wait_for("❯", timeout=60)
            screen = claude.wait_for(OUR_LINE, timeout=30)  # the line is up before the first prompt
            seen = [our_line(screen)]
            for i in range(1, TURNS + 1):
                claude.type(f"STEP-{i:02d}: read part {i}")
                claude.wait_for(f"finished step {i}", timeout=90)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:  # the CLI re-runs the command after the turn's updates
                    line = our_line(claude.capture())
                    if line and line != seen[-1] and "not measured" not in line:
                        break
                    time.sleep(0.2)
                seen.append(our_line(claude.capture()))
            final = claude.capture()
            (tmp_path / "pane.txt").write_text(final)
            print("\n--- the pane at the end ---\n" + final + "\n--- ctxlamp's line after each turn ---\n"
                  + "\n".join(str(s) for s in seen))
            sid = claude.transcripts()[0].stem
            status = client.get("/api/v1/status")
            readings = client.get(f"/api/v1/limits?session={sid}")["session"]["readings"]
            calls = client.get(f"/api/v1/sessions/{sid}/series")["calls"]
    snap = next(s for s in status["sessions"] if s["session_id"] == sid)
    last = seen[-1]
    assert last is not None and last.split()[1] in ("white", "green", "amber", "red"), seen
    assert len(set(seen[1:])) >= 5, f"the line did not follow the session: {seen}"
    lamps = [s.split()[1] for s in seen if s and s.split()[1] in ("white", "green", "amber", "red")]
    assert lamps[0] == "white" and len(set(lamps)) >= 2, f"the lamp did not move: {seen}"
    state_colour = {"good": "green", "warning": "amber", "critical": "red"}
    colours = {state_colour.get(c["lamp"], "white") for c in calls} | {snap["lamp"]["colour"]}
    assert last.split()[1] in colours  # a lamp the session really had
    assert "rent $" in last or "calls to sweet spot" in last or "past sweet spot" in last or "warming" in last
    assert readings and readings[-1]["cost_usd"] > 0 and readings[-1]["turns"] >= 1  # the service kept it
    assert status["limits"] == {"five_hour": None, "seven_day": None, "spend_limit": None}  # API key: none

