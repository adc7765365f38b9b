"""`team init` and `team member add`: the schema, and a role per member with exactly what it needs.

Both run as the database's owner. A member's role may read the team's rows
and write its own (row-level security in migrations/0001); it gets no other
privilege, so a leaked member URL cannot rewrite the team's history.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from service.team.server import (
    SCHEMA,
    Refused,
    TeamError,
    classify,
    connect,
    createrole_hint,
    where,
)

FIGURE_TABLES = ("day_figures", "channel_day", "segment")
NAME_MAX = 200  # the team schema's CHECK on names (migrations/0002)


def _owner_db(conn: Any) -> Any:
    """A peewee database on the owner's connection, the team schema first on its search path."""
    import peewee as pw

    class _Db(pw.PostgresqlDatabase):
        def _connect(self) -> Any:
            return conn

    db = _Db("team")
    db.connect()
    db.execute_sql(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    db.execute_sql(f"SET search_path TO {SCHEMA}, pg_catalog, pg_temp")  # public (open on 12-14) is not on it
    return db


def init(url: str) -> int:
    """Create or migrate the team schema and close the database to everybody else; returns its version.

    Refused (after migrating) when the owner cannot create roles or PUBLIC may
    still connect or create in `public`, naming each line an administrator runs.
    """
    import psycopg2

    from models.migrations import migrate  # the runner ours uses: generic, it knows no table of ours
    from service.team.migrations import steps

    conn = connect(url)  # the failures classified, before peewee wraps them
    try:
        db = _owner_db(conn)
        try:
            version = migrate(db, steps())
            problems = lock_down(db, url)
        finally:
            db.close()
    except psycopg2.Error as exc:
        raise classify(exc, url) from None
    except TeamError:
        raise
    except Exception as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, psycopg2.Error):
            raise classify(cause, url) from None
        raise
    if problems:
        raise Refused(f"{where(url)}: the team schema is at version {version}, but " + "; and ".join(problems))
    return version


def lock_down(db: Any, url: str) -> list[str]:
    """Take every privilege on the database and CREATE on `public` from PUBLIC; what is still missing.

    PostgreSQL 12-14 let everyone create in `public` (where a member could plant
    an operator for others to call) and connect to every database; 15 no longer
    grants the first. A database owner can revoke both only when it also owns
    `public` (PostgreSQL 15 does that); otherwise the message names the line.
    """
    import psycopg2
    from psycopg2 import sql

    conn = db.connection()
    with db.atomic(), conn.cursor() as cur:  # one transaction (peewee runs in autocommit mode otherwise)
        cur.execute(
            "SELECT pg_catalog.current_database(), r.rolsuper, r.rolcreaterole, EXISTS (SELECT 1 FROM "
            "pg_catalog.pg_namespace AS n WHERE n.nspname OPERATOR(pg_catalog.=) 'public') "
            "FROM pg_catalog.pg_roles AS r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER")
        database, superuser, createrole, has_public = cur.fetchone()
        statements = [sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database))]
        if has_public:
            statements.append(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        for statement in statements:  # a role that may not revoke: a warning, or an error we check below
            cur.execute("SAVEPOINT ctxlamp_lock_down")
            try:
                cur.execute(statement)
            except psycopg2.Error as exc:
                if exc.pgcode != "42501":
                    raise
                cur.execute("ROLLBACK TO SAVEPOINT ctxlamp_lock_down")
        cur.execute(
            "SELECT pg_catalog.has_database_privilege('public', pg_catalog.current_database(), "
            "'CONNECT, CREATE, TEMPORARY'), "
            "(SELECT pg_catalog.has_schema_privilege('public', n.oid, 'CREATE') "
            " FROM pg_catalog.pg_namespace AS n WHERE n.nspname OPERATOR(pg_catalog.=) 'public')")
        connect_open, create_open = cur.fetchone()
        db_ident = sql.Identifier(database).as_string(conn)
    problems = []
    if not (superuser or createrole):
        problems.append(createrole_hint(url))
    if connect_open:
        problems.append(f"every role may still connect to {database} or create in it (only its owner or a superuser "
                        f"can take that back): as an administrator run: REVOKE ALL ON DATABASE {db_ident} FROM PUBLIC;")
    if create_open:
        problems.append(f"every role may still create objects in schema public of {database} (PostgreSQL 14 and "
                        "older grant it, and only the schema's owner can take it back): as an administrator, "
                        f"connected to {database}, run: REVOKE CREATE ON SCHEMA public FROM PUBLIC;")
    return problems


def role_name(member: str) -> str:
    """A PostgreSQL role name for a member name (any text): readable part plus a hash, so names never collide."""
    readable = re.sub(r"[^a-z0-9]+", "_", member.lower()).strip("_")[:32] or "member"
    return f"ctxlamp_{readable}_{hashlib.sha256(member.encode()).hexdigest()[:8]}"


def member_url(owner_url: str, role: str, password: str | None = None) -> str:
    """The owner's URL with the member's role (host, port, database and TLS options kept; no owner password).

    `password` is put in only when given (the old form); `team member add` puts it in a password file instead.
    """
    parts = urlsplit(owner_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    secret = f":{quote(password, safe='')}" if password else ""
    netloc = f"{quote(role, safe='')}{secret}@{host}{':' + str(parts.port) if parts.port else ''}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if k.lower() not in ("password", "passfile", "user")])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def check_member_name(member: str) -> str:
    """The name as the team keeps it (trimmed); TeamError unless it is one printable line of at most NAME_MAX."""
    from service.client.textsafe import printable

    name = member.strip()
    if not name:
        raise TeamError("a member needs a name")
    if len(name) > NAME_MAX or printable(name, NAME_MAX) != name:
        raise TeamError(f"a member name is one line of at most {NAME_MAX} printable characters "
                        f"(not {printable(name, 60)!r})")
    return name


def passfile_key(url: str, role: str) -> tuple[str, str, str, str]:
    """(host, port, database, user) of the password-file line libpq matches for `role` on the owner's server."""
    from psycopg2.extensions import parse_dsn

    from service.team.server import passfile_key as key_of

    host, port, _database, _user = key_of(parse_dsn(url))
    return host, port, parse_dsn(url).get("dbname") or role, role


def set_password(cur: Any, role: str, password: str) -> None:
    """Create the member's role with `password`, or give the existing one `password` (the old one stops working).

    An existing role gets the password and LOGIN only: changing its SUPERUSER attribute, even to NOSUPERUSER,
    needs a superuser, and an owner with CREATEROLE alone was refused the whole rotation. A role of that name
    with more than a member may hold is refused instead of changed.
    """
    from psycopg2 import sql

    cur.execute("SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls "
                "FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) %s", (role,))
    found = cur.fetchone()
    if found is None:
        cur.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}")
                    .format(sql.Identifier(role), sql.Literal(password)))
        return
    if found[0]:
        raise Refused(f"the role {role} exists with privileges no member may hold (superuser, CREATEROLE, "
                      "CREATEDB, REPLICATION or BYPASSRLS); it is left as it is")
    cur.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))


def add_member(owner_url: str, member: str, passfile: Path | None = None) -> str:
    """Create the member's role (a new password when it exists) with its grants; returns its URL (no password).

    The password goes to `passfile` (default: server.default_passfile()), 0600.
    """
    import psycopg2
    from psycopg2 import sql

    from service.team import passfile as pgpass
    from service.team.migrations import writers
    from service.team.server import default_passfile

    member_grants = writers().member_grants

    member = check_member_name(member)
    role = role_name(member)
    password = secrets.token_urlsafe(24)
    target = Path(passfile) if passfile else default_passfile()
    conn = connect(owner_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute("SELECT rolsuper OR rolcreaterole FROM pg_catalog.pg_roles "
                        "WHERE rolname OPERATOR(pg_catalog.=) CURRENT_USER")
            if not cur.fetchone()[0]:  # said before PostgreSQL answers with a message naming something else
                raise Refused(f"{where(owner_url)} refused: {createrole_hint(owner_url)}")
            set_password(cur, role, password)
            cur.execute("SELECT pg_catalog.current_database()")
            database = cur.fetchone()[0]
            grants = [
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(database), sql.Identifier(role)),
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA), sql.Identifier(role)),
                sql.SQL("GRANT SELECT ON {}.member, {}.settings TO {}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(SCHEMA), sql.Identifier(role)),
                sql.SQL("GRANT EXECUTE ON FUNCTION {}.current_member() TO {}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(role)),
            ]
            cur.execute("SELECT pg_catalog.to_regprocedure(%s) IS NOT NULL", (f"{SCHEMA}.session_member()",))
            if cur.fetchone()[0]:
                # SELECT on the figure tables, the writers to write its own rows: no UPDATE or DELETE, so no
                # LOCK TABLE that could hold the other members' reports
                grants.append(sql.SQL(member_grants(sql.Identifier(role).as_string(conn))))
            else:  # a schema older than the writers (migrations/0006 takes these back when it runs)
                grants += [sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {}.{} TO {}").format(
                    sql.Identifier(SCHEMA), sql.Identifier(table), sql.Identifier(role)) for table in FIGURE_TABLES]
            for grant in grants:
                cur.execute(grant)
            cur.execute(f"INSERT INTO {SCHEMA}.member (name, role) VALUES (%s, %s) "
                        "ON CONFLICT (name) DO UPDATE SET role = EXCLUDED.role", (member, role))
            pgpass.put(target, *passfile_key(owner_url, role), password)  # before the commit: no role without it
    except psycopg2.Error as exc:
        raise classify(exc, owner_url) from None
    except OSError as exc:
        raise TeamError(f"the password file {target} cannot be written ({exc.strerror}); the role was not changed") \
            from None
    finally:
        conn.close()
    return member_url(owner_url, role)
