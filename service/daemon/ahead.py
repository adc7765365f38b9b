"""What a first start begins before the service builds itself: the first pass's fork server.

On a first start (no report cache yet) every transcript is to be read, and the pass's workers are forked
by a fresh interpreter that imports the readers and builds the encoder they share (0.3-0.4 s, decision
493). Started by `ctxlamp serve` before the service's own imports (0.15-0.2 s), it does that on the core the
service leaves idle, and its workers start reading that much sooner. Light on purpose: nothing of the first
pass is imported here.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

READERS = "service.daemon.first_pass"  # the module the server imports and preloads (its `preload(forks)`)


def first_start(data: Path) -> bool:
    """No report cache yet: every transcript is to be read."""
    return not (data / "cache" / "report-scan.json").exists()


def start_fork_server(workers: int | None = None) -> Any:
    """The fork server the first pass will take, started now; None where it would not be used (another start
    method, one core). OSError when the interpreter cannot be started."""
    from service.report import forked

    workers = workers if workers is not None else (os.cpu_count() or 1)
    if forked.start_method() != "fork" or workers < 2:
        return None
    return forked.start_fork_server(workers, READERS)


def on_first_start(data: Path) -> Any:
    """The fork server on a first start, else None (also when it could not be started: the service then
    tries again and says why)."""
    if not first_start(data):
        return None
    try:
        return start_fork_server()
    except OSError:
        return None
