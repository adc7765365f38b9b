"""0004: what one restart per segment would have saved (docs/measurement.md section 14), shared.

day_figures gains the day's sums (segments counted by the day they ended): at the first
reminder, the best single restart, the best of segments without a reminder (missed) and how
many segments had a reminder; segment gains its two figures. Rows pushed before it read 0 / NULL.
"""
from __future__ import annotations

S = "ctxlamp_team"

SQL = f"""
ALTER TABLE {S}.day_figures
    ADD COLUMN IF NOT EXISTS restart_first_usd double precision NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS restart_best_usd double precision NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS restart_missed_usd double precision NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS restart_segments_reminded integer NOT NULL DEFAULT 0;
ALTER TABLE {S}.segment
    ADD COLUMN IF NOT EXISTS restart_first_usd double precision,
    ADD COLUMN IF NOT EXISTS restart_best_usd double precision;
"""


def up(db) -> None:
    db.execute_sql(SQL)
