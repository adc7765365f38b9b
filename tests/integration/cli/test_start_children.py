"""`ctxlamp start` (what `make run` does) and its children: the demo, which ends after its story while the
tray runs on, is reaped when it ends, not left a zombie until the tray quits."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from argparse import Namespace
from pathlib import Path

import pytest

import service.cli.doctor as doctor
import service.cli.start as start

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads a process's state in /proc")


def state(pid: int) -> str | None:
    """The process's state letter (Z: a zombie), or None once it is reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_the_demo_child_is_reaped_while_the_tray_runs(monkeypatch, ctx_home):
    spawned: dict[str, subprocess.Popen] = {}

    def child(args, env):
        # real processes in the tray's and the demo's places: the tray lives until the test is done, the demo
        # ends at once, as the demo does after its minute
        code = "import sys; sys.stdin.read()" if args == ["tray"] else "pass"
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE if args == ["tray"] else None)
        spawned[args[0]] = proc
        return proc

    monkeypatch.setattr(start, "_child", child)
    monkeypatch.setattr(start, "has_display", lambda: True)
    monkeypatch.setattr(start, "_stop_on_sigterm", lambda: None)  # signals belong to the main thread
    monkeypatch.setattr(doctor, "diagnose", lambda: type("Ok", (), {"ok": True})())
    runner = threading.Thread(target=start.run, args=(Namespace(demo=True, headless=False),), daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while "demo" not in spawned and time.monotonic() < deadline:
            time.sleep(0.05)
        demo = spawned["demo"]
        while state(demo.pid) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state(demo.pid) is None, f"the demo's process is {state(demo.pid)!r} while the tray runs"
        assert spawned["tray"].poll() is None
    finally:
        if "tray" in spawned:
            spawned["tray"].stdin.close()
        runner.join(15)
