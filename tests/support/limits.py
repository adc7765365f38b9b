"""Plan limits as the service reports them (LIMITS of docs/api.md), at a fixed local time."""
from __future__ import annotations

import time

NOW = time.mktime((2026, 11, 30, 14, 0, 0, 0, 0, -1))  # 14:00 local time


def limits(five=37.0, week=12.0, resets=NOW + 3 * 3600):
    return {"five_hour": {"used_percentage": five, "resets_at": resets, "seen_at": NOW, "pct_per_usd": 4.0},
            "seven_day": {"used_percentage": week, "resets_at": NOW + 4 * 86400}, "spend_limit": None}
