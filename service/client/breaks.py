"""Whether a session left a handoff before its break: the one rule the hook, the status line's answer and
`ctxlamp status` share, over handoff rows as the API (or the database) gives them.

A handoff from before the break is one the session itself saved (`from_session`), not yet loaded, no later
than shortly after its last activity (the model saves it with a tool call, and the session's last answer
comes after that call) and not long before it: one saved long before, with work done after it, would
restart the session without that work. A handoff of another session of the project is no restart of
this one.
"""
from __future__ import annotations

from datetime import datetime, timezone

AFTER_LAST_S = 120.0  # a handoff saved this soon after the last activity is still the work's own
BEFORE_LAST_S = 1800.0  # one saved longer before the last activity leaves out the work done since


def _epoch(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def handoff_before_break(rows: list, session_id: str | None, last_activity) -> dict | None:
    """The newest undelivered handoff `session_id` saved before the break that began at `last_activity`
    (epoch s or ISO text; None: any of its handoffs), else None."""
    if not session_id:
        return None
    last = _epoch(last_activity)
    found = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("from_session") != session_id or row.get("delivered_at"):
            continue
        made = _epoch(row.get("created_at"))
        if made is None or (last is not None and not last - BEFORE_LAST_S <= made <= last + AFTER_LAST_S):
            continue
        found.append((made, row))
    return max(found, key=lambda m: m[0])[1] if found else None
