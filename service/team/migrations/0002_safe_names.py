"""0002: row-level security a member's own session cannot steer, and names that are safe to print.

`current_member()` ran with the caller's search_path: on PostgreSQL 12-14,
where anyone may create in schema `public`, a member put an `=` (text, name)
of its own there, first on its path, and the function answered another
member's name. It now runs with `search_path = pg_catalog, pg_temp` and names
every operator and function by its schema; so do the policies.

Member, model and project names end up in other members' terminals and
windows: a CHECK keeps them printable (no control, bidi-override or
zero-width character) and at most NAME_MAX characters. Rows written before
are left as they are (the constraint checks every new write; the report prints
names through service/client/textsafe.py either way).
"""
from __future__ import annotations

from typing import Any

S = "ctxlamp_team"
FIGURE_TABLES = ("day_figures", "channel_day", "segment")
NAME_MAX = 200
# what service/client/textsafe.py strips, plus tab and newline (a name is one line); PostgreSQL's regex escapes
UNSAFE = r"[\u0001-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]"

CURRENT_MEMBER = f"""
CREATE OR REPLACE FUNCTION {S}.current_member() RETURNS pg_catalog.text
    LANGUAGE sql STABLE SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT m.name FROM {S}.member AS m
          WHERE m.role OPERATOR(pg_catalog.=) CAST(CURRENT_USER AS pg_catalog.text) $$;
"""

# table -> (column, may it be empty)
NAMES: dict[str, tuple[tuple[str, bool], ...]] = {
    "member": (("name", False),),
    "day_figures": (("member", False), ("model", True), ("project", True)),
    "channel_day": (("member", False),),
    "segment": (("member", False), ("model", True), ("project", True), ("session", False),
                ("end_reason", True)),
}


def name_check(column: str, may_be_empty: bool, unsafe: str = UNSAFE) -> str:
    """The CHECK expression for one name column, every operator and function named by its schema."""
    shortest = 0 if may_be_empty else 1
    return (f"(pg_catalog.char_length({column}) OPERATOR(pg_catalog.>=) {shortest} "
            f"AND pg_catalog.char_length({column}) OPERATOR(pg_catalog.<=) {NAME_MAX} "
            f"AND {column} OPERATOR(pg_catalog.!~) '{unsafe}')")


def names_check(table: str, unsafe: str = UNSAFE) -> str:
    """The CHECK expression for every name column of `table`."""
    return " AND ".join(f"({column} IS NULL OR {name_check(column, empty, unsafe)})" for column, empty in NAMES[table])


def constraint(table: str, name: str, expr: str, what: str) -> str:
    """(Re)place CHECK `name` on `table`: every new write checked; older rows validated when they all pass, else
    left as they are with a notice saying they hold `what`."""
    return f"""
ALTER TABLE {S}.{table} DROP CONSTRAINT IF EXISTS {name};
ALTER TABLE {S}.{table} ADD CONSTRAINT {name} CHECK ({expr}) NOT VALID;
DO $$ BEGIN
    ALTER TABLE {S}.{table} VALIDATE CONSTRAINT {name};
EXCEPTION WHEN check_violation THEN
    RAISE NOTICE 'older rows of {S}.{table} hold {what}; new rows are checked';
END $$;
"""


def _checks(table: str) -> str:
    return constraint(table, f"{table}_names_printable", names_check(table), "names that are not printable")


def _policies(table: str) -> str:
    me = f"member OPERATOR(pg_catalog.=) {S}.current_member()"
    return f"""
ALTER POLICY own_inserts ON {S}.{table} WITH CHECK ({me});
ALTER POLICY own_updates ON {S}.{table} USING ({me}) WITH CHECK ({me});
ALTER POLICY own_deletes ON {S}.{table} USING ({me});
"""


def up(db: Any) -> None:
    db.execute_sql(CURRENT_MEMBER)
    for table in FIGURE_TABLES:
        db.execute_sql(_policies(table))
    for table in NAMES:
        db.execute_sql(_checks(table))
