"""A stand-in for Windows' `msvcrt` locking on Linux, so the lock's msvcrt branch runs here.

`locking(fd, LK_NBLCK, 1)` takes a non-blocking exclusive flock: like Windows' byte-range lock
it belongs to the open file (not the process) and the kernel drops it when the process dies.
The offsets it was asked to lock are kept, so a test can check the locked byte lies beyond
the pid text (on Windows a locked range cannot be read by others).
"""
from __future__ import annotations

import fcntl
import os

LK_UNLCK = 0
LK_LOCK = 1
LK_NBLCK = 2
LK_RLCK = 3
LK_NBRLCK = 4

offsets: list[int] = []


def locking(fd: int, mode: int, nbytes: int) -> None:
    if nbytes != 1:
        raise ValueError("ctxlamp locks one byte")
    offsets.append(os.lseek(fd, 0, os.SEEK_CUR))
    if mode == LK_UNLCK:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return
    if mode != LK_NBLCK:
        raise ValueError("ctxlamp never waits for the lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise PermissionError(13, "Permission denied") from None  # what Windows raises
