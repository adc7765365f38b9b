"""The registry's lock, handed over between the slices of a big read.

A plain lock is not fair: the service loop that releases it after a slice of a big transcript
takes it again before a waiting API thread is scheduled, on a busy machine for many slices in
a row (a /status that waited 1.1 s beside two busy processes). Every taker here says it is
waiting, and the loop, between slices, lets the waiting ones in before it takes the lock back.
"""
from __future__ import annotations

import threading


class FairLock:
    """A reentrant lock whose busy owner lets the threads waiting for it in between its slices of work."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._waiting = 0
        self._changed = threading.Condition(threading.Lock())

    def __enter__(self) -> FairLock:
        with self._changed:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._changed:
                self._waiting -= 1
                self._changed.notify_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def let_waiting_in(self, at_most_s: float) -> None:
        """Return once every thread that was waiting for the lock has had it, or after `at_most_s`
        (called by a thread that does not hold it)."""
        with self._changed:
            self._changed.wait_for(lambda: self._waiting == 0, timeout=at_most_s)
