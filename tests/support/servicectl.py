"""Start a real `ctxlamp serve` for a test and stop it (by its own pid) afterwards."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fd_limited(limit: int) -> tuple[str, ...]:
    """running_service's prefix for a service under a descriptor limit, soft = hard so it cannot raise it
    (`python -c ... python -m service.cli serve`: exec keeps the pid). POSIX only."""
    return (sys.executable, "-c", f"import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, "
                                  f"({limit}, {limit})); os.execv(sys.argv[1], sys.argv[1:])")


@contextlib.contextmanager
def running_service(env: dict, ctx_home: Path, timeout: float = 30.0, prefix: tuple[str, ...] = ()):
    """Yields (process, api info). `env` must carry CTXLAMP_HOME (and where Claude Code's projects are).

    `prefix` runs the service through another command (e.g. setpriv, as another user).
    """
    log = open(ctx_home.parent / f"serve-{os.getpid()}-{time.monotonic_ns()}.log", "wb")
    proc = subprocess.Popen([*prefix, sys.executable, "-m", "service.cli", "serve"], env=env, cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        api = ctx_home / "api.json"
        deadline = time.monotonic() + timeout
        info = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"ctxlamp serve exited with {proc.returncode}: {Path(log.name).read_text()[-2000:]}")
            try:
                info = json.loads(api.read_text())
                if info.get("pid") == proc.pid:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError(f"ctxlamp serve did not start: {Path(log.name).read_text()[-2000:]}")
        from service.client.api import ApiClient

        client = ApiClient(info, timeout=10)
        while time.monotonic() < deadline:  # up, and done reading the recent sessions
            try:
                if client.get("/api/v1/status")["service"]["scan"]["state"] != "catching_up":
                    break
            except Exception:
                pass
            time.sleep(0.05)
        yield proc, info
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
