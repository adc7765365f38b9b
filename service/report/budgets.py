"""Daily and monthly budgets: what was billed today and this month against what the user means to spend.

The figures are the report's billed figure (the written calls + what Claude Code billed without writing
it) per day in the user's time zone, so a budget's day and month start at the user's midnight. A budget
of 0 is no budget. Notices come at the configured share and at 100 %, each once per day or month:
`due` says which are new against the keys already given (the service keeps them in a file).
"""
from __future__ import annotations

from datetime import date
from math import fsum
from typing import Any

KINDS = (("daily", "daily_usd", "today"), ("monthly", "monthly_usd", "this month"))


def settings(cfg: dict[str, Any] | None) -> dict[str, float]:
    """The [budgets] section with its defaults (the config has checked the ranges)."""
    section = (cfg or {}).get("budgets") or {}
    out = {"daily_usd": 0.0, "monthly_usd": 0.0, "notice_pct": 80.0}
    for key in out:
        value = section.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
    return out


def configured(cfg: dict[str, Any] | None) -> bool:
    s = settings(cfg)
    return s["daily_usd"] > 0 or s["monthly_usd"] > 0


def view(cfg: dict[str, Any] | None, billed_by_day: dict[str, float], today: date, zone: str) -> dict[str, Any]:
    """The budgets block: per kind its period, budget, what was billed and the share (None: no budget)."""
    s = settings(cfg)
    day, month = today.isoformat(), today.isoformat()[:7]
    spent = {"daily": float(billed_by_day.get(day, 0.0)),
             "monthly": fsum(float(v) for d, v in billed_by_day.items() if d[:7] == month)}
    out: dict[str, Any] = {"timezone": zone, "notice_pct": s["notice_pct"]}
    for kind, key, _words in KINDS:
        budget = s[key]
        out[kind] = None if budget <= 0 else {
            "period": day if kind == "daily" else month, "budget_usd": budget,
            "spent_usd": round(spent[kind], 9), "share": round(spent[kind] / budget, 6)}
    return out


def due(block: dict[str, Any], sent: set[str]) -> tuple[list[dict[str, Any]], set[str]]:
    """The notices this block calls for that were not given yet, and the keys given now (kind:period:pct).

    Crossing both thresholds at once gives the higher one only (both count as given)."""
    notices, keys = [], set()
    for kind, _key, words in KINDS:
        b = block.get(kind)
        if not b:
            continue
        reached = [t for t in sorted({float(block["notice_pct"]), 100.0}) if b["share"] * 100 >= t]
        new = [t for t in reached if f"{kind}:{b['period']}:{t:g}" not in sent]
        keys |= {f"{kind}:{b['period']}:{t:g}" for t in reached}
        if not new:
            continue
        top = new[-1]
        title = (f"ctxlamp: {kind} budget spent" if top >= 100 else f"ctxlamp: {top:g} % of the {kind} budget")
        body = (f"Billed {words}: ${b['spent_usd']:.2f} of your ${b['budget_usd']:.2f} {kind} budget "
                f"({b['share'] * 100:.0f} %).")
        notices.append({"kind": kind, "period": b["period"], "threshold_pct": top, "title": title, "body": body})
    return notices, keys


def current_keys(block: dict[str, Any], keys: set[str]) -> set[str]:
    """The given keys still of the current day or month (older ones can never come again)."""
    periods = {b["period"] for kind, _k, _w in KINDS if (b := block.get(kind))}
    return {k for k in keys if k.split(":")[1] in periods}


def compute(cfg: dict[str, Any] | None) -> dict[str, Any]:
    """The budgets block now: this month's billed figure per day, from the report (its caches)."""
    from service.config import report_timezone
    from service.days import DayOf, Zone
    from service.report.cached import report

    zone = Zone.named(report_timezone(cfg))
    local = DayOf(zone)
    today = local.today()
    # only the billed figure counts here: the restart savings' replay of every main transcript is spared
    doc = report(today.replace(day=1).isoformat(), today.isoformat(), zone, restart_savings=False)
    billed = ((doc.get("spend") or {}).get("billed") or {}).get("by_day") or {}
    return view(cfg, billed, today, local.name)
