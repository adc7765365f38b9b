"""Watch Claude Code's projects folder and hand changed transcript paths to a callback.

watchdog's native observer for the system (`watchdog.observers.Observer`: inotify on Linux,
FSEvents on macOS, ReadDirectoryChangesW on Windows, kqueue on BSD); the polling observer
only where the native one fails: not available, or the user's watch/instance limits are used
up (ENOSPC/EMFILE). The reason is said once, in the log, on stderr and in the service's status.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import (DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileCreatedEvent, FileDeletedEvent,
                             FileModifiedEvent, FileMovedEvent, FileSystemEvent, FileSystemEventHandler)

from service.client.privdir import make_private_dirs

POLL_INTERVAL_S = 2.0
# The events the handler acts on. Asked for by name, inotify reports nothing else: left open, it also
# reported every open and close of a transcript (two events for each reader of each file, the
# service's own first pass and every `ctxlamp report` among them), each one dispatched in Python.
WANTED = [FileCreatedEvent, DirCreatedEvent, FileModifiedEvent, FileMovedEvent, DirMovedEvent,
          FileDeletedEvent, DirDeletedEvent]
log = logging.getLogger("ctxlamp.service")

# watchdog's native observer classes, by the name the status reports
KINDS = {"InotifyObserver": "inotify", "FSEventsObserver": "fsevents", "FSEventsObserver2": "fsevents",
         "KqueueObserver": "kqueue", "WindowsApiObserver": "windows", "PollingObserver": "polling"}

_WHY = {
    errno.ENOSPC: "inotify watch limit reached (raise fs.inotify.max_user_watches)",
    errno.EMFILE: "inotify instance limit reached (raise fs.inotify.max_user_instances)",
    errno.ENOSYS: "inotify is not available on this system",
}


def native_observer() -> tuple[Any, str | None]:
    """(watchdog's native observer class, None), or (None, why there is none here)."""
    try:
        from watchdog.observers import Observer
    except Exception as exc:  # noqa: BLE001 - any failure to load watchdog's choice means: poll, and say why
        return None, f"the native observer cannot be loaded ({type(exc).__name__}: {exc})"
    if KINDS.get(getattr(Observer, "__name__", "")) == "polling":
        return None, f"watchdog has no native observer on this system ({sys.platform})"
    return Observer, None


def why_failed(exc: OSError, kind: str) -> str:
    if kind == "inotify" and exc.errno in _WHY:
        return _WHY[exc.errno]
    return f"{kind} failed: {exc}"


class _Handler(FileSystemEventHandler):
    def __init__(self, on_change: Callable[[Path, bool], None]) -> None:
        self.on_change = on_change

    def _emit(self, raw: str | bytes, created: bool) -> None:
        path = os.fsdecode(raw)
        if path.endswith(".jsonl"):
            self.on_change(Path(path), created)

    def on_created(self, event: FileSystemEvent) -> None:
        self._emit(event.src_path, True)  # a folder named like a transcript too: the service names it as skipped

    def on_modified(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self._emit(event.src_path, False)

    def on_moved(self, event: FileSystemEvent) -> None:
        self._emit(event.dest_path, True)

    def on_deleted(self, event: FileSystemEvent) -> None:
        self._emit(event.src_path, False)


class Watcher:
    """Starts the best observer it can; `kind` and `reason` say which and why.

    `native` stands in for `native_observer` in tests (a system's observer that fails, say).
    """

    def __init__(self, root: Path, on_change: Callable[[Path, bool], None], *, force_polling: bool = False,
                 native: Callable[[], tuple[Any, str | None]] = native_observer) -> None:
        self.root = root
        self.on_change = on_change
        self.kind = ""
        self.reason: str | None = None
        self._observer: Any = None
        self._force_polling = force_polling
        self._native = native

    def start(self) -> None:
        make_private_dirs(self.root)
        handler = _Handler(self.on_change)
        if self._force_polling:
            self.reason = "polling forced (CTXLAMP_POLLING)"
        else:
            cls, self.reason = self._native()
            if cls is not None:
                kind = KINDS.get(cls.__name__, cls.__name__)
                obs = cls()
                try:
                    obs.schedule(handler, str(self.root), recursive=True, event_filter=WANTED)
                    obs.start()
                except OSError as exc:
                    self.reason = why_failed(exc, kind)
                    with contextlib.suppress(Exception):  # half-started: stopping is best effort
                        obs.stop()
                else:
                    self._observer, self.kind = obs, kind
                    return
        from watchdog.observers.polling import PollingObserver

        obs = PollingObserver(timeout=POLL_INTERVAL_S)
        obs.schedule(handler, str(self.root), recursive=True, event_filter=WANTED)
        obs.start()
        self._observer, self.kind = obs, "polling"
        log.warning("watching with the polling observer: %s", self.reason)
        print(f"ctxlamp: watching with the polling observer: {self.reason}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
