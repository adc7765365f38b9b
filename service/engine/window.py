"""The burn rate's window: the sum of a list's tail, kept exactly as the tail's start moves on.

Every finite float is a whole multiple of 2**-1074, so the window's sum is kept as one Python
int in those units: adding a value, dropping one or revising one never rounds, and the figure
is the exact sum rounded once, which is what `math.fsum` gives over the same values in any
order and on any Python version. A step costs the values that entered and left the window,
never the window's length.
"""
from __future__ import annotations

import math
from bisect import bisect_left, insort

_UNITS = 1074  # 2**-1074: the smallest positive float, so every finite float is an integer multiple of it
_ONE = 1 << _UNITS


def _exact(x: float) -> int:
    """x in units of 2**-1074 (exact); a value that is not finite counts 0 here (see `odd`)."""
    if not math.isfinite(x):
        return 0
    num, den = x.as_integer_ratio()  # den is a power of two, at most 2**1074
    return num << (_UNITS - den.bit_length() + 1)


def rounded_sum(values: list[float]) -> float:
    """The exact sum rounded once (`math.fsum`); with a value that is not finite, the plain sum's inf or nan."""
    if all(math.isfinite(v) for v in values):
        return math.fsum(values)
    return sum(values)


class SlidingSum:
    """`values` and the correctly rounded sum of `values[first:]` for a `first` that mostly moves on."""

    __slots__ = ("_acc", "_end", "_first", "odd", "values")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.odd: list[int] = []  # indexes of values that are not finite, in order
        self._first = 0  # self._acc is the exact sum of values[_first:_end]
        self._end = 0
        self._acc = 0

    def append(self, x: float) -> None:
        if not math.isfinite(x):
            self.odd.append(len(self.values))
        self.values.append(x)

    def __setitem__(self, i: int, x: float) -> None:
        """Revise value i (the sum follows when i is inside what it holds)."""
        old = self.values[i]
        if self._first <= i < self._end:
            self._acc += _exact(x) - _exact(old)
        if not math.isfinite(x) and math.isfinite(old):
            insort(self.odd, i)
        elif math.isfinite(x) and not math.isfinite(old):
            self.odd.pop(bisect_left(self.odd, i))
        self.values[i] = x

    def sum_from(self, first: int) -> float:
        """rounded_sum(values[first:]), in the values that entered and left since the last call."""
        if self.odd and self.odd[-1] >= first:
            return rounded_sum(self.values[first:])
        if first < self._first or first > self._end:  # moved back (times out of order), or past all it held
            self._first = self._end = first
            self._acc = 0
        acc, values, n = self._acc, self.values, len(self.values)
        for i in range(self._end, n):
            acc += _exact(values[i])
        for i in range(self._first, first):
            acc -= _exact(values[i])
        self._acc, self._first, self._end = acc, first, n
        try:
            return acc / _ONE  # int / int: correctly rounded
        except OverflowError:  # past the largest float, as a plain sum would be
            return math.inf if acc > 0 else -math.inf
