"""Two or more measurements taken in turns, so that a machine that speeds up or slows down during a
bench weighs on each alike: every round runs each job once, and the order turns over every round,
so no job always runs first."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def alternating(runs: int, jobs: dict[str, Callable[[int], T]]) -> dict[str, list[T]]:
    """Each job's results over `runs` rounds (a job is given the round's number)."""
    names = list(jobs)
    out: dict[str, list[T]] = {name: [] for name in names}
    for r in range(runs):
        for name in names if r % 2 == 0 else names[::-1]:
            out[name].append(jobs[name](r))
    return out
