"""Opening the database: SQLite for one user, PostgreSQL for a team.

SQLite files are private to the user (0600, folder 0700) because transcripts'
prompts and paths end up in them; WAL lets the hook and the desktop read while
the service writes.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import peewee as pw

BUSY_TIMEOUT_MS = 5000


def _per_connection_pragmas(busy_timeout_ms: int) -> list[tuple[str, object]]:
    # busy_timeout first, so the pragmas after it already wait on a busy file.
    return [("busy_timeout", int(busy_timeout_ms)), ("foreign_keys", 1), ("synchronous", "NORMAL")]


def _make_private_file(path: Path) -> None:
    """Create `path` as 0600 before SQLite does (it would honour the umask), and tighten it if it exists."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    if (os.stat(path).st_mode & 0o777) != 0o600:
        os.chmod(path, 0o600)


def tighten_sidecars(path: Path) -> None:
    """Make -wal/-shm 0600 when they exist (SQLite copies the main file's mode; this is the belt)."""
    for suffix in ("-wal", "-shm", "-journal"):
        side = Path(str(path) + suffix)
        try:
            if (os.stat(side).st_mode & 0o777) != 0o600:
                os.chmod(side, 0o600)
        except FileNotFoundError:
            pass


def _make_private_dirs(folder: Path) -> None:
    """`folder` and each missing parent 0700 (models/ depends on nothing of ours: service/client/privdir.py's rule)."""
    missing = []
    while not folder.is_dir() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            made.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(made, 0o700)  # mkdir's mode is filtered by the umask


def open_database(path: str | os.PathLike, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> pw.SqliteDatabase:
    """Open (creating if needed) the SQLite file: WAL, busy timeout, foreign keys, synchronous NORMAL.

    A missing parent folder is created 0700; an existing one is left as it is.
    Raises OSError or peewee.OperationalError when the file cannot be opened.
    """
    path = Path(path).expanduser()
    if not path.parent.exists():
        _make_private_dirs(path.parent)
    _make_private_file(path)
    db = pw.SqliteDatabase(
        str(path),
        pragmas=_per_connection_pragmas(busy_timeout_ms),
        timeout=busy_timeout_ms / 1000.0,
        check_same_thread=False,
    )
    db.connect(reuse_if_open=True)
    # Persistent in the file: set once, not on every connection.
    if str(db.execute_sql("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        db.execute_sql("PRAGMA journal_mode = WAL")
    tighten_sidecars(path)
    return db


def open_readonly(path: str | os.PathLike, *, busy_timeout_ms: int = 2000) -> pw.SqliteDatabase:
    """A connection that cannot write and never creates the file (the hook reads this way)."""
    path = Path(path).expanduser()
    uri = "file:" + quote(str(path.resolve()), safe="/") + "?mode=ro"
    return pw.SqliteDatabase(
        uri,
        uri=True,
        pragmas=[("busy_timeout", int(busy_timeout_ms)), ("query_only", 1)],
        timeout=busy_timeout_ms / 1000.0,
        check_same_thread=False,
    )


def open_url(url: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> pw.Database:
    """`sqlite:///abs/path.db` or `postgresql://user:pass@host:port/dbname` (team scale).

    PostgreSQL uses psycopg2 (installed with ctxlamp for the team view), which
    peewee imports only when the first connection is made, so this returns
    without touching the network. tests/integration/team/test_team.py runs the store on a real
    server this way.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("sqlite", "sqlite3"):
        raw = unquote(parts.path if not parts.netloc else "/" + parts.netloc + parts.path)
        return open_database(raw, busy_timeout_ms=busy_timeout_ms)
    if scheme in ("postgresql", "postgres", "postgresql+psycopg2"):
        dbname = unquote(parts.path.lstrip("/"))
        if not dbname:
            raise ValueError(f"database URL names no database: {url!r}")
        params: dict[str, Any] = {}
        if parts.username:
            params["user"] = unquote(parts.username)
        if parts.password:
            params["password"] = unquote(parts.password)
        if parts.hostname:
            params["host"] = parts.hostname
        if parts.port:
            params["port"] = parts.port
        for item in filter(None, parts.query.split("&")):  # e.g. sslmode=require
            key, _, value = item.partition("=")
            params[unquote(key)] = unquote(value)
        return pw.PostgresqlDatabase(dbname, autoconnect=True, **params)
    raise ValueError(f"unsupported database URL scheme {parts.scheme!r} (use sqlite:/// or postgresql://)")


def is_sqlite(db: pw.Database) -> bool:
    return isinstance(db, pw.SqliteDatabase)
