"""The schema: peewee models, numbered migrations, and how to open the database.

Imports nothing of ours (only peewee and the standard library), so the
service, tools and tests can share it. Typical use:

    import models
    db = models.open_database(path)      # SQLite: WAL, busy_timeout 5 s, 0600
    models.migrate(db)                   # raises models.SchemaTooNew if db is newer
    models.database_proxy.initialize(db) # for code that uses the models directly

`bind_models(db)` gives per-database copies of the models, so two databases
(the service's writer and a read-only reader, say) can live in one process
without fighting over the global proxy.
"""
from __future__ import annotations

from types import SimpleNamespace

import peewee as pw

from models.database import BUSY_TIMEOUT_MS, is_sqlite, open_database, open_readonly, open_url
from models.migrations import SchemaTooNew, latest_version, migrate, schema_version
from models.tables import (
    ALL_MODELS, TURN_FTS_TABLE, BaseModel, ChannelEvent, DailySpend, Handoff, JSONField,
    LedgerSnapshot, Lineage, Reminder, ScanState, SegmentProfile, Session, TeamOutbox, TurnRecord,
    database_proxy,
)

SCHEMA_VERSION = latest_version()

__all__ = [
    "ALL_MODELS", "BUSY_TIMEOUT_MS", "BaseModel", "ChannelEvent", "DailySpend", "Handoff",
    "JSONField", "LedgerSnapshot", "Lineage", "Reminder", "SCHEMA_VERSION", "ScanState",
    "SchemaTooNew", "SegmentProfile", "Session", "TURN_FTS_TABLE", "TeamOutbox", "TurnRecord",
    "bind_models", "database_proxy", "has_fts", "is_sqlite", "migrate", "open_database",
    "open_readonly", "open_url", "schema_version",
]


def bind_models(db: pw.Database) -> SimpleNamespace:
    """Subclasses of every model bound to `db` (same tables), as a namespace by class name."""
    bound = {}
    for model in ALL_MODELS:
        meta = type("Meta", (), {"database": db, "table_name": model._meta.table_name})
        bound[model.__name__] = type(model.__name__, (model,), {"Meta": meta, "__module__": __name__})
    return SimpleNamespace(**bound)


def has_fts(db: pw.Database) -> bool:
    """True when the turn-record FTS5 table exists (SQLite with FTS5 only)."""
    if not is_sqlite(db):
        return False
    row = db.execute_sql(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TURN_FTS_TABLE,)
    ).fetchone()
    return row is not None
