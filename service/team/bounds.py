"""What the team server takes and what a reader takes from it: days and figures inside fixed bounds.

A member may write its own rows with plain SQL. A day no reader can hold (5874897-01-01, or one
before year 1) or money that is not a number (NaN, infinity, 1e300) must neither break nor poison
every other member's report. Three doors hold the same bounds: the server's CHECKs refuse such
rows (migrations/0005), the reader skips rows outside them and says how many (rows written before
the CHECKs existed), and a push never sends them, so one odd figure never stops a whole push.
"""
from __future__ import annotations

import math
from datetime import date

# the first day is the team's day for figures without a readable time (figures.UNKNOWN_DAY); the
# last is the last one every reader (Python's date) holds
DAY_FIRST = date(1970, 1, 1)
DAY_LAST = date(9999, 12, 31)
MONEY_MAX = 1e9  # USD in one row, either sign (a restart saving can be negative); far above any real day
INT_MAX = 2 ** 31 - 1
BIGINT_MAX = 2 ** 63 - 1
# the team columns that are bigint on the server; the other counts are integer
BIGINT_COLUMNS = frozenset({"pinch_tokens_saved", "edit_str_replace_old_string_tokens",
                            "edit_anchored_avoided_output_tokens", "retrieval_bytes_served", "retrieval_bytes_saved",
                            "b", "l_peak"})


def day(text: str | None) -> str | None:
    """`text` when it is a YYYY-MM-DD day inside the bounds, else None."""
    try:
        d = date.fromisoformat(text or "")
    except (TypeError, ValueError):
        return None
    return d.isoformat() if DAY_FIRST <= d <= DAY_LAST and len(text or "") == 10 else None


def is_money(column: str) -> bool:
    return column.endswith("_usd")


def fits(column: str, value: object) -> bool:
    """Whether the server takes `value` in `column`: money finite and within MONEY_MAX, counts within their
    type, other real figures finite; None (a figure not measured) and text always."""
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        top = BIGINT_MAX if column in BIGINT_COLUMNS else INT_MAX
        return -top - 1 <= value <= top
    if isinstance(value, float):
        if is_money(column):
            return math.isfinite(value) and abs(value) <= MONEY_MAX
        return math.isfinite(value)
    return True


def row_fits(payload: dict) -> bool:
    """Whether the server takes the whole row (its day and every figure)."""
    if "day" in payload and day(payload["day"]) is None:
        return False
    return all(fits(k, v) for k, v in payload.items())


def money_ok_sql(column: str) -> str:
    """A SQL predicate true when `column` holds sane money (false for NaN: it sorts above every number)."""
    return f"pg_catalog.abs({column}) OPERATOR(pg_catalog.<=) '{MONEY_MAX!r}'::pg_catalog.float8"


def row_ok_sql(money_columns: tuple[str, ...] | list[str]) -> str:
    """The reader's predicate: the row's day inside the bounds and every money column sane (NULL: not sane)."""
    parts = [f"(day OPERATOR(pg_catalog.>=) DATE '{DAY_FIRST.isoformat()}' "
             f"AND day OPERATOR(pg_catalog.<=) DATE '{DAY_LAST.isoformat()}')"]
    parts += [money_ok_sql(c) for c in money_columns]
    return "COALESCE(" + " AND ".join(parts) + ", false)"
