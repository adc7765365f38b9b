"""Regenerate tests/fixtures/rewind/: the real CLI 2.1.328, interactive under tmux, rewinding a conversation.

    python -m tests.fakeapi.make_rewind_fixtures

One session, typed as a user would: a prompt, a Read of a large file, double-Esc back to before that
prompt and "Restore conversation", five short prompts; a second Read, then "Summarize from here" on
its prompt; a Read of a small file, then "Summarize up to here" on the prompt after it; a third Read
rewound with "Restore conversation" again (in the segment after the compactions). Then, in print
mode, `--resume ID --fork-session --resume-session-at UUID` forks the session at an earlier answer.

The fixture folder gets projects/ (what the CLI wrote), api.jsonl (the fake API's record of every
request it answered: the usage it reported, so the prompt size it received) and steps.json (what
was typed, in order, with the answers waited for). Fixed folders (as make_fixtures uses) keep the
paths the same on every machine; ids and timestamps differ from run to run.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.fakeapi.make_fixtures import FIXTURE_BASE, FIXTURES, PINNED, WORKSPACE, cli_version
from tests.fakeapi.tmux import InteractiveClaude

SHORT = [f"RW-S{i:02d}" for i in range(1, 12)]
READS = {"RW-READ1": "big.py", "RW-READ2": "big.py", "RW-READ3": "small.py", "RW-READ4": "big.py"}


def scenario() -> dict:
    conversations = [{"match": name, "steps": [{"text": f"ack {name[3:]}"}]} for name in SHORT + ["RW-FORK"]]
    conversations += [{"match": name, "steps": [{"tool": "Read", "input": {"file_path": "{workspace}/" + path}},
                                                {"text": f"read done {name[3:]}"}]}
                      for name, path in READS.items()]
    return {"model": "claude-sonnet-4-5",
            "workspace": {"big.py": {"generate_lines": 1900, "seed": 21}, "small.py": {"generate_lines": 300, "seed": 5}},
            "script": {"conversations": conversations, "summary": "Summary of the earlier turns of this chat.",
                       "fallback": "ok"}}


class Driver:
    """Types into the CLI and waits for what each step shows; records the steps."""

    def __init__(self, claude: InteractiveClaude) -> None:
        self.claude, self.steps = claude, []

    def prompt(self, text: str, answer: str) -> None:
        self.claude.type(text)
        self.claude.wait_for(answer, timeout=60)
        time.sleep(1.5)  # the turn's closing entries
        self.steps.append({"typed": text, "shown": answer})

    def rewind(self, to_prompt: str, option: str, done: str | None = None) -> None:
        """Double-Esc, pick the prompt `to_prompt`, then the option ("Restore conversation", ...)."""
        time.sleep(0.5)
        self.claude.keys("Escape")
        time.sleep(0.3)
        self.claude.keys("Escape")
        self.claude.wait_for("Restore the code and/or conversation", timeout=20)
        self._select(to_prompt, "Up")
        self.claude.keys("Enter")
        self.claude.wait_for("Restore conversation", timeout=20)
        self._select(option, "Down")
        self.claude.keys("Enter")
        if done:
            self.claude.wait_for(done, timeout=90)
        self._wait_gone("Enter to continue")
        time.sleep(1.0)
        self.claude.keys("C-u")  # the rewound prompt comes back into the input box: clear it
        time.sleep(0.5)
        self.steps.append({"rewind_to": to_prompt, "option": option})

    def _wait_gone(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text in self.claude.capture():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} still shows:\n{self.claude.capture()}")
            time.sleep(0.2)

    def _select(self, label: str, key: str) -> None:
        for _ in range(40):
            pointed = [ln for ln in self.claude.capture().splitlines() if ln.lstrip().startswith("❯")]
            if pointed and label in pointed[-1]:
                return
            self.claude.keys(key)
            time.sleep(0.3)
        raise TimeoutError(f"could not point at {label!r}:\n{self.claude.capture()}")


def record(claude: InteractiveClaude) -> list[dict]:
    d = Driver(claude)
    claude.wait_for("❯", timeout=60)
    d.prompt("RW-S01 say hello", "ack S01")
    d.prompt("RW-READ1 read big.py", "read done READ1")
    d.rewind("RW-READ1", "Restore conversation")
    for name in SHORT[1:6]:
        d.prompt(f"{name} a short one", f"ack {name[3:]}")
    d.prompt("RW-READ2 read big.py again", "read done READ2")
    d.prompt("RW-S07 and one more", "ack S07")
    d.rewind("RW-READ2", "Summarize from here", "Conversation summarized")
    d.prompt("RW-S08 after the first summary", "ack S08")
    d.prompt("RW-READ3 read small.py", "read done READ3")
    d.prompt("RW-S09 after the small read", "ack S09")
    d.rewind("RW-S09", "Summarize up to here", "Conversation summarized")
    d.prompt("RW-S10 after the second summary", "ack S10")
    d.prompt("RW-READ4 read big.py once more", "read done READ4")
    d.rewind("RW-READ4", "Restore conversation")
    d.prompt("RW-S11 the last one", "ack S11")
    claude.keys("C-c")
    time.sleep(0.5)
    claude.keys("C-c")
    time.sleep(2.0)
    return d.steps


def fork(claude: InteractiveClaude, session_file: Path) -> dict:
    """Print mode: resume the session at the answer to RW-S10 as a new session (--fork-session)."""
    entries = [json.loads(line) for line in session_file.read_text().splitlines() if line.strip()]
    at = next(e["uuid"] for e in entries if e.get("type") == "assistant"
              and "ack S10" in json.dumps(e.get("message", {}).get("content")))
    command = [claude.binary, "-p", "RW-FORK from the earlier answer", "--output-format", "json",
               "--model", "claude-sonnet-4-5", "--resume", session_file.stem, "--fork-session",
               "--resume-session-at", at]
    done = subprocess.run(command, cwd=claude.workspace, env=claude.env, capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout)
    if result.get("is_error"):
        raise RuntimeError(f"the fork failed: {result}")
    return {"fork_of": session_file.stem, "at": at, "session_id": result.get("session_id")}


def main() -> int:
    shutil.rmtree(FIXTURE_BASE, ignore_errors=True)
    FIXTURE_BASE.mkdir(parents=True)
    log = FIXTURE_BASE / "api.jsonl"
    with InteractiveClaude(scenario(), home=FIXTURE_BASE / "home", workspace=WORKSPACE, log=log,
                           args=["--allowedTools", "Read"]) as claude:
        steps = record(claude)
        (session_file,) = claude.transcripts()
        steps.append(fork(claude, session_file))
        projects = session_file.parent.parent
        version = cli_version(claude.binary)
    if version != PINNED:
        print(f"warning: the CLI is {version}, the fixtures are pinned to {PINNED}", file=sys.stderr)
    dest = FIXTURES / "rewind"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copytree(projects, dest / "projects")
    shutil.copyfile(log, dest / "api.jsonl")
    (dest / "steps.json").write_text(json.dumps(steps, indent=1) + "\n")
    shutil.rmtree(FIXTURE_BASE, ignore_errors=True)
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"{dest}: {size // 1024} KB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
