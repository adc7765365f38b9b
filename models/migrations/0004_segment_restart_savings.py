"""0004: segment profiles keep what one restart would have saved (docs/measurement.md section 14).

`segment_profile.restart_savings` holds JSON text: {first_reminder_call, first_reminder_usd,
best_call, best_usd, calls_after_reminder}. Rows archived before it are NULL (no figures:
the Overview and the team push leave them out of the sums).
"""
from __future__ import annotations

import peewee as pw


def up(db: pw.Database) -> None:
    # A re-run (the version bump lost) must tolerate the column being there already.
    if "restart_savings" not in {c.name for c in db.get_columns("segment_profile")}:
        db.execute_sql("ALTER TABLE segment_profile ADD COLUMN restart_savings TEXT")
