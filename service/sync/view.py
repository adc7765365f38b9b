"""The report over every device: the sums of the devices' files put where the report keeps its figures.

What sums across devices: spend, billed, tokens, rent, restart savings and schedules, Claude Code's
compactions, the savings channels. Ratios are recomputed from the sums. What stays this device's: data quality, the per-session list, medians,
the per-tool search lines (the folder holds no per-tool figures), where the figures came from.
Budgets read the billed days, so they count every device; plan limits are no part of a report.
"""
from __future__ import annotations

import copy
from datetime import datetime, timezone
from math import fsum

from service.engine.compactions import TRIGGERS
from service.sync.fileformat import CHANNEL_COLUMNS, CHANNELS, RESTART_V1, VERSION
from service.sync.merge import Merged, Sums, parse_instant


def _r(x: float) -> float:
    return round(x, 9)


def devices_block(merged: Merged, this_id: str, now: datetime, stale_after_s: float) -> list[dict]:
    """[{id, name, last_seen, total_usd, this, stale}] by name: what each device's figures add over the period.

    `last_seen` is when the device last wrote, by its own clock, never later than this device's now (a
    clock ahead must not make a device look fresh for ever); `stale` when that is longer ago than
    `[sync] stale_after`: its figures are kept all the same.
    """
    out = []
    for d in merged.devices:
        seen = min(parse_instant(d.written_at), now)
        sums = merged.per_device.get(d.id) or Sums()
        out.append({"id": d.id, "name": d.name,
                    "last_seen": seen.isoformat(timespec="seconds").replace("+00:00", "Z"),
                    "total_usd": _r(sums.billed()), "calls": sums.counts.get("calls", 0),
                    "this": d.id == this_id, "stale": (now - seen).total_seconds() > stale_after_s,
                    "older": d.version < VERSION})
    return sorted(out, key=lambda x: (not x["this"], x["name"].casefold(), x["id"]))


def merged_summary(local: dict, merged: Merged, devices: list[dict], skipped: list[tuple[str, str]],
                   device: str) -> dict:
    """`local` (this device's report over the same UTC days) with every summed figure the devices' sum."""
    s = copy.deepcopy(local)
    t = merged.total
    sp = s["spend"]
    written = fsum([t.total("main_usd"), t.total("subagents_usd")])
    sp.update({
        "total_usd": _r(written), "main_usd": _r(t.total("main_usd")), "subagents_usd": _r(t.total("subagents_usd")),
        "calls": t.counts.get("calls", 0),
        "by_model": {k: _r(fsum(v)) for k, v in sorted(t.by_model.items())},
        "by_day": {k: _r(fsum(v)) for k, v in sorted(t.by_day.items())},
        "by_project": {k: _r(fsum(v)) for k, v in sorted(t.by_project.items())},
        "days": {day: {**{k: v for k, v in d.items() if k != "models"}, "models": sorted(d["models"]),
                       "total_tokens": sum(v for k, v in d.items() if k.endswith("_tokens"))}
                 for day, d in sorted(t.days.items())},
        "billed_usd": _r(t.billed()),
    })
    billed = sp.get("billed") or {}
    billed.update({"usd": _r(t.billed()), "written_usd": _r(written),
                   "unwritten_measured_usd": _r(t.total("unwritten_usd")),
                   "by_day": {k: _r(fsum(v)) for k, v in sorted(t.billed_by_day.items())}})
    sp["billed"] = billed
    _restart(s.get("restart_savings"), t)
    _compactions(s.get("compactions"), t)
    _channels(s, t)
    s["period"] = {**(s.get("period") or {}), "timezone": "UTC"}
    s["devices"] = devices
    s["sync"] = {"device": device, "days": "UTC", "skipped": [{"file": f, "reason": r} for f, r in skipped],
                 "this_device_only": ["data_quality", "spend.by_session", "spend.billed.by_session",
                                      "spend.unwritten", "compactions.by_session", "pinch.tokens_saved_median",
                                      "retrieval.tools", "sources"]}
    return s


def merged_overview(doc: dict, merged: Merged, devices: list[dict], skipped: list[tuple[str, str]]) -> dict:
    """The window's Overview (GET /api/v1/overview, in UTC days) with the devices' sums: its headline,
    its daily bars by model and by project, the rent, the restart savings and the channels. Its list of
    dearest sessions stays this device's (the folder names no session)."""
    s = copy.deepcopy(doc)
    t = merged.total
    sp = s["spend"]
    written = fsum([t.total("main_usd"), t.total("subagents_usd")])
    estimated = t.total("estimated_usd")

    def by_day(groups: dict[tuple[str, str], list[float]]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for (day, key), values in sorted(groups.items()):
            out.setdefault(day, {})[key] = _r(fsum(values))
        return out

    sp.update({
        "total_usd": _r(written), "subagents_usd": _r(t.total("subagents_usd")), "estimated_usd": _r(estimated),
        "measured_usd": _r(written - estimated), "calls": t.counts.get("calls", 0), "billed_usd": _r(t.billed()),
        "unwritten_usd": _r(t.total("unwritten_usd")),
        "unwritten_by_day": {d: _r(fsum(v)) for d, v in sorted(t.unwritten_by_day.items()) if fsum(v)},
        "by_model": {k: _r(fsum(v)) for k, v in sorted(t.by_model.items())},
        "by_project": {k: _r(fsum(v)) for k, v in sorted(t.by_project.items())},
        "by_day_model": by_day(t.by_day_model), "by_day_project": by_day(t.by_day_project),
    })
    rent = s.get("rent")
    if isinstance(rent, dict):
        rent.update({"rent_usd": _r(fsum(t.restart.get("rent_usd", []))),
                     "segments": int(sum(t.restart.get("segments", []))),
                     "reminders": int(sum(t.restart.get("reminders", []))),
                     "segments_with_reminders": int(sum(t.restart.get("segments_with_reminders", [])))})
    _restart(s.get("restart_savings"), t)
    _compactions(s.get("compactions"), t)
    _channels(s.setdefault("channels", {}), t)
    s["period"] = {**(s.get("period") or {}), "timezone": "UTC"}
    s["devices"] = devices
    s["sync"] = {"device": "all", "days": "UTC", "skipped": [{"file": f, "reason": r} for f, r in skipped],
                 "this_device_only": ["sessions", "spend.unpriced_models", "spend.placeholder_output_calls"]}
    return s


def _restart(rs: dict | None, t: Sums) -> None:
    if rs is None:
        return

    def total(column: str) -> float:
        return _r(fsum(t.restart.get(column, [])))

    def count(column: str) -> int:
        return int(sum(t.restart.get(column, [])))

    for column in RESTART_V1[1:]:
        rs[column] = total(column) if column.endswith("_usd") else count(column)
    with_reminders = fsum([rs["best_single_usd"], -rs["missed_usd"]])
    rs["capture"] = round(rs["first_reminder_usd"] / with_reminders, 6) if with_reminders > 0 else None
    plan = rs.get("schedule")
    if isinstance(plan, dict):
        best, followed = total("schedule_best_usd"), total("schedule_followed_usd")
        plan.update({"best_usd": best, "best_restarts_only_usd": total("schedule_best_restarts_only_usd"),
                     "followed_usd": followed, "capture": round(followed / best, 6) if best > 0 else None,
                     "segments": count("schedule_segments"),
                     **{k: count(k) for k in ("restarts_followed", "restarts_best", "compactions_followed",
                                              "compactions_best")}})


def _compactions(block: dict | None, t: Sums) -> None:
    """The compactions' counts and estimated cost, summed; which sessions had them stays this device's."""
    if block is None:
        return
    c = t.compactions

    def end(by: str, which: str) -> float:
        return fsum(c.get(f"{by}_{which}_usd", []))

    low, high = fsum(end(by, "low") for by in TRIGGERS), fsum(end(by, "high") for by in TRIGGERS)
    by_trigger = {by: int(sum(c.get(by, []))) for by in TRIGGERS}
    block.update({"by_trigger": by_trigger, "count": sum(by_trigger.values()), "cost_usd": _r((low + high) / 2),
                  "cost_range_usd": {"low": _r(low), "high": _r(high)},
                  "cost_usd_by_trigger": {by: _r((end(by, "low") + end(by, "high")) / 2) for by in TRIGGERS},
                  "unpriced": int(sum(c.get("unpriced", [])))})


def _channels(s: dict, t: Sums) -> None:
    for column in CHANNEL_COLUMNS[1:]:
        block_name, dotted = CHANNELS[column]
        values = t.channels.get(column, [])
        total = _r(fsum(values)) if column.endswith("_usd") else int(sum(values))
        block = s.setdefault(block_name, {})
        *parents, last = dotted.split(".")
        for part in parents:
            block = block.setdefault(part, {})
        block[last] = total
    pinch = s.get("pinch") or {}
    if "share_pinched" in pinch:
        requests = pinch.get("requests") or 0
        pinch["share_pinched"] = round(pinch.get("pinched_requests", 0) / requests, 6) if requests else 0.0


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
