"""Report, spend and channel answers of the API, built on `ctxlamp report`'s cached scan.

The report's scan already reads every transcript (subagent files included:
spend) with per-file caching, so the service reuses it rather than keeping a
second copy of the same counters. Calls are serialized (the caches are files)
and run in one process (workers=1: the service has threads, the pool forks).
Channel buckets count the transcript events of each hour or day and sum their
numeric fields; the totals are the report's (priced, with its labels).
"""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Any

_lock = threading.Lock()
MAX_BUCKETS = 24 * 31


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a date or time: {text!r} (use ISO-8601, e.g. 2026-11-29 or 2026-11-29T10:00Z)") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _date_of(text: str | None, dt: datetime | None) -> str | None:
    """A plain day stays that day (it is a day in the report's zone); a time gives its UTC date."""
    if dt is None or text is None:
        return None
    return text[:10] if len(text.strip()) == 10 else _iso(dt)[:10]


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def report(since: str | None = None, until: str | None = None, timezone: str | None = "UTC",
           restart_savings: bool = True, record: tuple[list[dict], list[dict]] | None = None) -> dict:
    """`ctxlamp report --json` for the period (days in `timezone`, inclusive; empty: the machine's zone).

    `record` is the engine's own (segment profiles, live snapshots), as the service keeps them: what
    restarting would have saved is then summed from it, as the Overview does, instead of replaying every
    main transcript again (the service has read each of them already).
    """
    from service.report.build import compute

    s, u = _parse(since), _parse(until)
    first, last = _date_of(since, s), _date_of(until, u)
    with _lock:
        doc = compute(first, last, workers=1, progress=False, timezone=timezone,
                      restart_savings=restart_savings and record is None)
    doc = dict(doc)
    doc.setdefault("sources", {})
    if restart_savings and record is not None:
        from service.report import restart
        from service.report.days import DayOf

        doc["restart_savings"] = restart.block(record[0], record[1], first, last, DayOf(timezone))
    return doc


def spend(since: str | None = None, until: str | None = None, timezone: str | None = "UTC") -> dict:
    doc = report(since, until, timezone, restart_savings=False)
    return {"period": doc.get("period"), "spend": doc.get("spend"), "data_quality": doc.get("data_quality")}


def _floor(dt: datetime, bucket: str) -> datetime:
    dt = dt.astimezone(timezone.utc)
    if bucket == "hour":
        return dt.replace(minute=0, second=0, microsecond=0)
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def scan_results() -> dict[str, dict]:
    """Every transcript's scan result, from (and refreshing) the report's scan cache."""
    from service.config import configured_max_line
    from service.report import scan
    from service.client.paths import app_paths, claude_projects

    files = scan.discover(claude_projects())
    max_line = configured_max_line()
    with _lock:
        cache = scan.ScanCache(app_paths().data / "cache" / "report-scan.json", max_line)
        results = scan.scan(files, cache, workers=1, max_line=max_line)
        cache.save()
    return results


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
    u = _parse(until) or now
    s = _parse(since) or (u - (timedelta(hours=48) if bucket == "hour" else timedelta(days=14)))
    if s > u:
        raise ValueError("since is after until")
    step = timedelta(hours=1) if bucket == "hour" else timedelta(days=1)
    first = _floor(s, bucket)
    if (u - first) / step > MAX_BUCKETS:
        raise ValueError(f"at most {MAX_BUCKETS} buckets: narrow since/until or use bucket=day")
    buckets: dict[datetime, dict[str, Any]] = {}
    t = first
    while t <= u:
        buckets[t] = {"start": _iso(t), "events": 0}
        t += step
    for ev in _events(name):
        ts = _parse(ev.get("ts")) if isinstance(ev.get("ts"), str) else None
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
    doc = report(_iso(s), _iso(u), restart_savings=False)  # a channel's totals only
    block = dict(doc.get(name) or {})
    return {"channel": name, "label": block.get("label", "measured"), "bucket": bucket,
            "since": _iso(s), "until": _iso(u), "buckets": list(buckets.values()), "totals": block,
            "sources": block.get("sources") or {}}
