"""Numbered schema migrations and the runner that applies them.

Each migration is a module `NNNN_name.py` with `up(db)`; it is listed in
MIGRATIONS below (an explicit list, so a frozen build knows what to bundle;
a test checks the list against the files). The version lives in
`PRAGMA user_version` on SQLite and in a one-row `schema_version` table
elsewhere. Each step runs in its own transaction together with the version
bump, so a crash leaves the database at the last complete version; a re-run
skips what is applied; a database newer than this code is refused.
"""
from __future__ import annotations

import importlib
from types import ModuleType

import peewee as pw

MIGRATIONS: tuple[str, ...] = (
    "0001_initial",
    "0002_team_outbox",
    "0003_segment_models",
    "0004_segment_restart_savings",
)


class SchemaTooNew(RuntimeError):
    """The database was written by a newer ctxlamp than this one."""

    def __init__(self, found: int, known: int):
        self.found = found
        self.known = known
        super().__init__(
            f"the ctxlamp database has schema version {found}, but this ctxlamp only knows "
            f"versions up to {known}; upgrade ctxlamp (or point it at another database) "
            f"instead of letting an older version write into it"
        )


def load_migrations() -> list[tuple[int, ModuleType]]:
    """(version, module) in order; versions must run 1, 2, 3, ... with no gaps."""
    out = []
    for expected, name in enumerate(MIGRATIONS, start=1):
        version = int(name.split("_", 1)[0])
        if version != expected:
            raise RuntimeError(f"migration {name} out of sequence (expected {expected:04d})")
        out.append((version, importlib.import_module(f"{__name__}.{name}")))
    return out


def latest_version() -> int:
    return len(MIGRATIONS)


def _is_sqlite(db: pw.Database) -> bool:
    return isinstance(db, pw.SqliteDatabase)


def schema_version(db: pw.Database) -> int:
    """The version the database says it is at (0 for an empty database)."""
    if _is_sqlite(db):
        return int(db.execute_sql("PRAGMA user_version").fetchone()[0])
    db.execute_sql("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = db.execute_sql("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def _set_version(db: pw.Database, version: int) -> None:
    if _is_sqlite(db):
        db.execute_sql(f"PRAGMA user_version = {int(version)}")  # transactional: part of page 1
    else:
        db.execute_sql("DELETE FROM schema_version")
        db.execute_sql("INSERT INTO schema_version (version) VALUES (%s)", (int(version),))


def _write_transaction(db: pw.Database):
    # SQLite: take the write lock at BEGIN, so two processes migrating at once queue
    # up on busy_timeout instead of both reading the old version.
    if _is_sqlite(db):
        return db.atomic(lock_type="IMMEDIATE")
    return db.atomic()


def _lock_version_table(db: pw.Database) -> None:
    if not _is_sqlite(db):
        db.execute_sql("LOCK TABLE schema_version IN EXCLUSIVE MODE")


def migrate(db: pw.Database, migrations: list[tuple[int, ModuleType]] | None = None) -> int:
    """Bring `db` to the newest schema this code knows; returns the version reached.

    Raises SchemaTooNew when the database is ahead of the code. `migrations`
    replaces the built-in list (tests use it to prove atomicity).
    """
    steps = load_migrations() if migrations is None else list(migrations)
    known = steps[-1][0] if steps else 0
    current = schema_version(db)
    if current > known:
        raise SchemaTooNew(current, known)
    for version, module in steps:
        if version <= current:
            continue
        with _write_transaction(db):
            _lock_version_table(db)
            current = schema_version(db)  # re-read under the lock: another process may have won
            if current > known:
                raise SchemaTooNew(current, known)
            if version <= current:
                continue
            module.up(db)
            _set_version(db, version)
            current = version
    return current
