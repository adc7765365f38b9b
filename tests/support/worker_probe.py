"""Jobs for the spawned workers' tests: module-level, so a fresh interpreter can import them,
and importing nothing beyond what each job uses (the point of one test)."""
from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from service.report.scan import scan_one as _real_scan_one  # before any test replaces it


def square_with_pid(n: int) -> tuple[int, int, int]:
    return n, n * n, os.getpid()


def fail_on_seven(n: int) -> int:
    if n == 7:
        raise ValueError("job seven is bad")
    return n


def die_on_three(n: int) -> int:
    if n == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


def slow(n: int) -> int:
    time.sleep(0.05)
    return n


def first_quick_then_slow(n: int) -> tuple[int, int, int]:
    """Job 0 at once, every other one after a minute: a worker still runs when the caller stops."""
    if n:
        time.sleep(60)
    return n, os.getpid(), os.getppid()


def noisy(n: int) -> int:
    print("a job that prints", n)  # must not break the result stream
    return n


_marks: list[str] = []


def mark_ready() -> None:
    _marks.append("ready")


def marks(_: int) -> list[str]:
    return list(_marks)


def mark_ready_in_pid() -> None:
    _marks.append(f"ready in {os.getpid()}")


def marks_and_pid(_: int) -> tuple[list[str], int, int]:
    """The marks init left (and in which process), this worker's pid and its parent's."""
    return list(_marks), os.getpid(), os.getppid()


def scan_and_list_modules(tf: Any) -> tuple[Any, list[str]]:
    """A report worker's job, and every module its interpreter holds afterwards."""
    from service.report import scan

    scan.init_worker({})
    return scan.scan_one(tf), sorted(sys.modules)


def killed_on_the_biggest(tf: Any) -> Any:
    """A report worker the OOM killer takes while it scans a big main transcript (the test puts
    this in scan.scan_one's place: the real one is kept here, for a forked child too)."""
    if tf.session_hint.startswith("agent-") or os.path.getsize(tf.path) < 100_000:
        return _real_scan_one(tf)
    os.kill(os.getpid(), signal.SIGKILL)
    return None


def importable_in_workers(monkeypatch) -> None:
    """Spawned workers start with `-P` (never the folder they were started from on their path), so a
    probe of tests/support reaches them only with the checkout on PYTHONPATH."""
    import os

    from tests.support.corpus import ROOT

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
