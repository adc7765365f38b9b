"""What every part of the store shares: times and days as stored, small text helpers, the queued write
and the shape of an entry in the writer's table of operations."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import date, datetime, timezone
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Iterator, TypeVar

log = logging.getLogger("ctxlamp.store")


def utc_iso(value: Any = None) -> str:
    """ISO-8601 UTC with milliseconds and `Z` (the transcripts' format), so times sort as text.

    Accepts a datetime (naive means UTC), epoch seconds, or an ISO string; text
    that does not parse is kept as given. None means now.
    """
    if value is None:
        dt = datetime.now(timezone.utc)
    elif isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(float(value), timezone.utc)
    else:
        text = str(value).strip()
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            return text
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


Models = SimpleNamespace  # models.bind_models(db): the peewee models bound to the open database, by class name
Payload = dict[str, Any]  # a queued write's arguments, as plain data (merged, read back while queued)
Row = dict[str, Any]      # a row as the store answers it
_R = TypeVar("_R")


def day_text(value: Any) -> str:
    if isinstance(value, datetime):
        return utc_iso(value)[:10]
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    date.fromisoformat(text[:10])  # ValueError for junk: the caller gets a dropped write, logged
    return text[:10]


def norm_project(project: Any) -> str | None:
    if project is None or str(project).strip() == "":
        return None
    return os.path.normpath(str(project))


def path_list(paths: Iterable[Any] | None) -> list[str]:
    """The paths as text, each once, in their order (empty ones left out)."""
    return list(dict.fromkeys(text for text in (str(p) for p in paths or ()) if text))


def cut_text(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    whole = str(text)
    return whole if len(whole) <= limit else whole[: limit - 1] + "…"


@dataclass
class QueuedWrite:
    """One queued write: `kind` names its entry in the writer's table; `key` lets equal writes merge."""

    kind: str
    payload: Payload
    key: tuple[Any, ...] | None = None


def session_lineage(m: Models, session_id: str | None) -> str | None:
    """The lineage a session's turns belong to: the one it loaded, else the one its own handoff started."""
    if not session_id:
        return None
    db = m.Session._meta.database
    for sql, params in _lineage_sql(m, db):
        row = db.execute_sql(sql, [session_id if p == _SESSION else p for p in params]).fetchone()
        if row is not None and row[0]:
            return str(row[0])
    return None


def session_lineages(m: Models, session_ids: Iterable[str]) -> dict[str, str | None]:
    """`session_lineage` of many sessions, with two queries per thousand of them instead of two each (a
    first start writes the turns of hundreds of sessions at once)."""
    S, H = m.Session, m.Handoff
    found: dict[str, str | None] = {}
    for part in id_runs(session_ids):
        own = {sid: lineage for sid, lineage in S.select(S.session_id, S.lineage_id).where(S.session_id.in_(part))
               .tuples()}
        newest: dict[str, str | None] = {}
        for sid, lineage in (H.select(H.from_session, H.lineage_id).where(H.from_session.in_(part))
                             .order_by(H.created_at.desc(), H.id.desc()).tuples()):
            newest.setdefault(sid, lineage)  # the newest handoff of each, as session_lineage's LIMIT 1
        for sid in part:
            found[sid] = str(own[sid]) if own.get(sid) else (str(newest[sid]) if newest.get(sid) else None)
    return found


IDS_PER_QUERY = 500  # under SQLite's oldest limit of 999 bound values a statement


def id_runs(ids: Iterable[str]) -> Iterator[list[str]]:
    """The distinct ids, in order, in runs of at most IDS_PER_QUERY: what one `IN (...)` query can bind."""
    distinct = list(dict.fromkeys(ids))
    for at in range(0, len(distinct), IDS_PER_QUERY):
        yield distinct[at:at + IDS_PER_QUERY]


_SESSION = "\x00session id\x00"  # marks where the session id goes in the compiled queries' parameters
_LINEAGE_SQL: dict[str, list[tuple[str, list[Any]]]] = {}


def _lineage_sql(m: Models, db: Any) -> list[tuple[str, list[Any]]]:
    """session_lineage's two queries, compiled once per SQL dialect: every batch of turns asks them, and
    building them anew cost more than running them (0.57 ms a lookup)."""
    dialect = type(db).__name__
    if dialect not in _LINEAGE_SQL:
        S, H = m.Session, m.Handoff
        queries = (S.select(S.lineage_id).where(S.session_id == _SESSION).limit(1),
                   H.select(H.lineage_id).where(H.from_session == _SESSION)
                   .order_by(H.created_at.desc(), H.id.desc()).limit(1))
        _LINEAGE_SQL[dialect] = [(sql, list(params)) for sql, params in (q.sql() for q in queries)]
    return _LINEAGE_SQL[dialect]


Merge = Callable[[Payload, Payload], Payload]


@dataclass(frozen=True)
class Operation:
    """An entry of the writer's table: how a queued write of one kind lands, and how two queued ones merge.

    `apply_many`, when given, lands a run of writes of this kind (queued one after another) at once, with
    what applying them one by one in their order leaves in the database: one statement for many rows.
    """

    apply: Callable[[Models, Payload], object]
    merge: Merge | None = None
    apply_many: Callable[[Models, list[Payload]], None] | None = None


def spread(fn: Callable[..., _R]) -> Callable[[Models, Payload], _R]:
    """`fn(m, **payload)`: a part's write keeps its fields as named parameters."""
    def apply(m: Models, payload: Payload) -> _R:
        return fn(m, **payload)
    return apply


def newest(old: Payload, new: Payload) -> Payload:
    """Merge of two queued upserts of one row: the newer wins."""
    return new


def insert_rows(build: Callable[[Row], Any], rows: list[Row]) -> None:
    """Run the insert `build(row)` makes (a peewee model insert, upserts included) for each row, in order.

    peewee builds each statement anew and that cost far more than running it (a millisecond for a
    profile's upsert): here it builds the statement once for a run of rows with the same keys, and
    the rows' values go through the same conversions (`db_value`, the model's defaults) to one
    `executemany`. A statement with parameters of its own, or values that do not come out as peewee
    makes them for the first row, is run row by row the usual way.
    """
    at = 0
    while at < len(rows):
        end = at + 1
        while end < len(rows) and rows[end].keys() == rows[at].keys():
            end += 1
        _insert_run(build, rows[at:end])
        at = end


def _insert_run(build: Callable[[Row], Any], rows: list[Row]) -> None:
    query = build(rows[0])
    sql, params = query.sql()
    model = query.model
    fields = [model._meta.fields[name] for name in rows[0]]
    fields += [f for f in model._meta.defaults if f.name not in rows[0]]
    fields.sort(key=lambda f: f.get_sort_key(None))
    values = [[f.db_value(_value(model, f, row)) for f in fields] for row in rows]
    if len(rows) == 1 or list(params) != values[0]:
        for row in rows:
            build(row).execute()
        return
    model._meta.database.cursor().executemany(sql, values)


def _value(model: Any, field: Any, row: Row) -> Any:
    if field.name in row:
        return row[field.name]
    default = model._meta.defaults[field]
    return default() if callable(default) else default
