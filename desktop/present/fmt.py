"""How every number reads on screen: money, tokens, bytes, counts, durations, dates (local time).

One module so the tray, every tab and the screenshots say "$1.24", "12.3k tokens"
or "2 h 05 min" the same way. Every function takes None (a field the service did
not send) and answers "–". Plain Python, no Qt.
"""
from __future__ import annotations

from datetime import date

# money, counts, sizes, tokens and shares as the terminal and the status line say them (re-exported: the
# tabs call fmt.usd)
from service.client.figures import DASH, count, percent, plural, size, tokens, usd  # noqa: F401
# moments in local time, as the terminal says them too
from service.client.words import parse_time, when  # noqa: F401


def number(v, digits: int = 2) -> str:
    if v is None:
        return DASH
    return f"{float(v):.{digits}f}"


def duration(seconds) -> str:
    """45 s / 12 min / 2 h 05 min / 3 d 4 h."""
    if seconds is None:
        return DASH
    s = int(max(0, round(float(seconds))))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, r = divmod(s, 60)
        return f"{m} min" if m >= 10 or r == 0 else f"{m} min {r:02d} s"
    if s < 86400:
        h, r = divmod(s, 3600)
        return f"{h} h {r // 60:02d} min"
    d, r = divmod(s, 86400)
    return f"{d} d {r // 3600} h"


def day(iso_day: str | None) -> str:
    """A calendar day "2026-11-29" -> "Sun 29 Nov" (a day has no time zone to convert)."""
    if not iso_day:
        return DASH
    try:
        d = date.fromisoformat(str(iso_day)[:10])
    except ValueError:
        return str(iso_day)
    return f"{d:%a} {d.day} {d:%b}"
