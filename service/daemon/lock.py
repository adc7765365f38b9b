"""One service per user: an flock on `service.lock` in the runtime dir.

The kernel drops the lock when the process dies (even on kill -9), so a stale
file never blocks a restart. The file holds the owner's pid for the message a
second `ctxlamp serve` prints.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from service.privdir import make_private_dirs


class AlreadyRunning(RuntimeError):
    def __init__(self, pid: int | None, path: Path) -> None:
        self.pid = pid
        self.path = path
        who = f"pid {pid}" if pid else "another process"
        super().__init__(f"ctxlamp service already running ({who}; lock {path})")


class ServiceLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> "ServiceLock":
        make_private_dirs(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = read_pid(self.path)
            os.close(fd)
            raise AlreadyRunning(pid, self.path) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Unlock; the file stays (removing it would race a starting service)."""
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "ServiceLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def is_held(path: Path) -> bool:
    """True when a live service holds the lock (for `status` and the desktop)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
