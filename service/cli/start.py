"""`ctxlamp start` (what `make run` does): the tray, or the demo, or a terminal view.

- Claude Code transcripts present: the tray (which starts the service).
- None yet: the demo, a bundled session written live in a private demo home.
- No display: the service in the background and `ctxlamp status` live here.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def configure(p) -> None:
    p.add_argument("--demo", action="store_true", help="show the demo even if you have transcripts")
    p.add_argument("--headless", action="store_true", help="terminal status even if a display is present")


def has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _has_transcripts(projects: Path) -> bool:
    return projects.is_dir() and next(projects.rglob("*.jsonl"), None) is not None


def child_argv(args: list[str]) -> list[str]:
    """`ctxlamp ARGS` as this Python runs it, whatever folder the user started from."""
    from service.client.own_python import module_argv

    return module_argv("service.cli", *args)


def _child(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(child_argv(args), env=env)


def _reaped_when_done(proc: subprocess.Popen) -> subprocess.Popen:
    """Wait for `proc` on a thread of its own, so a child that ends while we wait for another (the demo,
    after its story, while the tray runs) is reaped at once instead of lingering as a zombie."""
    import threading

    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc


def _wait_for_api(api_file: Path, proc: subprocess.Popen, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if api_file.exists():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def _stop_on_sigterm() -> None:
    """SIGTERM (systemd, a closing terminal) unwinds like Ctrl-C, so the children are stopped too."""
    import signal

    def raise_interrupt(_sig, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, raise_interrupt)


def run(args) -> int:
    from service.client.paths import app_paths, claude_projects

    _stop_on_sigterm()
    env = dict(os.environ)
    demo = args.demo or not _has_transcripts(claude_projects())
    if demo:
        home = app_paths().data / "demo"
        env["CTXLAMP_HOME"] = str(home / "ctxlamp")
        env["CLAUDE_CONFIG_DIR"] = str(home / "claude")
        why = "as asked" if args.demo else f"no Claude Code transcripts in {claude_projects()} yet"
        print(f"ctxlamp: showing the demo ({why}): a bundled session is written live and the lamp "
              f"moves from white to red in about a minute. Data: {home}", file=sys.stderr)
    children: list[subprocess.Popen] = []
    try:
        if has_display() and not args.headless:
            from service.cli.doctor import diagnose

            diagnosis = diagnose()
            if diagnosis.ok:
                tray = _child(["tray"], env)
                children.append(tray)
                if demo:
                    time.sleep(2)  # let the tray start its service first
                    children.append(_reaped_when_done(_child(["demo", "--quiet"], env)))
                return tray.wait()
            print(f"ctxlamp: the tray cannot start. {diagnosis.text()} "
                  "Falling back to the terminal view.", file=sys.stderr)
        else:
            print("ctxlamp: no display; running the service with a live status here (Ctrl-C stops both).",
                  file=sys.stderr)
        serve = _child(["serve"], env)
        children.append(serve)
        api_file = Path(env.get("CTXLAMP_HOME", "")) / "api.json" if demo else app_paths().api_file
        if not _wait_for_api(api_file, serve):
            print("ctxlamp: the service did not start; see the messages above.", file=sys.stderr)
            return 1
        if demo:
            children.append(_reaped_when_done(_child(["demo", "--quiet"], env)))
        return _child(["status"], env).wait()
    except KeyboardInterrupt:
        return 0
    finally:
        for proc in reversed(children):
            if proc.poll() is None:
                proc.terminate()
        for proc in children:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
