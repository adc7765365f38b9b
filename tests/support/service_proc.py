"""One real `ctxlamp serve` process over temp folders, spoken to over real HTTP (the service-process tests
and the portable acceptance drive it)."""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.corpus import ROOT

CTXLAMP = [sys.executable, "-m", "service.cli"]


class Svc:
    """One `ctxlamp serve` process over `home` (CTXLAMP_HOME) and `claude` (CLAUDE_CONFIG_DIR)."""

    def __init__(self, home: Path, claude: Path, extra_env: dict | None = None) -> None:
        self.home, self.claude = home, claude
        self.env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude),
                    **(extra_env or {})}
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}
        self.err_path = home.parent / f"serve-{time.monotonic_ns()}.err"

    def start(self, timeout: float = 30, caught_up: bool = True) -> "Svc":
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen([*CTXLAMP, "serve"], env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=self.err)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"serve exited {self.proc.returncode}: {self.stderr()}"
            try:
                info = json.loads((self.home / "api.json").read_text())
                if info.get("pid") == self.proc.pid:
                    self.info = info
                    if not caught_up or self.get("/api/v1/status")["service"]["scan"]["state"] != "catching_up":
                        return self
            except (OSError, ValueError, ConnectionError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"service did not start: {self.stderr()}")

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace") if self.err_path.exists() else ""

    def request(self, method: str, path: str, body=None, headers: dict | None = None, token: str | None = "ok"):
        conn = http.client.HTTPConnection("127.0.0.1", self.info["port"], timeout=20)
        hdrs = {} if token is None else {"Authorization": f"Bearer {self.info['token'] if token == 'ok' else token}"}
        hdrs.update(headers or {})
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        return resp.status, (json.loads(raw) if raw else None)

    def get(self, path: str):
        status, obj = self.request("GET", path)
        assert status == 200, (path, status, obj)
        return obj

    def session(self, session_id: str) -> dict | None:
        return next((s for s in self.get("/api/v1/status")["sessions"] if s["session_id"] == session_id), None)

    def stop(self, sig=signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.err.close()
        self.proc = None
        return rc


def wait_for_snapshot(s: Svc, session_id: str, expected: dict, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    snap = None
    while time.monotonic() < deadline:
        snap = s.session(session_id)
        if snap == expected:
            return snap
        time.sleep(0.05)
    assert snap == expected  # shows the difference
    return snap
