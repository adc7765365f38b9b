"""The real Claude Code CLI in interactive mode, inside tmux, against the fake API (status line, rewinds, ...).

    with InteractiveClaude(scenario, home=tmp / "home") as claude:
        claude.wait_for("❯")                    # the input prompt is up
        claude.type("T1 read a")                # types the text and presses Enter
        claude.wait_for("done1")
        claude.keys("Escape", "Escape")         # tmux key names
        print(claude.capture())

The tmux server is a private one (its own socket), so stopping it touches no other tmux session.
Also a command for trying by hand: `python -m tests.fakeapi.tmux SCENARIO.json` starts it, prints how
to attach, and stops it on Enter.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.fakeapi.scenario import DEFAULT_MODEL, claude_binary, materialize, ready_home
from tests.fakeapi.server import FakeAnthropic


class InteractiveClaude:
    """One interactive CLI in a tmux pane; see the module doc. `api` is the running fake API."""

    def __init__(self, scenario: dict | Path | None = None, home: Path | None = None,
                 workspace: Path | None = None, claude_bin: str | None = None, args: list[str] = (),
                 width: int = 160, height: int = 48, log: Path | None = None, dump: Path | None = None):
        if scenario is not None and not isinstance(scenario, dict):
            scenario = json.loads(Path(scenario).read_text())
        self.scratch = Path(tempfile.mkdtemp(prefix="ctxlamp-tmux-"))
        self.home = Path(home) if home else self.scratch / "home"
        self.workspace = (Path(workspace) if workspace else self.scratch / "demo-project").resolve()
        self.scenario = materialize(scenario or {}, self.workspace)
        self.binary = claude_bin or claude_binary()
        self.extra_args, self.size = list(args), (width, height)
        self.log, self.dump = log or self.scratch / "api.jsonl", dump
        self.socket = f"ctxlamp-{os.getpid()}-{time.monotonic_ns()}"
        self.session = "claude"
        self.api: FakeAnthropic | None = None
        self.env: dict = {}

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check)

    def start(self) -> "InteractiveClaude":
        self.api = FakeAnthropic(self.scenario.get("script"), log=self.log, dump=self.dump).start()
        self.env = ready_home(self.scenario, self.home, self.workspace, self.api.url)
        command = [self.binary, "--model", self.scenario.get("model") or DEFAULT_MODEL, *self.extra_args]
        if self.scenario.get("mcp"):
            (self.scratch / "mcp.json").write_text(json.dumps(self.scenario["mcp"]))
            command += ["--mcp-config", str(self.scratch / "mcp.json")]
        launcher = self.scratch / "launch.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.env.items() if k.isidentifier())
        launcher.write_text(f"#!/bin/sh\n{exports}exec {shlex.join(command)}\n")
        launcher.chmod(0o700)
        width, height = self.size
        self._tmux("new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height),
                   "-c", str(self.workspace), str(launcher))
        return self

    def keys(self, *names: str) -> None:
        """Press keys by tmux name ("Enter", "Escape", "C-c", "Up", ...)."""
        self._tmux("send-keys", "-t", self.session, *names)

    def type(self, text: str, enter: bool = True) -> None:
        """Type `text` literally, then Enter unless told not to."""
        self._tmux("send-keys", "-t", self.session, "-l", text)
        if enter:
            time.sleep(0.2)  # the CLI reads a pasted burst as one input; Enter on its own submits it
            self.keys("Enter")

    def capture(self) -> str:
        """What the pane shows now (text, no colours)."""
        done = self._tmux("capture-pane", "-p", "-t", self.session, check=False)
        return done.stdout

    def wait_for(self, pattern: str | re.Pattern, timeout: float = 30.0) -> str:
        """The pane once `pattern` (a text or a regex) shows on it; TimeoutError with the pane otherwise."""
        found = pattern.search if isinstance(pattern, re.Pattern) else (lambda screen: pattern in screen)
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if found(screen):
                return screen
            if time.monotonic() > deadline:
                raise TimeoutError(f"{pattern!r} did not show within {timeout} s; the pane:\n{screen}")
            time.sleep(0.1)

    def transcripts(self) -> list[Path]:
        """The session files the CLI wrote so far."""
        config = Path(self.env.get("CLAUDE_CONFIG_DIR") or self.home / ".claude")
        return sorted((config / "projects").rglob("*.jsonl"))

    def stop(self) -> None:
        self._tmux("kill-server", check=False)
        if self.api:
            self.api.stop()
            self.api = None
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> "InteractiveClaude":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Start the CLI interactively in tmux against the fake API.")
    parser.add_argument("scenario", type=Path, nargs="?")
    parser.add_argument("--home", type=Path)
    parser.add_argument("--workspace", type=Path)
    args = parser.parse_args(argv)
    with InteractiveClaude(args.scenario, home=args.home, workspace=args.workspace) as claude:
        print(f"attach with: tmux -L {claude.socket} attach -t {claude.session}   (fake API at {claude.api.url})")
        input("Enter stops it. ")


if __name__ == "__main__":
    main()
