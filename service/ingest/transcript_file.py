"""Open a transcript without ever blocking on it or reading something endless.

A transcripts folder can hold what no one meant to put there: a FIFO named
`x.jsonl` (a blocking open waits for a writer forever), a symlink to
`/dev/zero` (an endless read), a symlink loop, a folder, a file we may not
read, a file on a mount that goes away. Every reader of transcripts opens them
here: only regular files are read (symlinks are followed only when they end
at one), checked with `fstat` on the descriptor opened with O_NONBLOCK, so a
FIFO or device is never opened for a blocking read. What cannot be read
raises `Skipped` with a short reason; `SkipNotes` names each such file once in
the log and keeps the list for the data-quality view.
"""
from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from typing import Iterator

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FLAGS = os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) \
    | getattr(os, "O_BINARY", 0)

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class Skipped(OSError):
    """The path is not a transcript we can read; `reason` says why in a few words."""

    def __init__(self, reason: str, gone: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.gone = gone  # it no longer exists: nothing to name, it is simply not there


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return f"not a regular file ({name})"
    return "not a regular file"


def _why(exc: OSError) -> Skipped:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return Skipped("vanished", gone=True)
    if exc.errno == errno.ELOOP:
        return Skipped("a symlink loop")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return Skipped("permission denied")
    return Skipped(f"unreadable ({exc.strerror or exc})")


def check(path) -> os.stat_result:
    """The stat of `path` (symlinks followed) when it is a regular file; else Skipped. Opens nothing."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _why(exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise Skipped(_kind(st.st_mode))
    return st


def open_fd(path) -> tuple[int, os.stat_result]:
    """A blocking read-only descriptor of the regular file at `path`, and its fstat; else Skipped.

    Checked first by path (a device is never opened at all), then on the open
    descriptor (the path may have been swapped in between).
    """
    check(path)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise _why(exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Skipped(_kind(st.st_mode))
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def chunks(path, size: int = 1 << 20) -> Iterator[bytes]:
    """The file's bytes in pieces of at most `size`. Skipped at the open; an error mid-read ends it
    with Skipped too (the pieces already given stay given)."""
    fd, _ = open_fd(path)
    try:
        while True:
            try:
                piece = os.read(fd, size)
            except OSError as exc:  # EIO, ESTALE, ENOTCONN: the mount went away under us
                raise Skipped(f"read failed ({exc.strerror or exc})") from None
            if not piece:
                return
            yield piece
    finally:
        os.close(fd)


def read_small(path, limit: int = 64 << 20) -> bytes:
    """A small file (a JSON ledger) whole; Skipped when unreadable or larger than `limit`."""
    out = bytearray()
    for piece in chunks(path):
        out += piece
        if len(out) > limit:
            raise Skipped(f"larger than {limit >> 20} MB")
    return bytes(out)


class SkipNotes:
    """Files left unread and why: each named once in the log, all listed for the data-quality view."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or logging.getLogger("ctxlamp.transcripts")
        self._lock = threading.Lock()
        self._reasons: dict[str, str] = {}

    def note(self, path, reason: str) -> None:
        key = os.fspath(path)
        with self._lock:
            if self._reasons.get(key) == reason:
                return
            self._reasons[key] = reason
        self.log.warning("skipped %s: %s", key, reason)

    def forget(self, path) -> None:
        """`path` reads fine again (or is gone): it leaves the list."""
        with self._lock:
            self._reasons.pop(os.fspath(path), None)

    def rows(self) -> list[dict]:
        with self._lock:
            return [{"path": p, "reason": r} for p, r in sorted(self._reasons.items())]
