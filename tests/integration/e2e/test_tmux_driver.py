"""The interactive CLI under tests/fakeapi/tmux.py: a prompt typed, the scripted answer on the pane,
the status line shown, the transcript written, and nothing left running after stop()."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.claude_cli import claude_binary
from tests.fakeapi.tmux import InteractiveClaude

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]

SCENARIO = {"workspace": {"a.py": "x = 1\n"},
            "settings": {"statusLine": {"type": "command", "command": "echo STATUS-LINE-OK", "padding": 0}},
            "script": {"conversations": [{"match": "TMUX-1", "steps": [
                {"tool": "Read", "input": {"file_path": "{workspace}/a.py"}}, {"text": "read it: x is one"}]}]}}


def test_a_typed_prompt_gets_the_scripted_answer_and_the_status_line_shows(tmp_path):
    claude = InteractiveClaude(SCENARIO, home=tmp_path / "home", claude_bin=claude_binary(), log=tmp_path / "api.jsonl")
    with claude:
        claude.wait_for("❯", timeout=60)
        assert "STATUS-LINE-OK" in claude.wait_for("STATUS-LINE-OK", timeout=30)
        claude.type("TMUX-1 read a.py")
        claude.wait_for("x is one", timeout=60)
        (transcript,) = claude.transcripts()
        socket = claude.socket
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert any(b.get("name") == "Read" for e in entries if e.get("type") == "assistant"
               for b in e["message"]["content"])
    log = [json.loads(line) for line in (tmp_path / "api.jsonl").read_text().splitlines()]
    assert [(x["match"], x["step"]) for x in log if x["kind"] == "script"] == [("TMUX-1", 0), ("TMUX-1", 1)]
    gone = subprocess.run(["tmux", "-L", socket, "has-session"], capture_output=True)
    assert gone.returncode != 0  # its private tmux server was stopped
