"""The live event stream (SSE at /api/v1/events) read in a QThread.

The thread blocks on the socket, so nothing wakes the CPU while the service
has nothing to say. When the stream ends (the service restarted, or is not up
yet) it waits with backoff and reconnects, re-reading api.json each time
because a restarted service has a new port and token.
"""
from __future__ import annotations

import socket
import threading

from PySide6.QtCore import QThread, Signal

from service.client.api import ApiClient, ApiError

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class EventStream(QThread):
    snapshot = Signal(dict)
    reminder = Signal(dict)
    service = Signal(dict)
    limits = Signal(dict)
    budgets = Signal(dict)
    followed = Signal(dict)
    connected = Signal()
    disconnected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._stop = threading.Event()
        self._kick = threading.Event()  # cuts a backoff wait short (service came up)
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def stop(self, wait_ms: int = 5000) -> bool:
        """Stop the thread: wake any backoff wait and cut the blocking read. True once it ended."""
        self._stop.set()
        self._kick.set()
        self._cut()
        return self.wait(wait_ms)

    def reconnect_now(self) -> None:
        """Reconnect now: drop the current connection or cut the backoff wait short."""
        self._kick.set()
        self._cut()

    def wake(self) -> None:
        """Try again now if waiting between attempts (api.json appeared); a live stream is left alone."""
        self._kick.set()

    def _cut(self) -> None:
        # http.client drops conn.sock once a "Connection: close" response starts, while the
        # response keeps reading from it; so we keep our own reference to the socket.
        with self._lock:
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def run(self) -> None:  # the QThread entry point
        attempt = 0
        while not self._stop.is_set():
            was_connected, reason = self._stream_once()
            if self._stop.is_set():
                break
            if was_connected:  # a stream that worked: start the backoff afresh
                attempt = 0
            self.disconnected.emit(reason)
            delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
            attempt += 1
            self._kick.wait(delay)
            self._kick.clear()

    def _stream_once(self) -> tuple[bool, str]:
        """Read the stream until it ends: (had it connected, why it ended)."""
        client = ApiClient(timeout=10)  # api.json read afresh: a restarted service has a new port and token
        if client.info is None:  # not announced: it never started, or its start failed (say why)
            from service.client import start_failure
            from service.client.paths import app_paths

            return False, start_failure.not_running(app_paths()) or "the service is not running yet"
        opened = threading.Event()

        def hold(sock: socket.socket) -> None:
            with self._lock:
                self._sock = sock
            opened.set()
            self.connected.emit()

        try:
            for name, obj in client.events(on_open=hold):
                if self._stop.is_set():
                    return True, "stopped"
                self._dispatch(name, obj)
            return opened.is_set(), "the event stream ended"
        except ApiError as exc:
            return opened.is_set(), str(exc)
        finally:
            with self._lock:
                self._sock = None

    def _dispatch(self, name: str, obj: object) -> None:
        if not isinstance(obj, dict):
            return
        if name == "snapshot":
            self.snapshot.emit(obj)
        elif name == "reminder":
            self.reminder.emit(obj)
        elif name == "service":
            self.service.emit(obj)
        elif name == "limits":
            self.limits.emit(obj)
        elif name == "budgets":
            self.budgets.emit(obj)
        elif name == "followed":
            self.followed.emit(obj)
