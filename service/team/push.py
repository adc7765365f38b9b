"""`team push`: stage this member's rows in the outbox, then send what the server has not confirmed.

Each chunk of rows is one server transaction of idempotent upserts on the
natural keys (an unchanged row is not even rewritten), sent to the team's
writer functions (migrations/0006: members hold no write privilege on the
tables); the outbox marks a chunk confirmed only after the server committed
it. The writers write only as the calling role's member: a role pushing as
another member is refused (Refused).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from service.client.paths import app_paths
from service.team import bounds, figures, outbox
from service.team.server import SCHEMA, Refused, TeamError, transaction, where
from service.team.settings import TeamSettings

if TYPE_CHECKING:
    from service.store import Store

CHUNK = 2000  # rows per server transaction

# kind -> (table, natural-key columns after `member`, value columns)
TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "day": ("day_figures", ("day", "model", "project"), figures.DAY_SUMS),
    "channel": ("channel_day", ("day",), tuple(figures.CHANNEL_FIELDS)),
    "segment": ("segment", ("session", "segment"),
                ("day", "model", "project", *(f.lower() for f in figures.SEGMENT_FIELDS), "reminders",
                 "restart_first_usd", "restart_best_usd")),
}


@dataclass
class PushResult:
    sent: int      # rows the server took in this push
    waiting: int   # rows still in the outbox (0 when all is pushed)
    rows: int      # rows this member shares in all
    left_out: int = 0  # rows not shared: a day or figure outside what the team server takes (bounds.py)


def team_key(settings: TeamSettings) -> str:
    """The project-hash key: the local setting, else the team's (kept on the server by `team init`)."""
    if settings.key:
        return settings.key
    with transaction(settings.url) as cur:
        cur.execute(f"SELECT value FROM {SCHEMA}.settings WHERE name = 'project_key'")
        row = cur.fetchone()
    if not row:
        raise TeamError("the team database has no project key: run `ctxlamp team init` on it")
    return row[0]


def stage(settings: TeamSettings, store: Store, *, workers: int | None = None) -> tuple[int, int]:
    """Compute this member's rows now and bring the outbox up to date; returns (rows shared, rows left out).

    A row the server would refuse (a figure that is not a number, or out of range) is left out here: one
    such row would otherwise fail its whole transaction, and every later push with it.
    """
    computed = figures.local_rows(settings, store, workers=workers)
    current = {k: v for k, v in computed.items() if bounds.row_fits(v)}
    stored = _outbox(settings, store)
    put = outbox.changes(current, stored)
    if put and not store.team.team_outbox_write(settings.member, put=put):
        raise TeamError("the local database cannot be written; the figures will be staged on the next push")
    return len(current), len(computed) - len(current)


def _outbox(settings: TeamSettings, store: Store) -> list[dict]:
    stored = store.team.team_outbox(settings.member)
    if stored is None:
        raise TeamError("the local database cannot be read (the outbox is there)")
    return stored


def send(settings: TeamSettings, store: Store) -> tuple[int, int]:
    """Send the pending rows chunk by chunk; returns (sent, still waiting). Raises Unreachable/Refused."""
    todo = outbox.pending(_outbox(settings, store))
    if not todo:  # nothing to send: still say whether the server is there
        with transaction(settings.url) as cur:
            cur.execute("SELECT 1")
        return 0, 0
    sent = 0
    for i in range(0, len(todo), CHUNK):
        chunk = todo[i:i + CHUNK]
        with transaction(settings.url) as cur:
            for kind, (table, keys, _values) in TABLES.items():
                rows = [r for r in chunk if r["kind"] == kind]
                put = [r["payload"] for r in rows if r["payload"]]
                gone = [dict(zip(keys, json.loads(r["key"]))) for r in rows if not r["payload"]]
                if put or gone:  # members write only through the team's functions (migrations/0006)
                    cur.execute(f"SELECT {SCHEMA}.push_{table}(%s, %s::jsonb, %s::jsonb)",
                                (settings.member, _json(put), _json(gone)))
        confirm = [[r["kind"], r["key"], r["digest"]] for r in chunk if r["payload"]]
        drop = [[r["kind"], r["key"]] for r in chunk if not r["payload"]]
        if not store.team.team_outbox_write(settings.member, confirm=confirm, drop=drop):
            break  # the server has them; the next push sends them again, harmlessly
        sent += len(chunk)
    return sent, len(todo) - sent


def _json(rows: list[dict]) -> str:
    """Rows as the writers read them (JSON has no NaN: stage() left such rows out)."""
    return json.dumps(rows, separators=(",", ":"), allow_nan=False)


def failure(exc: TeamError, settings: TeamSettings, store: Store) -> dict:
    """A failed push as data (see `outcome`), saying what waits and, when refused, who the URL writes as."""
    left = waiting(settings, store)
    hint = ""
    if isinstance(exc, Refused):
        owner = writes_as(settings.url)
        if owner and owner != settings.member:
            hint = f" (this URL writes as {owner!r}, not {settings.member!r})"
    return {"ok": False, "exit_code": exc.exit_code, "sent": 0, "waiting": left, "rows": None,
            "message": f"{exc}{hint}; nothing lost: {left} rows wait in the local outbox "
                       "and the figures are computed again on the next push"}


def outcome(settings: TeamSettings, store: Store, *, workers: int | None = None) -> dict:
    """One push as data: ok, exit_code (0, 1, 3 unreachable, 4 refused), sent, waiting, rows, a one-line message."""
    try:
        result = push(settings, store, workers=workers)
    except TeamError as exc:
        return failure(exc, settings, store)
    state = "all pushed" if not result.waiting else f"{result.waiting} rows wait in the local outbox"
    if result.left_out:
        state += (f"; {result.left_out} rows left out: a figure in them is not a number or is beyond "
                  f"${bounds.MONEY_MAX:,.0f}")
    return {"ok": not result.waiting, "exit_code": 0 if not result.waiting else 1, "sent": result.sent,
            "waiting": result.waiting, "rows": result.rows,
            "message": f"team push as {settings.member} to {where(settings.url)}: {result.sent} rows sent, "
                       f"{result.rows} shared in all; {state}"}


def push(settings: TeamSettings, store: Store, *, workers: int | None = None) -> PushResult:
    """Stage, then send. The outbox keeps whatever did not reach the server (Unreachable/Refused raised)."""
    if not settings.url:
        raise TeamError("no team configured: set [team] url in config.toml or pass --url")
    settings = settings.with_key(team_key(settings))
    try:
        settings = settings.with_own_key(app_paths().config)
    except (OSError, ValueError) as exc:
        raise TeamError(f"this member's own project key cannot be kept: {exc}") from None
    rows, left_out = stage(settings, store, workers=workers)
    sent, waiting = send(settings, store)
    return PushResult(sent, waiting, rows, left_out)


def writes_as(url: str) -> str | None:
    """The member a URL's role may write as (None when it cannot be asked)."""
    try:
        with transaction(url) as cur:
            cur.execute(f"SELECT {SCHEMA}.current_member()")
            return cur.fetchone()[0]
    except TeamError:
        return None


def waiting(settings: TeamSettings, store: Store) -> int:
    """Rows of this member the server has not confirmed (for messages after a failure)."""
    stored = store.team.team_outbox(settings.member)
    return len(outbox.pending(stored)) if stored is not None else 0
