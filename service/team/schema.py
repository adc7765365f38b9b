"""`team init` and `team member add`: the schema, and a role per member with exactly what it needs.

Both run as the database's owner. A member's role may read the team's rows
and write its own (row-level security in migrations/0001); it gets no other
privilege, so a leaked member URL cannot rewrite the team's history.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from urllib.parse import quote, urlsplit, urlunsplit

from service.team.server import SCHEMA, TeamError, classify, connect

FIGURE_TABLES = ("day_figures", "channel_day", "segment")


def _owner_db(url: str):
    """A peewee database on the owner's connection, the team schema first on its search path."""
    import peewee as pw

    conn = connect(url)  # the failures classified, before peewee wraps them

    class _Db(pw.PostgresqlDatabase):
        def _connect(self):
            return conn

    db = _Db("team", autorollback=True)
    db.connect()
    db.execute_sql(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    db.execute_sql(f"SET search_path TO {SCHEMA}")
    return db


def init(url: str) -> int:
    """Create or migrate the team schema; returns its version."""
    import psycopg2

    from service.store.team import migrate_schema
    from service.team.migrations import steps

    try:
        db = _owner_db(url)
        try:
            return migrate_schema(db, steps())
        finally:
            db.close()
    except psycopg2.Error as exc:
        raise classify(exc, url) from None
    except Exception as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, psycopg2.Error):
            raise classify(cause, url) from None
        raise


def role_name(member: str) -> str:
    """A PostgreSQL role name for a member name (any text): readable part plus a hash, so names never collide."""
    readable = re.sub(r"[^a-z0-9]+", "_", member.lower()).strip("_")[:32] or "member"
    return f"ctxlamp_{readable}_{hashlib.sha256(member.encode()).hexdigest()[:8]}"


def member_url(owner_url: str, role: str, password: str) -> str:
    """The owner's URL with the member's role and password (host, port, database and TLS options kept)."""
    parts = urlsplit(owner_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}{':' + str(parts.port) if parts.port else ''}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def add_member(owner_url: str, member: str) -> str:
    """Create the member's role (a new password when it exists) with its grants; returns its connection URL."""
    import psycopg2
    from psycopg2 import sql

    member = member.strip()
    if not member:
        raise TeamError("a member needs a name")
    role = role_name(member)
    password = secrets.token_urlsafe(24)
    conn = connect(owner_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            verb = "ALTER" if cur.fetchone() else "CREATE"
            cur.execute(sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}")
                        .format(sql.Identifier(role), sql.Literal(password)))
            cur.execute("SELECT current_database()")
            database = cur.fetchone()[0]
            grants = [
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), sql.Identifier(role)),
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA), sql.Identifier(role)),
                sql.SQL("GRANT SELECT ON {}.member, {}.settings TO {}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(SCHEMA), sql.Identifier(role)),
                sql.SQL("GRANT EXECUTE ON FUNCTION {}.current_member() TO {}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(role)),
            ]
            for table in FIGURE_TABLES:
                grants.append(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {}.{} TO {}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(table), sql.Identifier(role)))
            for grant in grants:
                cur.execute(grant)
            cur.execute(f"INSERT INTO {SCHEMA}.member (name, role) VALUES (%s, %s) "
                        "ON CONFLICT (name) DO UPDATE SET role = EXCLUDED.role", (member, role))
    except psycopg2.Error as exc:
        raise classify(exc, owner_url) from None
    finally:
        conn.close()
    return member_url(owner_url, role, password)
