"""0003: segment profiles list the models they used (a /model switch inside a segment).

`segment_profile.models` holds JSON text: [{model, calls, bill_in_usd, bill_out_usd}]
in order of first use. Rows archived before it are NULL (read as their one model).
"""
from __future__ import annotations

import peewee as pw


def up(db: pw.Database) -> None:
    # A re-run (the version bump lost) must tolerate the column being there already.
    if "models" not in {c.name for c in db.get_columns("segment_profile")}:
        db.execute_sql("ALTER TABLE segment_profile ADD COLUMN models TEXT")
