"""0006: members write through three functions and hold no write privilege on the team's tables.

A member's role had INSERT, UPDATE and DELETE on the figure tables (row-level
security kept it to its own rows). UPDATE or DELETE is also what PostgreSQL
asks for `LOCK TABLE ... IN ACCESS EXCLUSIVE MODE`: one member could hold
every table and make every other member's report and push wait as long as it
liked. Members now keep SELECT alone (a lock that blocks no reader) and write
their own rows through `push_<table>(member, put, gone)`, functions that run as
the owner and write only as the member the calling role is
(`session_member()`), with the upsert and delete the push sent before.

The functions are built from the tables' own columns, keys and defaults as the
catalog has them: a later migration that adds a column calls `create_writers`
again. Every member role that exists gets the new grants and loses the old ones;
a member on an older ctxlamp is refused until it upgrades (its rows wait in its
outbox).
"""
from __future__ import annotations

from typing import Any

S = "ctxlamp_team"
FIGURE_TABLES = ("day_figures", "channel_day", "segment")

SESSION_MEMBER = f"""
CREATE OR REPLACE FUNCTION {S}.session_member() RETURNS pg_catalog.text
    LANGUAGE sql STABLE SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT m.name FROM {S}.member AS m
          WHERE m.role OPERATOR(pg_catalog.=) CAST(SESSION_USER AS pg_catalog.text) $$;
REVOKE ALL ON FUNCTION {S}.session_member() FROM PUBLIC;
"""


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(db: Any, table: str) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """([(column, type, default)] without member and pushed_at, [primary-key columns without member])."""
    cur = db.execute_sql(
        "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
        "pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attribute AS a "
        "LEFT JOIN pg_catalog.pg_attrdef AS d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid "
        "AND d.adnum OPERATOR(pg_catalog.=) a.attnum "
        "WHERE a.attrelid OPERATOR(pg_catalog.=) CAST(%s AS pg_catalog.regclass) "
        "AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped ORDER BY a.attnum", (f"{S}.{table}",))
    columns = [(n, t, d) for n, t, d in cur.fetchall() if n not in ("member", "pushed_at")]
    cur = db.execute_sql(
        "SELECT a.attname FROM pg_catalog.pg_constraint AS c JOIN pg_catalog.pg_attribute AS a "
        "ON a.attrelid OPERATOR(pg_catalog.=) c.conrelid AND a.attnum OPERATOR(pg_catalog.=) ANY (c.conkey) "
        "WHERE c.conrelid OPERATOR(pg_catalog.=) CAST(%s AS pg_catalog.regclass) "
        "AND c.contype OPERATOR(pg_catalog.=) 'p' ORDER BY a.attnum", (f"{S}.{table}",))
    keys = [r[0] for r in cur.fetchall() if r[0] != "member"]
    return columns, keys


def writer(table: str, columns: list[tuple[str, str, str | None]], keys: list[str]) -> str:
    """`push_<table>(member, put, gone)`: upsert `put` (a JSON array of rows) and delete `gone` (a JSON array of
    keys) as the calling role's member; refused (42501) when that is not `member`."""
    t = f"{S}.{_ident(table)}"
    names = [_ident(c) for c, _, _ in columns]
    record = ", ".join(f"{_ident(c)} {typ}" for c, typ, _ in columns)
    values = ", ".join(f"COALESCE(r.{_ident(c)}, {d})" if d else f"r.{_ident(c)}" for c, _, d in columns)
    key_set = set(keys)
    updated = [n for (c, _, _), n in zip(columns, names) if c not in key_set]
    sets = ", ".join(f"{n} = EXCLUDED.{n}" for n in updated)
    changed = (f"({', '.join(f't.{n}' for n in updated)}) IS DISTINCT FROM "
               f"({', '.join(f'EXCLUDED.{n}' for n in updated)})")
    key_record = ", ".join(f"{_ident(c)} {typ}" for c, typ, _ in columns if c in key_set)
    key_match = " AND ".join(f"t.{_ident(k)} OPERATOR(pg_catalog.=) k.{_ident(k)}" for k in keys)
    return f"""
CREATE OR REPLACE FUNCTION {S}.push_{table}(as_member pg_catalog.text, put pg_catalog.jsonb, gone pg_catalog.jsonb)
    RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
DECLARE
    me pg_catalog.text := {S}.session_member();
BEGIN
    IF me IS NULL OR me IS DISTINCT FROM as_member THEN
        RAISE EXCEPTION USING ERRCODE = '42501', MESSAGE = pg_catalog.concat('role ', SESSION_USER,
            ' writes as member ', COALESCE(me, '(none)'), ', not as ', as_member);
    END IF;
    INSERT INTO {t} AS t (member, {', '.join(names)})
        SELECT me, {values} FROM pg_catalog.jsonb_to_recordset(COALESCE(put, '[]'::pg_catalog.jsonb)) AS r({record})
        ON CONFLICT (member, {', '.join(_ident(k) for k in keys)})
        DO UPDATE SET {sets}, pushed_at = pg_catalog.now() WHERE {changed};
    DELETE FROM {t} AS t USING pg_catalog.jsonb_to_recordset(COALESCE(gone, '[]'::pg_catalog.jsonb)) AS k({key_record})
        WHERE t.member OPERATOR(pg_catalog.=) me AND {key_match};
END $fn$;
REVOKE ALL ON FUNCTION {S}.push_{table}(pg_catalog.text, pg_catalog.jsonb, pg_catalog.jsonb) FROM PUBLIC;
"""


def create_writers(db: Any) -> None:
    """(Re)create the three writers from the tables as they are now."""
    db.execute_sql(SESSION_MEMBER)
    for table in FIGURE_TABLES:
        columns, keys = _columns(db, table)
        db.execute_sql(writer(table, columns, keys))


def member_grants(role_sql: str) -> str:
    """What a member role holds on the figure tables from this version on (`role_sql`: the quoted role)."""
    tables = ", ".join(f"{S}.{t}" for t in FIGURE_TABLES)
    functions = ", ".join(f"{S}.push_{t}(pg_catalog.text, pg_catalog.jsonb, pg_catalog.jsonb)" for t in FIGURE_TABLES)
    return (f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {tables} FROM {role_sql}; "
            f"GRANT SELECT ON {tables} TO {role_sql}; "
            f"GRANT EXECUTE ON FUNCTION {S}.session_member(), {functions} TO {role_sql};")


def up(db: Any) -> None:
    create_writers(db)
    cur = db.execute_sql(f"SELECT m.role FROM {S}.member AS m JOIN pg_catalog.pg_roles AS g "
                         "ON g.rolname OPERATOR(pg_catalog.=) m.role ORDER BY m.role")
    for (role,) in cur.fetchall():
        db.execute_sql(member_grants(_ident(role)))
