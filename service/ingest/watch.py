"""Watch Claude Code's projects folder and hand changed transcript paths to a callback.

inotify (watchdog's native observer) where it works; the polling observer only
where it does not: no inotify, or the user's watch/instance limits are used
up (ENOSPC/EMFILE). The reason is said once, on stderr and in SERVICE.
"""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from service.privdir import make_private_dirs

POLL_INTERVAL_S = 2.0

_WHY = {
    errno.ENOSPC: "inotify watch limit reached (raise fs.inotify.max_user_watches)",
    errno.EMFILE: "inotify instance limit reached (raise fs.inotify.max_user_instances)",
    errno.ENOSYS: "inotify is not available on this system",
}


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
    """Starts the best observer it can; `kind` and `reason` say which and why."""

    def __init__(self, root: Path, on_change: Callable[[Path, bool], None], *, force_polling: bool = False) -> None:
        self.root = root
        self.on_change = on_change
        self.kind = ""
        self.reason: str | None = None
        self._observer = None
        self._force_polling = force_polling

    def start(self) -> None:
        make_private_dirs(self.root)
        handler = _Handler(self.on_change)
        if not self._force_polling:
            try:
                from watchdog.observers.inotify import InotifyObserver

                obs = InotifyObserver()
                obs.schedule(handler, str(self.root), recursive=True)
                try:
                    obs.start()
                except BaseException:
                    try:
                        obs.stop()
                    except Exception:
                        pass
                    raise
                self._observer, self.kind = obs, "inotify"
                return
            except ImportError:
                self.reason = "inotify is not available on this platform"
            except OSError as exc:
                self.reason = _WHY.get(exc.errno, f"inotify failed: {exc}")
        else:
            self.reason = "polling forced (CTXLAMP_POLLING)"
        from watchdog.observers.polling import PollingObserver

        obs = PollingObserver(timeout=POLL_INTERVAL_S)
        obs.schedule(handler, str(self.root), recursive=True)
        obs.start()
        self._observer, self.kind = obs, "polling"
        print(f"ctxlamp: watching with the polling observer: {self.reason}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
