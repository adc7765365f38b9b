"""How every number reads on screen: money, tokens, bytes, counts, durations, dates (local time).

One module so the tray, every tab and the screenshots say "$1.24", "12.3k tokens"
or "2 h 05 min" the same way. Every function takes None (a field the service did
not send) and answers "–". Plain Python, no Qt.
"""
from __future__ import annotations

from datetime import date, datetime, timezone

# money, counts, sizes, tokens and shares as the terminal and the status line say them (re-exported: the
# tabs call fmt.usd)
from service.client.figures import DASH, count, percent, plural, size, tokens, usd  # noqa: F401


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


def parse_time(value) -> float | None:
    """ISO-8601 (with Z or offset) or epoch seconds -> epoch seconds; None if unreadable."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        text = str(value).strip().replace("Z", "+00:00")
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    except ValueError:
        return None


def when(value, now: float | None = None, short: bool = False) -> str:
    """A moment in local time: "14:05" today, "Mon 30 Nov 14:05" this year (`short`: "30 Nov 14:05", for
    a table's column), else with the year."""
    t = parse_time(value)
    if t is None:
        return DASH
    local = datetime.fromtimestamp(t)
    today = datetime.fromtimestamp(now) if now is not None else datetime.now()
    if local.date() == today.date():
        return f"today {local:%H:%M}"
    if local.year == today.year:
        return f"{local.day} {local:%b %H:%M}" if short else f"{local:%a} {local.day} {local:%b %H:%M}"
    return f"{local.day} {local:%b %Y %H:%M}"


def day(iso_day: str | None) -> str:
    """A calendar day "2026-11-29" -> "Sun 29 Nov" (a day has no time zone to convert)."""
    if not iso_day:
        return DASH
    try:
        d = date.fromisoformat(str(iso_day)[:10])
    except ValueError:
        return str(iso_day)
    return f"{d:%a} {d.day} {d:%b}"
