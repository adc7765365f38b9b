"""The window's Overview: spend per day by model and by project, the dearest sessions, rent and reminders.

Built from the very figures `ctxlamp report` computes: the report itself for the
period's totals, and the report's spend tally (same scan cache, same kept call
revisions, same prices) for the per-day splits it does not print. Days are the
report's days (the user's time zone, `service/days.py`), so every sum here
equals the report's.

Rent comes from segment profiles (archived) and the live sessions' open
segments, and so does what one restart per segment would have saved, at the
first reminder and at the best call in hindsight: the engine's counterfactual
of each segment (docs/measurement.md section 14), summed here.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, datetime, timedelta, timezone
from math import fsum

from service.days import ZONE_UTC, DayOf, Zone

TOP_SESSIONS = 10


def period_days(days: int, today: date | None = None) -> tuple[str, str]:
    """(since, until): the last `days` days including today (the caller's today: a date in its zone)."""
    if days < 1 or days > 366:
        raise ValueError("days must be between 1 and 366")
    today = today or datetime.now(timezone.utc).date()
    return (today - timedelta(days=days - 1)).isoformat(), today.isoformat()


def daily_splits(tally, since: str, until: str) -> dict:
    """USD per (day, model) and (day, project), and each session's last call, from a fed SpendTally
    (days in the tally's zone)."""
    from service.channels.spend import MODEL, SIDE, TS
    from service.report.summary import Period

    day_of = tally.day_of
    period = Period(since, until, day_of)
    session_project = {fr["session_id"]: fr.get("cwd") or fr["project"]
                       for _, fr in sorted(tally.files.items()) if not fr["subagent"]}
    by_model: dict[str, dict[str, list[float]]] = {}
    by_project: dict[str, dict[str, list[float]]] = {}
    last_at: dict[str, str] = {}
    first_at: dict[str, str] = {}  # the session's earliest call read: when it started, as the window names it
    for _total, _path, rec, fr, usd, _family, _est in tally.best.values():
        ts = rec[TS]
        if isinstance(ts, str) and not (rec[SIDE] or fr["subagent"]) and ts < first_at.get(fr["session_id"], "~"):
            first_at[fr["session_id"]] = ts
        if usd is None or ts not in period:
            continue
        day = day_of(ts) or "unknown"
        sid = fr["session_id"]
        project = session_project.get(sid) or fr.get("cwd") or fr["project"]
        by_model.setdefault(day, {}).setdefault(rec[MODEL] or "(none)", []).append(usd)
        by_project.setdefault(day, {}).setdefault(project, []).append(usd)
        if isinstance(ts, str) and not (rec[SIDE] or fr["subagent"]) and ts > last_at.get(sid, ""):
            last_at[sid] = ts

    def summed(groups: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
        return {d: {k: round(fsum(v), 9) for k, v in sorted(row.items())} for d, row in sorted(groups.items())}

    return {"by_day_model": summed(by_model), "by_day_project": summed(by_project), "last_at": last_at,
            "first_at": first_at}


def _scan_tally(since: str, until: str, zone: Zone):
    """The report's spend tally over the period, fed from the report's scan cache."""
    from service.report.cached import scan_results
    from service.report.build import load_prices
    from service.report.summary import spend_tally

    results = scan_results()
    tally = spend_tally(load_prices().lookup, since, until, zone)
    for path in sorted(results):
        tally.add(path, results[path])
    return tally


def rent_block(segments: Iterable[dict], live: Iterable[dict], since: str, until: str,
               day_of: Callable[[object], str | None] | None = None) -> dict:
    """Rent on dead weight over the period, and how many reminders it raised.

    `segments` are archived profiles (counted by the day they ended), `live` the live
    snapshots (their open segment, counted by the day of their latest entry).
    """
    from service.report.summary import day_of as utc_day

    day_in = day_of or utc_day
    rows = []
    for p in segments:
        rows.append((day_in(p.get("ended_at") or p.get("started_at")), p, p.get("rent_usd")))
    for s in live:
        rows.append((day_in(s.get("updated_at")), s, s.get("bill_cycle_usd")))
    rent = []
    laps = segs = reminded = 0
    for day, row, usd in rows:
        if day is None or not (since <= day <= until) or usd is None:
            continue
        segs += 1
        rent.append(float(usd))
        n = int(row.get("laps") or 0)
        laps += n
        if n > 0:
            reminded += 1
    return {"rent_usd": round(fsum(rent), 9), "segments": segs, "reminders": laps,
            "segments_with_reminders": reminded}


def build(days: int, report: dict, splits: dict, rent: dict, live_ids: set[str | None], since: str, until: str,
          zone: str = "UTC", restart_savings: dict | None = None) -> dict:
    """The OVERVIEW document (docs/api.md) from the report, the daily splits and the rent block."""
    spend = report.get("spend") or {}
    quality = report.get("data_quality") or {}
    family = quality.get("family_priced_models") or {}
    by_model = spend.get("by_model") or {}
    estimated = round(fsum(v for m, v in by_model.items() if m in family), 9)
    billed = spend.get("billed") or {}
    billed_of = billed.get("by_session") or {}

    def session_billed(sid: str, row: dict) -> float:
        return float(billed_of.get(sid, row.get("usd") or 0.0))

    sessions = sorted((spend.get("by_session") or {}).items(), key=lambda kv: (-session_billed(*kv), kv[0]))
    compacted = (report.get("compactions") or {}).get("by_session") or {}
    top = [{"session_id": sid, "project": s.get("project"), "usd": s.get("usd"),
            "billed_usd": session_billed(sid, s), "unwritten_usd": round(session_billed(sid, s) - s["usd"], 9),
            "subagents_usd": s.get("subagents_usd"), "calls": s.get("calls"),
            "started_at": splits["first_at"].get(sid), "last_at": splits["last_at"].get(sid), "live": sid in live_ids,
           "compactions": compacted.get(sid)}
           for sid, s in sessions[:TOP_SESSIONS]]
    d0 = date.fromisoformat(since)
    day_list = [(d0 + timedelta(days=i)).isoformat() for i in range(days)]
    return {
        "period": {"days": days, "since": since, "until": until, "timezone": zone},
        "spend": {
            "total_usd": spend.get("total_usd", 0.0), "subagents_usd": spend.get("subagents_usd", 0.0),
            "estimated_usd": estimated, "measured_usd": round((spend.get("total_usd") or 0.0) - estimated, 9),
            "estimated_models": dict(family), "calls": spend.get("calls", 0),
            "billed_usd": spend.get("billed_usd", spend.get("total_usd", 0.0)),
            "unwritten_usd": billed.get("unwritten_measured_usd", 0.0),
            "unwritten_statusline_usd": billed.get("unwritten_statusline_usd", 0.0),
            "unwritten_estimated": billed.get("unwritten_estimated") or {},
            # the measured requests Claude Code did not write, per day: a layer of its own in the daily bars
            "unwritten_by_day": {d: v for d, v in ((spend.get("unwritten") or {}).get("measured") or {})
                                 .get("by_day", {}).items() if since <= d <= until and v},
            "unpriced_models": quality.get("unpriced_models") or [],
            "placeholder_output_calls": quality.get("placeholder_output_calls", 0),
            "placeholder_output_estimate_usd": quality.get("placeholder_output_estimate_usd", 0.0),
            "unknown_price_modifiers": quality.get("unknown_price_modifiers") or {},
            "days": day_list, "by_model": by_model, "by_project": spend.get("by_project") or {},
            "by_day_model": splits["by_day_model"], "by_day_project": splits["by_day_project"],
        },
        "sessions": top,
        "rent": rent,
        "restart_savings": restart_savings,
        "channels": {name: report.get(name) or {} for name in ("edit", "pinch", "retrieval")},
        # Claude Code's own compactions in the period, by who started them (the session rows carry theirs)
        "compactions": {k: v for k, v in (report.get("compactions") or {}).items() if k != "by_session"},
    }


def overview(days: int, segments: list[dict], live: list[dict], today: date | None = None,
             zone: Zone = ZONE_UTC) -> dict:
    """OVERVIEW for the last `days` days in `zone` (the service's route and the demo call this)."""
    from service.report.cached import report
    local = DayOf(zone)
    since, until = period_days(days, today or local.today())
    doc = report(since, until, zone, record=(segments, live))  # restart savings: the segments' own
    tally = _scan_tally(since, until, zone)
    rent = rent_block(segments, live, since, until, local)
    live_ids: set[str | None] = {str(s["session_id"]) for s in live if s.get("session_id")}
    return build(days, doc, daily_splits(tally, since, until), rent, live_ids, since, until, local.name,
                 doc["restart_savings"])
