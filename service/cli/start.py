"""`ctxlamp start` (what `make run` does): the tray, or the demo, or a terminal view.

- Claude Code transcripts present: the tray (which starts the service).
- None yet: the demo, a bundled session written live in a private demo folder, fresh on every
  run (service/client/running.py: where `ctxlamp status` and `ctxlamp report` find it).
- No display: the service in the background and `ctxlamp status` live here; when the demo has
  written its last call, one line says what restarting at its first reminder would have saved.
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
    p.add_argument("--pace", type=float, default=0.5, help="the demo's seconds between calls (default 0.5)")


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
    """Until the service announced in `api_file` answers as this user's own (a stale file does not count)."""
    from service.client.running import answers

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if answers(api_file, timeout=1.0):
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


def _command() -> str:
    """How to run ctxlamp from another terminal: the venv's script when it is not on PATH."""
    import shutil

    script = Path(sys.executable).parent / ("ctxlamp.exe" if sys.platform == "win32" else "ctxlamp")
    return "ctxlamp" if shutil.which("ctxlamp") == str(script) or not script.exists() else str(script)


def fresh_demo_home() -> Path | None:
    """The demo's folder, emptied so every run plays the demo from its first call with its reminders
    (a kept database remembers they fired); None when a demo service still answers there (a demo
    already playing is left alone)."""
    import shutil

    from service.client.running import answers, demo_home, demo_paths

    home = demo_home()
    if answers(demo_paths().api_file):
        return None
    try:
        if home.is_symlink():  # never empty a folder somebody pointed elsewhere
            home.unlink()
        elif home.exists():
            shutil.rmtree(home)
    except OSError as exc:  # a file held open elsewhere (Windows): play on what is there
        from service.client.textsafe import printable

        print(f"ctxlamp: could not empty the demo's folder ({printable(exc, 500)}); its reminders may not show again.",
              file=sys.stderr)
    return home


def _play_demo(env: dict, pace: float) -> subprocess.Popen:
    return _child(["demo", "--quiet", "--pace", str(pace)], env)


def run(args) -> int:
    from service.client.paths import app_paths, claude_projects

    _stop_on_sigterm()
    env = dict(os.environ)
    demo = args.demo or not _has_transcripts(claude_projects())
    api_file = app_paths().api_file
    if demo:
        from service.client.running import demo_claude_dir, demo_paths

        home = fresh_demo_home()
        if home is None:
            print(f"ctxlamp: the demo is already playing; `{_command()} status` shows it.", file=sys.stderr)
            return 1
        env["CTXLAMP_HOME"] = str(demo_paths().data)
        env["CLAUDE_CONFIG_DIR"] = str(demo_claude_dir())
        api_file = demo_paths().api_file
        why = "as asked" if args.demo else f"no Claude Code transcripts in {claude_projects()} yet"
        print(f"ctxlamp: showing the demo ({why}): a session of our own making is written live and the "
              f"lamp goes from white to green, amber and red in about a minute. Its data: {home}",
              file=sys.stderr)
    children: list[subprocess.Popen] = []
    try:
        if has_display() and not args.headless:
            from service.cli.doctor import diagnose

            diagnosis = diagnose()
            if diagnosis.ok:
                tray = _child(["tray"], env)
                children.append(tray)
                print("ctxlamp: the lamp is in your tray (the menu bar on macOS): click it to open the "
                      "window. Quit in its menu, or Ctrl-C here, stops it.", file=sys.stderr)
                if demo:
                    time.sleep(2)  # let the tray start its service first
                    children.append(_reaped_when_done(_play_demo(env, getattr(args, "pace", 0.5))))
                return tray.wait()
            print(f"ctxlamp: the tray cannot start. {diagnosis.text()} "
                  "Falling back to the terminal view.", file=sys.stderr)
        else:
            print("ctxlamp: no display, so no window: the service runs with a live status here. "
                  f"Ctrl-C stops it. From another terminal: `{_command()} status`, `{_command()} report`.",
                  file=sys.stderr)
        serve = _child(["serve"], env)
        children.append(serve)
        if not _wait_for_api(api_file, serve):
            print("ctxlamp: the service did not start; see the messages above.", file=sys.stderr)
            return 1
        status = _child(["status"], env)
        children.append(status)
        if not demo:
            return status.wait()
        player = _play_demo(env, getattr(args, "pace", 0.5))
        children.append(player)
        return _until_status_ends(status, player, api_file)
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


def _until_status_ends(status: subprocess.Popen, player: subprocess.Popen, api_file: Path) -> int:
    """Wait for the terminal view; when the demo has written its last call, end its story in one line."""
    told = False
    while status.poll() is None:
        if not told and player.poll() is not None:
            time.sleep(1.5)  # the service's last snapshot is drawn first, then the ending below it
            told = True
            print(demo_ending(api_file), flush=True)
        time.sleep(0.2)
    return status.returncode


def demo_ending(api_file: Path) -> str:
    """What restarting at the demo's first reminder would have saved, from the running demo service."""
    from service.cli.status import ending_words
    from service.client.api import ApiClient, ApiError

    try:
        sessions = ApiClient(api_file=api_file, timeout=5).status().get("sessions") or []
    except ApiError:
        return "The demo has written its last call."
    return "The demo has written its last call. " + ending_words(sessions[0] if sessions else {})
