"""`ctxlamp` (the default command) and `ctxlamp tray`: the tray lamp.

Starts the service as a supervised child unless one already runs, then follows
its event stream. With no display at all it says so and exits 2.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import sys

NO_DISPLAY = ("ctxlamp: no graphical display found (DISPLAY and WAYLAND_DISPLAY are unset), "
              "so the tray cannot start.\n"
              "  Run the service on its own:      ctxlamp serve\n"
              "  Watch the lamp in the terminal:  ctxlamp status")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-service", action="store_true",
                        help="do not start or supervise the service; only connect to a running one")
    parser.add_argument("--window", action="store_true", help="open the window at start")


def has_display(env=os.environ, platform: str = sys.platform) -> bool:
    """True where Qt can show something: a set QT_QPA_PLATFORM, X11/Wayland, or macOS/Windows."""
    if env.get("QT_QPA_PLATFORM"):
        return True
    if platform.startswith("linux") or "bsd" in platform:
        return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))
    return True


def _quit_on_signals(app) -> None:
    """Let Ctrl-C and SIGTERM quit the Qt loop without a polling timer (a wake-up fd)."""
    from PySide6.QtCore import QSocketNotifier

    rsock, wsock = socket.socketpair()
    rsock.setblocking(False)
    wsock.setblocking(False)
    signal.set_wakeup_fd(wsock.fileno())
    notifier = QSocketNotifier(rsock.fileno(), QSocketNotifier.Type.Read, app)

    def drain():
        try:
            rsock.recv(64)
        except OSError:
            pass
        app.quit()

    notifier.activated.connect(drain)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)  # the wake-up fd does the work
    app._ctxlamp_signal_socks = (rsock, wsock, notifier)


def _watch_discovery(app, stream):
    """Reconnect as soon as api.json appears (inotify via QFileSystemWatcher), not on the next backoff."""
    from pathlib import Path

    from PySide6.QtCore import QFileSystemWatcher

    from service.client.where import runtime_dir

    folder = Path(runtime_dir())
    watcher = QFileSystemWatcher(app)
    if folder.is_dir():
        watcher.addPath(str(folder))
        watcher.directoryChanged.connect(lambda _path: stream.wake())
    return watcher


def run(args: argparse.Namespace) -> int:
    if not has_display():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    from PySide6.QtWidgets import QApplication

    from desktop.connection.datasource import ApiSource
    from desktop.connection.events import EventStream
    from desktop.widgets.icons import lamp_icon
    from desktop.platforms.tray_host import prepare_app
    from desktop.connection.supervisor import ServiceSupervisor
    from desktop.tray import TrayController

    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("ctxlamp")
    app.setQuitOnLastWindowClosed(False)
    app.setWindowIcon(lamp_icon("green"))
    for step in prepare_app():  # no Dock icon on macOS, the AppUserModelID on Windows
        print(f"ctxlamp: {step}", file=sys.stderr)
    _quit_on_signals(app)

    stream = EventStream()
    supervisor = None if args.no_service else ServiceSupervisor()
    tray = TrayController(ApiSource(), stream=stream, supervisor=supervisor)
    tray.quit_requested.connect(app.quit)
    if supervisor is not None:  # a start that fails is said here too, not only in the tray
        supervisor.gave_up.connect(lambda why: print(f"ctxlamp: {why}", file=sys.stderr, flush=True))
        how = supervisor.ensure_running()
        print(f"ctxlamp: {'using the running service' if how == 'external' else 'starting the service'}",
              file=sys.stderr)
    stream.start()
    watcher = _watch_discovery(app, stream)  # noqa: F841 - kept alive by the app
    if not tray.start():
        print("ctxlamp: no system tray yet; the icon appears when one does. The window shows the lamp meanwhile.",
              file=sys.stderr)
    if args.window:
        tray.open_window()
    try:
        code = app.exec()
    finally:
        tray.shutdown()
        stream.stop()
        if supervisor is not None:
            supervisor.stop()
    return int(code or 0)
