"""0003: day_figures.unwritten_usd, what Claude Code billed for requests it did not write.

Measured from its cost-state and booked, per session, on the UTC day of the session's last call
before it, by model and project, as `ctxlamp report` books it; the team's billed figure is
main_usd + subagents_usd + unwritten_usd. Rows pushed before it read 0 (nothing was measured then).
"""
from __future__ import annotations

S = "ctxlamp_team"


def up(db) -> None:
    db.execute_sql(f"ALTER TABLE {S}.day_figures ADD COLUMN unwritten_usd double precision NOT NULL DEFAULT 0")
