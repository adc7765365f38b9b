"""The registry's lock: between two slices of a big read, the threads waiting for it have it first."""
from __future__ import annotations

import threading
import time

from service.ingest.fairlock import FairLock


def _until(cond, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not cond():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.001)


def test_a_waiting_thread_has_the_lock_before_its_busy_owner_takes_it_back():
    lock, order = FairLock(), []

    def api_thread() -> None:
        with lock:
            order.append("api")

    for _ in range(50):  # a bare lock gives it back to the owner most of these times
        order.clear()
        lock.__enter__()
        waiter = threading.Thread(target=api_thread)
        waiter.start()
        _until(lambda: lock._waiting == 1)
        lock.__exit__()
        lock.let_waiting_in(5.0)
        with lock:
            order.append("loop")
        waiter.join(5)
        assert order == ["api", "loop"]


def test_the_hand_over_is_bounded_and_the_lock_stays_reentrant():
    lock = FairLock()
    t = time.monotonic()
    lock.let_waiting_in(5.0)  # nobody waits: at once
    assert time.monotonic() - t < 1.0
    with lock, lock:  # the same thread again
        held = threading.Event()
        threading.Thread(target=lambda: (lock.__enter__(), held.set(), lock.__exit__()), daemon=True).start()
        _until(lambda: lock._waiting == 1)
        t = time.monotonic()
        lock.let_waiting_in(0.2)  # the waiter cannot have it while it is held: the wait ends at its bound
        assert 0.15 <= time.monotonic() - t < 2.0 and not held.is_set()
    assert held.wait(5)
