"""0005: days and money every reader can hold, and names without invisible characters.

A member writes its own rows, with ctxlamp or with plain SQL. A day of
5874897-01-01 (or one before year 1) made every member's `team report` fail,
and NaN, infinity or 1e300 in money made the team's total `nan`. Days are now
1970-01-01 (the team's day for figures without a readable time) to 9999-12-31,
money is finite and within 1e9 USD either way, and the other real figures of a
segment are finite (service/team/bounds.py holds the same bounds for the
reader and the push).

The printable-name CHECK of 0002 let through characters that make one name
look like another or hide text: U+180E, tag characters (U+E0000...), variation
selectors, Hangul fillers and the other format and default-ignorable code
points. It now refuses the set service/client/textsafe.py strips.

Like 0002, rows written before are left as they are (each constraint checks
every new write; the reader skips rows outside the bounds and says so).
"""
from __future__ import annotations

import importlib
from typing import Any

S = "ctxlamp_team"
# service/client/textsafe.py's set, plus tab and newline (a name is one line); PostgreSQL's regex escapes
UNSAFE = (r"[\u0001-\u001f\u007f-\u009f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
          r"\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
          r"\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
          r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
DAY_FIRST, DAY_LAST = "1970-01-01", "9999-12-31"
MONEY_MAX = "1e9"

# table -> money columns, other real columns (nullable ones may stay NULL: a figure not measured)
FIGURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "day_figures": (("main_usd", "subagents_usd", "estimated_usd", "rent_usd", "unwritten_usd", "restart_first_usd",
                     "restart_best_usd", "restart_missed_usd"), ()),
    "channel_day": (("pinch_saved_usd", "edit_str_replace_old_string_usd"), ()),
    "segment": (("bill_in_usd", "bill_out_usd", "rent_usd", "restart_first_usd", "restart_best_usd"),
                ("g", "br", "mf", "duration_s")),
}
_SAFE_NAMES = importlib.import_module(f"{__package__}.0002_safe_names")  # its name columns and CHECK, wider


def name_check(column: str, may_be_empty: bool) -> str:
    return _SAFE_NAMES.name_check(column, may_be_empty, UNSAFE)


def figures_check(table: str) -> str:
    """Day inside the bounds, money finite and bounded, other reals finite (NaN sorts above infinity)."""
    money, reals = FIGURES[table]
    parts = [f"day OPERATOR(pg_catalog.>=) DATE '{DAY_FIRST}' AND day OPERATOR(pg_catalog.<=) DATE '{DAY_LAST}'"]
    parts += [f"({c} IS NULL OR ({c} OPERATOR(pg_catalog.>=) '-{MONEY_MAX}'::pg_catalog.float8 "
              f"AND {c} OPERATOR(pg_catalog.<=) '{MONEY_MAX}'::pg_catalog.float8))" for c in money]
    parts += [f"({c} IS NULL OR ({c} OPERATOR(pg_catalog.>) '-Infinity'::pg_catalog.float8 "
              f"AND {c} OPERATOR(pg_catalog.<) 'Infinity'::pg_catalog.float8))" for c in reals]
    return " AND ".join(f"({p})" for p in parts)


def up(db: Any) -> None:
    for table in _SAFE_NAMES.NAMES:
        db.execute_sql(_SAFE_NAMES.constraint(table, f"{table}_names_printable",
                                              _SAFE_NAMES.names_check(table, UNSAFE), "names that are not printable"))
    for table in FIGURES:
        db.execute_sql(_SAFE_NAMES.constraint(table, f"{table}_figures_bounded", figures_check(table),
                                              "days or figures outside the bounds"))
