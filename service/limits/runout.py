"""When a plan window runs out at the current pace (pure: readings and times in, no clock).

Claude Code reports each window's used share and its reset time; the book keeps the account's
readings. The pace is the slope of a least-squares line through the current window's readings of
the recent past (the last hour of a 5-hour window, the last day of the weekly one; at least the
window's last two readings): the share the user is spending per hour now, not averaged over work
hours ago. The run-out is when that line reaches 100 %; none when the pace is not positive, when
the readings span under a minute (no pace yet), or when the window resets first.

A reading belongs to the current window when its reset time is the newest one's (within a minute):
after a reset the old window's readings say nothing of the new one's pace.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NEW_WINDOW_S = 60.0       # a reset time that moved this far is another window (as the book says)
MIN_SPAN_S = 60.0         # readings closer together than this give no pace
PACE_SPAN_S = {"five_hour": 3600.0, "seven_day": 86400.0}  # how far back the pace looks


@dataclass(frozen=True)
class RunOut:
    """A window's pace (percentage points per hour) and when it reaches 100 % (epoch s; None: not before
    it resets, or no pace)."""
    pace_pct_per_hour: float | None
    runs_out_at: float | None
    resets_at: float | None


def current_window(points: Sequence[tuple[float, float, float | None]]) -> list[tuple[float, float, float | None]]:
    """The readings (at, pct, resets_at) of the newest window, oldest first."""
    if not points:
        return []
    ordered = sorted(points, key=lambda p: p[0])
    newest = ordered[-1][2]
    out = []
    for p in reversed(ordered):
        same = (p[2] is None and newest is None) or (
            p[2] is not None and newest is not None and abs(p[2] - newest) <= NEW_WINDOW_S)
        if not same:
            break  # an older window: everything before it is older still
        out.append(p)
    return out[::-1]


def _slope(points: Sequence[tuple[float, float, float | None]]) -> float | None:
    """Least-squares slope of pct over time (per second); None when the times span under MIN_SPAN_S."""
    if len(points) < 2 or points[-1][0] - points[0][0] < MIN_SPAN_S:
        return None
    n = len(points)
    mt = sum(p[0] for p in points) / n
    mp = sum(p[1] for p in points) / n
    var = sum((p[0] - mt) ** 2 for p in points)
    if var <= 0:
        return None
    return sum((p[0] - mt) * (p[1] - mp) for p in points) / var


def run_out(window: str, points: Sequence[tuple[float, float, float | None]]) -> RunOut:
    """The pace and run-out of one window from its readings (at, used_percentage, resets_at), epoch s."""
    current = current_window(points)
    if not current:
        return RunOut(None, None, None)
    at, pct, resets = current[-1]
    full = next((p[0] for p in current if p[1] >= 100.0), None)
    if full is not None:  # already full: it ran out when it first read 100 %
        return RunOut(None, full, resets)
    span = PACE_SPAN_S.get(window, 3600.0)
    recent = [p for p in current if p[0] >= at - span]
    if len(recent) < 2:
        recent = current[-2:]
    slope = _slope(recent)
    if slope is None:
        return RunOut(None, None, resets)
    pace = slope * 3600.0
    if slope <= 0:
        return RunOut(pace, None, resets)
    when = at + (100.0 - pct) / slope  # from the last reading on, at the pace
    if resets is not None and when >= resets:
        return RunOut(pace, None, resets)
    return RunOut(pace, when, resets)
