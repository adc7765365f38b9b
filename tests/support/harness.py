"""Shared helpers of the reliability tests: a real `ctxlamp serve`, its API, `ctxlamp replay` as the oracle.

The service runs as its own process (tests/support/servicectl.py starts it); faults are
real (kill -9, mounts, another process holding the database), and the expected
numbers always come from `ctxlamp replay FILE --jsonl` of the same bytes.
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from service.client.api import sse_pairs
from tests.support.corpus import REAL_FIXTURES, ROOT, scenario_session
from tests.support.servicectl import running_service

CTXLAMP = [sys.executable, "-m", "service.cli"]
# 67 calls; three restart reminders, then a /compact and a short turn (tests/fakeapi/scenarios/long-session.json).
LONG_SESSION = scenario_session("long-session")
# A third-party 1.0.17 session with nine reminders, used when ../shared/fixtures/real is present.
REAL_REMINDERS = REAL_FIXTURES / "chiphuyen-sniffly" / "d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"

# What the user sees and what a restart must not change (docs/measurement.md section 10).
MEANINGFUL = ("session_id", "segment", "calls", "totalStock", "L", "B", "B_default", "laps", "bill_cycle_usd")


def meaningful(snap: dict | None) -> dict | None:
    if snap is None:
        return None
    out = {k: snap.get(k) for k in MEANINGFUL}
    out["lamp"] = (snap.get("lamp") or {}).get("state")
    return out


def replay(path: Path, home: Path) -> tuple[dict, list[dict], list[dict]]:
    """`ctxlamp replay FILE --jsonl`: (end status, reminder events, segment profiles incl. the open one)."""
    out = subprocess.run([*CTXLAMP, "replay", str(path), "--jsonl"], cwd=ROOT, capture_output=True, check=True,
                         env={**os.environ, "CTXLAMP_HOME": str(home)}, timeout=120)
    events = [json.loads(line) for line in out.stdout.splitlines()]
    end = events[-1]
    assert end["event"] == "end", end
    return end["status"], [e for e in events if e["event"] == "reminder"], end.get("segments") or []


def wait_for(fn: Callable[[], Any], timeout: float = 20, what: str = "condition", every: float = 0.05):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


class Api:
    """Raw HTTP to the service (every header under the test's control)."""

    def __init__(self, info: dict, timeout: float = 20) -> None:
        self.info = info
        self.port = int(info["port"])
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, headers: dict | None = None,
                token: str | None = "ok", timeout: float | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or self.timeout)
        hdrs = {} if token is None else {"Authorization": f"Bearer {self.info['token'] if token == 'ok' else token}"}
        hdrs.update(headers or {})
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, (json.loads(raw) if raw else None)
        except ValueError:
            return resp.status, raw

    def get(self, path: str, timeout: float | None = None) -> Any:
        status, obj = self.request("GET", path, timeout=timeout)
        assert status == 200, (path, status, obj)
        return obj

    def status(self, timeout: float | None = None) -> dict:
        return self.get("/api/v1/status", timeout=timeout)

    def session(self, session_id: str, timeout: float | None = None) -> dict | None:
        return next((s for s in self.status(timeout)["sessions"] if s["session_id"] == session_id), None)


class Events:
    """A background SSE reader: every (event, data) the service publishes, until the stream ends."""

    def __init__(self, info: dict) -> None:
        self.items: list[tuple[str, Any]] = []
        self.ended = threading.Event()
        self.connected = threading.Event()
        self._conn = http.client.HTTPConnection("127.0.0.1", int(info["port"]), timeout=None)
        self._token = info["token"]
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        self.connected.wait(10)

    def _read(self) -> None:
        try:
            self._conn.request("GET", "/api/v1/events", headers={"Authorization": f"Bearer {self._token}"})
            resp = self._conn.getresponse()
            self.connected.set()
            for pair in sse_pairs(resp.fp):
                self.items.append(pair)
        except (OSError, ValueError):
            return
        finally:
            self.connected.set()
            self.ended.set()

    def of(self, kind: str) -> list[Any]:
        return [v for k, v in list(self.items) if k == kind]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._conn.sock is not None:
                self._conn.sock.shutdown(2)
        self._conn.close()


class Service:
    """One `ctxlamp serve` (started by tests/support/servicectl.py), stoppable by SIGTERM or SIGKILL."""

    def __init__(self, env: dict, home: Path) -> None:
        self.env, self.home = env, home
        self._stack: contextlib.ExitStack | None = None
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}
        self.api: Api | None = None

    def start(self, timeout: float = 30) -> "Service":
        before = set(self.home.parent.glob("serve-*.log"))
        self._stack = contextlib.ExitStack()
        self.proc, self.info = self._stack.enter_context(running_service(self.env, self.home, timeout=timeout))
        self.api = Api(self.info)
        new = sorted(set(self.home.parent.glob("serve-*.log")) - before, key=lambda p: p.stat().st_mtime)
        self.output = new[-1] if new else None  # the process's stdout and stderr (servicectl writes it)
        return self

    def stderr(self) -> str:
        return self.output.read_text(errors="replace") if self.output else ""

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> int | None:
        """Graceful stop (servicectl sends SIGTERM); the exit code."""
        if self._stack is None:
            return None
        self._stack.close()
        self._stack = None
        rc = self.proc.returncode if self.proc else None
        return rc

    def log_path(self) -> Path:
        return self.home / "service.log"

    def __enter__(self) -> "Service":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None and exc[0] is not None:
            self.kill9()
        self.stop()


def service_env(home: Path, claude: Path, **extra: str) -> dict:
    """This environment for a ctxlamp (or Claude Code) process under test: its own CTXLAMP_HOME and
    CLAUDE_CONFIG_DIR, and none of the runner's other CTXLAMP_ or CLAUDE_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
    return {**env, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude), **extra}


def one_session_home(tmp: Path, calls: int, **extra: str) -> tuple[Path, dict]:
    """(CTXLAMP_HOME, environment) of a process under test over tmp/claude, which holds one growing session
    of `calls` calls in one project."""
    from tests.support import transcripts as T

    home, claude = tmp / "ctx", tmp / "claude"
    folder = claude / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    home.mkdir()
    (folder / f"{T.SID}.jsonl").write_bytes(T.to_bytes(T.growing_session(calls)))
    return home, service_env(home, claude, **extra)


def integrity(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def append_lines(lines: list[bytes], dst: Path, pause: float = 0.0) -> None:
    """Append as Claude Code does: whole lines, flushed one by one."""
    with open(dst, "ab") as out:
        for line in lines:
            out.write(line)
            out.flush()
            if pause:
                time.sleep(pause)
