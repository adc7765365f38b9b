"""This device's file, computed from the same scan and sums as `ctxlamp report` (UTC days).

The spend comes from the report's spend tally cut per session (tally.session_days), the requests Claude
Code billed without writing them from the report's own booking, the rent, restart savings and schedules
from the report's segments (the command's replay, or the service's profiles), Claude Code's compactions
as the report counts and prices them, and the savings channels per session and day from the report's
channel sums (the team push's; ledgers that belong to no session
apart, per day). Project folders leave the machine only as labels (the team's `projects` rule).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from service.sync.fileformat import (
    CHANNEL_COLUMNS, CHANNELS, RESTART_V1, SPEND, SPEND_COLUMNS, DeviceFile, SessionFigures, day_of_row,
    session_key,
)
from service.sync.settings import Device
from service.team.figures import shared_name


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def device_file(device: Device, projects: str, label: Callable[[str | None], str], tally: Any, results: dict,
                inputs: dict, summary: dict, segments: Iterable[dict], written_at: str | None = None) -> DeviceFile:
    """This device's figures over all its history (the report's parts of a report over all days, in UTC)."""
    sessions: dict[str, SessionFigures] = defaultdict(SessionFigures)
    rows: dict[tuple[str, str, str, str], list] = {}

    def spend_row(sid: str, day: str | None, model: str | None, project: str | None) -> list:
        key = (sid, day_of_row(day), shared_name(model or "(none)"), shared_name(label(project)))
        if key not in rows:
            rows[key] = [*key[1:], *(0.0 if c.endswith("_usd") else 0 for c in SPEND_COLUMNS[3:])]
            sessions[session_key(sid)].spend.append(rows[key])
        return rows[key]

    for (sid, day, model, project), g in tally.session_days().items():
        row = spend_row(sid, None if day == "unknown" else day, model, project)
        for column in SPEND_COLUMNS[3:]:
            if column in g:
                row[SPEND[column]] += float(g[column]) if column.endswith("_usd") else int(g[column])
        s = sessions[session_key(sid)]
        s.last_call = max(s.last_call, g["last_call"])
    spend = summary.get("spend") or {}
    by_session = spend.get("by_session") or {}
    for sid, booked in (((spend.get("unwritten") or {}).get("measured") or {}).get("by_session") or {}).items():
        project = (by_session.get(sid) or {}).get("project")
        for model, part in (booked.get("by_model") or {}).items():
            if part.get("usd"):
                spend_row(sid, booked.get("day"), model, project)[SPEND["unwritten_usd"]] += float(part["usd"])
    _add_restarts(sessions, segments)
    own = _add_channels(sessions, results, tally, inputs)
    return DeviceFile(device.id, device.name, written_at or now_utc(), projects, dict(sessions), own)


def _add_restarts(sessions: dict[str, SessionFigures], segments: Iterable[dict]) -> None:
    """Each session's rent and restart savings per UTC day its stretches of work ended (restart.block's sums)."""
    from service.days import ZONE_UTC, DayOf
    from service.report.restart import block

    day_of = DayOf(ZONE_UTC)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for p in segments:
        sid = p.get("session_id")
        day = day_of(p.get("ended_at") or p.get("started_at"))
        if isinstance(sid, str) and day is not None:
            groups[(sid, day)].append(p)
    for (sid, day), profiles in sorted(groups.items()):
        sums = block(profiles, [], None, None, day_of)
        if sums["segments"]:
            plan = sums["schedule"]
            sessions[session_key(sid)].restart.append(
                [day_of_row(day), *(sums[c] for c in RESTART_V1[1:]), plan["segments"], plan["best_usd"],
                 plan["best_restarts_only_usd"], plan["followed_usd"], plan["restarts_followed"],
                 plan["restarts_best"], plan["compactions_followed"], plan["compactions_best"]])


def _add_channels(sessions: dict[str, SessionFigures], results: dict, tally: Any, inputs: dict) -> list[list]:
    """The savings channels per session and UTC day; the events of no session (ledgers, a router) per day."""
    from service.report.summary import Period, channel_totals, day_of, period_events

    files = [results[p] for p in sorted(results)]
    groups: dict[tuple[str, str | None], list] = defaultdict(list)
    for e in period_events(files, inputs.get("external") or [], Period()):
        groups[(e.get("session_id") or "", day_of(e.get("ts")))].append(e)
    main_calls: dict[tuple[str, str | None], int] = defaultdict(int)
    for (sid, day, _model, _project), g in tally.session_days().items():
        main_calls[(sid, None if day == "unknown" else day)] += g["main_calls"]
    router = inputs.get("router")
    days = {day_of(r[0]) for r in (router or {}).get("requests", [])}
    keys = set(groups) | set(main_calls) | {("", d) for d in days}
    for (sid, day), events in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        row = _compactions(events, tally.prices, day_of)
        if sid and row:
            sessions[session_key(sid)].compactions.append([day_of_row(day), *row])
    own: list[list] = []
    for sid, day in sorted(keys, key=lambda k: (k[0], k[1] or "")):
        period = Period(day, day) if day is not None else Period()
        edit, pinch, retrieval = channel_totals(
            groups.get((sid, day), []), tally, main_calls.get((sid, day), 0), period,
            router=router if not sid and day is not None else None,
            lean_ctx_present=inputs.get("lean_ctx_present", False), usage_db_tools=inputs.get("usage_db_tools"),
            notes={})
        blocks = {"edit": edit, "pinch": pinch, "retrieval": retrieval}
        figures = [_figure(col, blocks, *CHANNELS[col]) for col in CHANNEL_COLUMNS[1:]]
        if not any(figures):
            continue
        row = [day_of_row(day), *figures]
        (sessions[session_key(sid)].channels if sid else own).append(row)
    return own


def _compactions(events: list, prices: Any, day_of: Any) -> list | None:
    """One session-day's compactions as COMPACTION_COLUMNS after the day (the report's own estimate), or None."""
    from service.engine.compactions import TRIGGERS
    from service.report.summary import compaction_events, priced_by_trigger, started_by

    mine = compaction_events(events)
    if not mine:
        return None
    priced = priced_by_trigger(mine, prices, day_of)
    counts = [sum(1 for e in mine if started_by(e) == by) for by in TRIGGERS]
    ranges = [priced[by][end] for by in TRIGGERS for end in ("low_usd", "high_usd")]
    return [*counts, sum(p["unpriced_compactions"] for p in priced.values()), *ranges]


def _figure(column: str, blocks: dict, block: str, dotted: str) -> float | int:
    value: Any = blocks[block]
    for part in dotted.split("."):
        value = value[part]
    return round(float(value), 9) if column.endswith("_usd") else int(value)
