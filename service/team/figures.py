"""What a member shares: its local figures as team rows (the same figures `ctxlamp report` computes).

The spend, pinch, edit and retrieval figures come from the report's own scan
and summing code (commands/report.py, channels/summary.py and tally.py), cut
by day (and model and project for spend); rent, reminders and segment
profiles come from the local database the service writes. Rows carry numbers,
model names, days and project labels (settings.project_label): never prompts,
paths, transcript text or session ids (those are keyed hashes too).

Rows: (kind, key) -> payload, kind "day" (day, model, project), "channel"
(day) or "segment" (session hash, segment).
"""
from __future__ import annotations

import json
from collections import defaultdict
from math import fsum
from typing import TYPE_CHECKING, Any

from service.team.settings import TeamSettings

if TYPE_CHECKING:
    from service.report.tally import SpendTally

UNKNOWN_DAY = "1970-01-01"  # calls or events without a readable time (the team tables key on a date)
RESTART_REASONS = ("compact", "rotation")  # a segment that ended this way was restarted (not a shutdown)
DAY_SUMS = ("main_usd", "subagents_usd", "estimated_usd", "calls", "main_calls", "unpriced_calls", "rent_usd",
            "reminders", "restarts_after_reminder", "unwritten_usd",
            # what one restart per segment would have saved (measurement.md 14), by the day the segment ended
            "restart_first_usd", "restart_best_usd", "restart_missed_usd", "restart_segments_reminded")
CHANNEL_FIELDS = {  # team column -> (report block, field)
    "pinch_events": ("pinch", "events"),
    "pinch_requests": ("pinch", "requests"),
    "pinch_pinched_requests": ("pinch", "pinched_requests"),
    "pinch_tokens_saved": ("pinch", "tokens_saved_total"),
    "pinch_saved_usd": ("pinch", "saved_usd"),
    "edit_str_replace_calls": ("edit", "str_replace_calls"),
    "edit_str_replace_old_string_tokens": ("edit", "str_replace_old_string_tokens"),
    "edit_str_replace_old_string_usd": ("edit", "str_replace_old_string_usd"),
    "edit_str_replace_misses": ("edit", "str_replace_misses.total"),
    "edit_anchored_calls": ("edit", "anchored_calls"),
    "edit_anchored_avoided_output_tokens": ("edit", "anchored_avoided_output_tokens"),
    "retrieval_calls": ("retrieval", "calls"),
    "retrieval_bytes_served": ("retrieval", "bytes_served"),
    "retrieval_bytes_saved": ("retrieval", "bytes_saved"),
}
SEGMENT_FIELDS = ("end_reason", "calls", "turns", "B", "L_peak", "g", "br", "mf", "bill_in_usd", "bill_out_usd",
                  "rent_usd", "laps", "duration_s")


def shared_name(text: str | None) -> str:
    """A model or project name as the team keeps it: one printable line of at most NAME_MAX characters.

    Transcripts and folder names are outside text; the team schema refuses
    anything else (migrations/0002), so an odd name is cleaned here, not refused there.
    """
    from service.team.schema import NAME_MAX
    from service.client.textsafe import printable

    return printable(text or "", NAME_MAX)


def row_key(*parts) -> str:
    return json.dumps(list(parts), separators=(",", ":"), ensure_ascii=False)


def _day(day: str | None) -> str:
    """A day as the team keeps it: a readable day inside the server's bounds, else the unknown day."""
    from service.team.bounds import day as bounded

    return bounded(day) or UNKNOWN_DAY


def _money(x: float) -> float:
    return round(float(x), 9)


def _field(block: dict, dotted: str):
    for part in dotted.split("."):
        block = block[part]
    return block


def report_parts(*, workers: int | None = None) -> tuple[dict, dict, SpendTally, dict]:
    """(summary, scan results, spend tally, the summary's other inputs) of a report over all days."""
    from service.report.build import compute

    kept: list = []
    summary = compute(workers=workers, progress=False, keep=kept, restart_savings=False)  # profiles: the store's
    results, _cache, tally, inputs = kept[-1]
    return summary, results, tally, inputs


def channel_days(results: dict, tally, inputs: dict, breakdown: dict) -> dict[str, dict]:
    """Day -> the report's edit, pinch and retrieval figures over that day (channel_totals, per day)."""
    from service.report.summary import Period, channel_totals, day_of, period_events

    files = [results[p] for p in sorted(results)]
    by_day: dict[str | None, list] = defaultdict(list)
    for e in period_events(files, inputs["external"], Period()):
        by_day[day_of(e.get("ts"))].append(e)
    main_calls: dict[str, int] = defaultdict(int)
    for (day, _model, _project), g in breakdown.items():
        main_calls[day] += g["main_calls"]
    router = inputs.get("router")
    days = set(by_day) | {d for d in main_calls if d != "unknown"}
    days |= {day_of(r[0]) for r in (router or {}).get("requests", [])}
    out = {}
    for day in sorted(days, key=lambda d: d or ""):
        known = day is not None
        edit, pinch, retrieval = channel_totals(
            by_day.get(day, []), tally, main_calls.get("unknown" if day is None else day, 0),
            Period(day, day) if known else Period(), router=router if known else None,
            lean_ctx_present=inputs.get("lean_ctx_present", False), usage_db_tools=inputs.get("usage_db_tools"),
            notes=inputs.get("notes"))
        out[_day(day)] = {"edit": edit, "pinch": pinch, "retrieval": retrieval}
    return out


def unwritten_by_day(summary: dict) -> dict[tuple[str, str, str], float]:
    """(UTC day, model, project) -> USD of the requests Claude Code made and did not write (measured from its
    cost-state), as the report booked them per session: the team's billed figure adds these to the calls."""
    spend = summary.get("spend") or {}
    sessions = spend.get("by_session") or {}
    out: dict[tuple[str, str, str], float] = defaultdict(float)
    for sid, row in (((spend.get("unwritten") or {}).get("measured") or {}).get("by_session") or {}).items():
        project = (sessions.get(sid) or {}).get("project") or ""
        for model, booked in (row.get("by_model") or {}).items():
            if booked.get("usd"):
                out[(row.get("day") or "unknown", model, project)] += float(booked["usd"])
    return dict(out)


def local_rows(settings: TeamSettings, store, *, workers: int | None = None) -> dict[tuple[str, str], dict]:
    """Every row this member shares, computed now from the transcripts, ledgers and the local database."""
    summary, results, tally, inputs = report_parts(workers=workers)
    breakdown = tally.breakdown()
    rows: dict[tuple[str, str], dict] = {}

    day_acc = DayRows(settings)
    for (day, model, project), g in breakdown.items():
        acc = day_acc.at(day, model, project)
        for k in ("main_usd", "subagents_usd", "estimated_usd", "calls", "main_calls", "unpriced_calls"):
            acc[k].append(g[k])
    for (day, model, project), usd in unwritten_by_day(summary).items():
        day_acc.at(day, model, project)["unwritten_usd"].append(usd)
    _add_store_figures(settings, store, day_acc, rows)
    for (day, model, project), acc in day_acc.items():
        payload: dict[str, Any] = {"day": day, "model": model, "project": project}
        for k in DAY_SUMS:
            vals = acc.get(k, [])
            payload[k] = _money(fsum(vals)) if k.endswith("_usd") else int(sum(vals))
        rows[("day", row_key(day, model, project))] = payload

    for day, blocks in channel_days(results, tally, inputs, breakdown).items():
        payload = {col: _field(blocks[block], field) for col, (block, field) in CHANNEL_FIELDS.items()}
        if not any(payload.values()):
            continue
        payload = {k: _money(v) if k.endswith("_usd") else int(v) for k, v in payload.items()}
        rows[("channel", row_key(day))] = {"day": day, **payload}
    return rows


def _add_store_figures(settings: TeamSettings, store, day_acc: DayRows, rows: dict) -> None:
    """Rent, reminders and restarts after a reminder (day rows) and segment profiles, from the local database."""
    if store is None:
        return
    profiles = store.sessions.segments(limit=10 ** 9) or []
    reminders = store.sessions.reminders() or []
    projects: dict[str, str | None] = {}

    def project(sid: str) -> str | None:
        if sid not in projects:
            projects[sid] = (store.sessions.session(sid) or {}).get("project")
        return projects[sid]

    reminded: dict[tuple[str, int], int] = defaultdict(int)
    for r in reminders:
        reminded[(r["session_id"], int(r["segment"]))] += 1
    profile_of = {(p["session_id"], int(p["segment"])): p for p in profiles}
    for r in reminders:
        p = profile_of.get((r["session_id"], int(r["segment"])))
        model = (p or {}).get("model") or (store.sessions.session(r["session_id"]) or {}).get("model") or "(none)"
        day_acc.at((r.get("at") or "")[:10], model, project(r["session_id"]))["reminders"].append(1)
    for p in profiles:
        sid, seg = p["session_id"], int(p["segment"])
        day, model, label = day_acc.key((p.get("ended_at") or p.get("archived_at") or "")[:10],
                                        p.get("model") or "(none)", project(sid))
        acc = day_acc.at(day, model, project(sid))
        acc["rent_usd"].append(float(p.get("rent_usd") or 0.0))
        restarted = p.get("end_reason") in RESTART_REASONS and reminded.get((sid, seg), 0) > 0
        acc["restarts_after_reminder"].append(1 if restarted else 0)
        restart = _restart_sums(p, acc)
        session = settings.hashed(sid)
        payload = {"session": session, "segment": seg, "day": day, "model": model, "project": label,
                   "reminders": reminded.get((sid, seg), 0)}
        for k in SEGMENT_FIELDS:
            payload[k.lower()] = p.get(k)
        if p.get("end_reason") is not None:
            payload["end_reason"] = shared_name(str(p["end_reason"]))
        payload.update(restart)
        rows[("segment", row_key(session, seg))] = payload


class DayRows(defaultdict):
    """The day rows being summed, keyed (day, model, project) as the team keeps them.

    Every figure reaches a row through `at`, so every row's names pass the same
    filter the server's CHECK asks for: one odd model key or folder name is cleaned,
    never a refusal that stops the whole push.
    """

    def __init__(self, settings: TeamSettings):
        super().__init__(lambda: defaultdict(list))
        self.settings = settings

    def key(self, day: str | None, model: str | None, project: str | None) -> tuple[str, str, str]:
        """(day, model, project label) as shared: the day bounded, the names printable and short."""
        return _day(day), shared_name(model), shared_name(self.settings.project_label(project))

    def at(self, day: str | None, model: str | None, project: str | None) -> dict[str, list]:
        """The sums of one row (a project is the local folder; its label is what the team sees)."""
        return self[self.key(day, model, project)]


def _restart_sums(profile: dict, acc: dict) -> dict:
    """Add a segment's restart figures to its day's sums; its own two figures (None before they existed)."""
    from service.engine.restart_savings import RestartFigures

    try:
        fig = RestartFigures.from_dict(profile.get("restart_savings"))
    except TypeError:
        fig = None
    if fig is None:
        return {"restart_first_usd": None, "restart_best_usd": None}
    acc["restart_best_usd"].append(fig.best_usd)
    if fig.first_reminder_call is not None:
        acc["restart_first_usd"].append(fig.first_reminder_usd)
        acc["restart_segments_reminded"].append(1)
    elif fig.best_usd > 0:
        acc["restart_missed_usd"].append(fig.best_usd)
    return {"restart_first_usd": _money(fig.first_reminder_usd) if fig.first_reminder_call is not None else None,
            "restart_best_usd": _money(fig.best_usd)}
