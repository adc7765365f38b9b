"""The API's spend and channel answers: slices of the service's cached report.

Channel buckets count the transcript events of each hour or day and sum their numeric fields;
the totals are the report's (priced, with its labels).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from service.days import ZONE_UTC, Zone
from service.report.cached import iso_utc, parse_time, report, scan_results

MAX_BUCKETS = 24 * 31


def spend(since: str | None = None, until: str | None = None, zone: Zone = ZONE_UTC) -> dict:
    doc = report(since, until, zone, restart_savings=False)
    return {"period": doc.get("period"), "spend": doc.get("spend"), "data_quality": doc.get("data_quality")}


def _floor(dt: datetime, bucket: str) -> datetime:
    dt = dt.astimezone(timezone.utc)
    if bucket == "hour":
        return dt.replace(minute=0, second=0, microsecond=0)
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _events(channel: str) -> list[dict]:
    """The channel's transcript events from the report's scan cache."""
    results = scan_results()
    out = []
    seen = set()
    for res in results.values():
        for ev in res.get("events") or []:
            if ev.get("channel") != channel:
                continue
            key = (ev.get("kind"), ev.get("ts"), ev.get("session_id"), repr(sorted((ev.get("data") or {}).items())))
            if key in seen:  # a subagent's events may also be inline in the main file (1.0.x)
                continue
            seen.add(key)
            out.append(ev)
    return out


def channel(name: str, since: str | None = None, until: str | None = None, bucket: str = "day") -> dict:
    """CHANNEL of docs/api.md."""
    now = datetime.now(timezone.utc)
    u = parse_time(until) or now
    s = parse_time(since) or (u - (timedelta(hours=48) if bucket == "hour" else timedelta(days=14)))
    if s > u:
        raise ValueError("since is after until")
    step = timedelta(hours=1) if bucket == "hour" else timedelta(days=1)
    first = _floor(s, bucket)
    if (u - first) / step > MAX_BUCKETS:
        raise ValueError(f"at most {MAX_BUCKETS} buckets: narrow since/until or use bucket=day")
    buckets: dict[datetime, dict[str, Any]] = {}
    t = first
    while t <= u:
        buckets[t] = {"start": iso_utc(t), "events": 0}
        t += step
    for ev in _events(name):
        ts = parse_time(ev.get("ts")) if isinstance(ev.get("ts"), str) else None
        if ts is None or ts < s or ts > u:
            continue
        row = buckets.get(_floor(ts, bucket))
        if row is None:
            continue
        row["events"] += 1
        kind = ev.get("kind")
        if kind:
            row[f"kind:{kind}"] = row.get(f"kind:{kind}", 0) + 1
        for k, v in (ev.get("data") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row[k] = row.get(k, 0) + v
    doc = report(iso_utc(s), iso_utc(u), restart_savings=False)  # a channel's totals only
    block = dict(doc.get(name) or {})
    return {"channel": name, "label": block.get("label", "measured"), "bucket": bucket,
            "since": iso_utc(s), "until": iso_utc(u), "buckets": list(buckets.values()), "totals": block,
            "sources": block.get("sources") or {}}
