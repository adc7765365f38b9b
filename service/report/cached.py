"""The report as the service answers it, built on `ctxlamp report`'s cached scan.

The report's scan already reads every transcript (subagent files included:
spend) with per-file caching, so the service reuses it rather than keeping a
second copy of the same counters. Scans are serialized by `SCAN_LOCK` (the caches
are files; the team push takes it too) and run in one process (workers=1: the
service has threads, the pool forks).
"""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

from service.days import ZONE_UTC, Zone

SCAN_LOCK = threading.Lock()  # one scan of the report's caches at a time
# The instants a period may name: a day's bounds, a zone's offset and a default span are computed
# around them, which overflows near years 1 and 9999; the C library's local time (Windows) ends
# at year 3000, and no transcript is older than 1970.
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(3000, 1, 1, tzinfo=timezone.utc)


def parse_time(text: str | None) -> datetime | None:
    """An ISO-8601 date or time (UTC when it names no zone), within EARLIEST..LATEST; ValueError else."""
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a date or time: {text!r} (use ISO-8601, e.g. 2026-11-29 or 2026-11-29T10:00Z)") from None
    dt = dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    try:
        in_range = EARLIEST <= dt.astimezone(timezone.utc) < LATEST
    except OverflowError:  # an offset that moves the time past year 1 or 9999
        in_range = False
    if not in_range:
        raise ValueError(f"{text!r} is out of range: dates and times from {EARLIEST.date()} to "
                         f"{(LATEST - timedelta(days=1)).date()} are accepted")
    return dt


def check_period(since: str | None, until: str | None) -> None:
    """ValueError (a 400) for a since or until that is no date or time, or out of range."""
    parse_time(since)
    parse_time(until)


def _date_of(text: str | None, dt: datetime | None) -> str | None:
    """A plain day stays that day (it is a day in the report's zone); a time gives its UTC date."""
    if dt is None or text is None:
        return None
    return text[:10] if len(text.strip()) == 10 else iso_utc(dt)[:10]


def iso_utc(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def report(since: str | None = None, until: str | None = None, zone: Zone = ZONE_UTC,
           restart_savings: bool = True, record: tuple[list[dict], list[dict]] | None = None) -> dict:
    """`ctxlamp report --json` for the period (days in `zone`, inclusive).

    `record` is the engine's own (segment profiles, live snapshots), as the service keeps them: what
    restarting would have saved is then summed from it, as the Overview does, instead of replaying every
    main transcript again (the service has read each of them already).
    """
    from service.report.build import compute

    s, u = parse_time(since), parse_time(until)
    first, last = _date_of(since, s), _date_of(until, u)
    with SCAN_LOCK:
        doc = compute(first, last, workers=1, progress=False, zone=zone,
                      restart_savings=restart_savings and record is None)
    doc = dict(doc)
    doc.setdefault("sources", {})
    if restart_savings and record is not None:
        from service.report import restart
        from service.days import DayOf

        doc["restart_savings"] = restart.block(record[0], record[1], first, last, DayOf(zone))
    return doc


def scan_results() -> dict[str, dict]:
    """Every transcript's scan result, from (and refreshing) the report's scan cache."""
    from service.config import configured_max_line
    from service.report import scan
    from service.client.paths import app_paths, claude_projects

    from service.ingest.kept import folder_of

    files = scan.discover(claude_projects(), folder_of(app_paths().data))
    max_line = configured_max_line()
    with SCAN_LOCK:
        cache = scan.ScanCache(app_paths().data / "cache" / "report-scan.json", max_line)
        results = scan.scan(files, cache, workers=1, max_line=max_line)
        cache.save()
    return results
