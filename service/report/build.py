"""The report: scan transcripts and ledgers (cached) and sum them over a period.

`ctxlamp report` (service/cli/report.py) prints it; the service's
/api/v1/report (service/report/cached.py) answers with it. Heavy imports stay
inside the functions so importing this module costs nothing.
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.days import ZONE_UTC, Zone


def load_prices():
    """The bundled price table, with the user's override file applied when present."""
    import json

    from resources import resource_path
    from service.engine.prices import PriceTable
    from service.client.paths import app_paths

    table = PriceTable.from_json(json.load(open(resource_path("prices.json"), encoding="utf-8")))
    override = app_paths().prices_override
    if override.is_file():
        try:
            table = table.merged(json.loads(override.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"ctxlamp report: ignoring {override}: {exc}", file=sys.stderr)
    return table


@dataclass(frozen=True)
class ReportRequest:
    """What a report covers and where it reads: the input of `build_report` (the CLI's flags, the API's query)."""

    since: str | None = None       # first day included (YYYY-MM-DD, UTC)
    until: str | None = None       # last day included
    projects: str | None = None    # transcript folder; None: $CLAUDE_CONFIG_DIR/projects
    lean_ctx: str | None = None    # lean-ctx's edit_metering.json; None: its default place
    router_db: str | None = None   # a router database with route_decisions; None: $CTXLAMP_ROUTER_DB
    usage_db: str | None = None    # a CodeLens-style usage.db; None: its default place
    use_cache: bool = True         # read and write the scan cache and the last summary
    zone: Zone = ZONE_UTC           # the zone days are cut in, resolved where its name came in
    restart_savings: bool = True   # replay the main transcripts for what restarting saves (measurement.md 14)



def compute(since: str | None = None, until: str | None = None, *, projects: str | None = None,
            lean_ctx: str | None = None, router_db: str | None = None, usage_db: str | None = None,
            use_cache: bool = True, workers: int | None = None, progress: bool = False,
            keep: list | None = None, zone: Zone = ZONE_UTC, restart_savings: bool = True) -> dict:
    """The report as a dict, for callers other than the CLI (the service's /api/v1/report, the team push).

    A process with threads (the service) should pass workers=1: the scan's pool forks. Days are cut in
    `zone` (the team push keeps UTC, the default).
    `keep` receives what the summary was built from (see build_report).
    """
    request = ReportRequest(since=since, until=until, projects=projects, lean_ctx=lean_ctx, router_db=router_db,
                            usage_db=usage_db, use_cache=use_cache, zone=zone,
                            restart_savings=restart_savings)
    return build_report(request, workers=workers, progress=progress, keep=keep, reuse_last=keep is None)


def build_report(request: ReportRequest, *, workers: int | None = None, progress: bool = True,
                 keep: list | None = None, reuse_last: bool = True) -> dict:
    """Scan transcripts and ledgers (cached) and sum them over the period.

    Two caches under the data dir: per-file scan results (so only changed
    files are read again) and the last summary with the fingerprints of
    everything it was built from (so an unchanged history costs one walk).
    `keep` receives (results, cache, tally, the summary's other inputs); a
    caller that needs them passes reuse_last=False (the last summary has none).
    """
    from service.report.scan import collector_paused

    with collector_paused():  # the summary's small objects would make the collector walk every result again
        return _build_report(request, workers, progress, keep, reuse_last)


@dataclass
class _Sources:
    """Where this report reads, resolved from the request, the environment and the data dir."""

    projects: Path
    lean_ctx: Path
    usage_db: Path
    router_db: str | None
    ledger_dir: Path
    ledger_files: list[Path]
    cache_dir: Path
    kept: Path  # the kept copies of transcripts (read for those Claude Code deleted)
    prices_override: Path
    max_line: int

    @classmethod
    def of(cls, request: ReportRequest) -> _Sources:
        from service.channels import ledgers
        from service.config import configured_max_line
        from service.client.paths import app_paths, claude_projects
        from service.ingest.kept import folder_of as kept_folder

        paths = app_paths()
        return cls(
            projects=Path(request.projects).expanduser() if request.projects else claude_projects(),
            lean_ctx=Path(request.lean_ctx).expanduser() if request.lean_ctx else ledgers.lean_ctx_path(),
            usage_db=Path(request.usage_db).expanduser() if request.usage_db else ledgers.codelens_usage_path(),
            router_db=request.router_db or os.environ.get("CTXLAMP_ROUTER_DB"),
            ledger_dir=paths.ledgers,
            ledger_files=sorted(paths.ledgers.glob("*.jsonl")) if paths.ledgers.is_dir() else [],
            cache_dir=paths.data / "cache",
            kept=kept_folder(paths.data),
            prices_override=paths.prices_override,
            max_line=configured_max_line(),
        )


@dataclass
class _Ledgers:
    """What the ledgers beside the transcripts hold: their events and how each was read."""

    external: list[dict] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    router: dict | None = None
    lean_ctx_present: bool = False
    usage_present: bool = False
    usage_db_tools: set[str] = field(default_factory=set)
    stats: dict[str, int] = field(default_factory=lambda: {"files": 0, "malformed": 0})


def _build_report(request: ReportRequest, workers: int | None, progress: bool, keep: list | None,
                  reuse_last: bool = True) -> dict:
    from service.report import scan

    sources = _Sources.of(request)
    files = scan.discover(sources.projects, sources.kept)
    fps = {tf.path: scan.fingerprint(tf.path) for tf in files}
    key = _cache_key(request, sources, fps)
    last_path = sources.cache_dir / "report-last.json"
    if request.use_cache and reuse_last:
        last = _last_summary(last_path, key)
        if last is not None:
            return last

    cache = scan.ScanCache(sources.cache_dir / "report-scan.json" if request.use_cache else None, sources.max_line)
    plan = _RestartPlan.of(request, sources, files, fps) if request.restart_savings else None
    results, table, tally, skipped = _scan_transcripts(request, files, fps, cache, sources.max_line, workers, progress,
                                                       plan, sources.cache_dir if request.use_cache else None)
    snapshots = _snapshot_file(sources, request.use_cache)
    read = _read_ledgers(sources, cache, snapshots)

    # the scan cache is written (entries serialized already, the write outside the GIL) while the summary is summed
    saver = _CacheSaver(cache) if request.use_cache else None
    inputs = {"external": read.external, "router": read.router, "lean_ctx_present": read.lean_ctx_present,
              "usage_db_tools": read.usage_db_tools, "notes": read.notes}
    if keep is not None:  # the caller frees the scan's results when it likes (a one-shot command: never)
        keep.append((results, cache, tally, inputs))
    restarts = _restart_savings(request, sources, files, skipped, table, workers, plan) if plan else None
    if plan is not None:  # the replayed segments, for a device's sync file (service/sync/)
        inputs["restart_segments"] = plan.segments
    summary = _summarize(request, sources, results, table, tally, read, skipped, restarts)
    if saver:
        saver.join()
        snapshots.save()
        import orjson

        from service.client.privdir import write_private
        write_private(last_path, orjson.dumps({"key": key, "summary": summary}), durable=False)
    return summary


# ---- caching ------------------------------------------------------------------------------------

def _cache_key(request: ReportRequest, sources: _Sources, fps: dict[str, Any]) -> str:
    """The fingerprint of everything the summary is built from: a different key means the last summary is stale."""
    import hashlib

    import orjson

    from service.report import scan

    dbs = [sources.usage_db, *([Path(sources.router_db).expanduser()] if sources.router_db else [])]
    # a SQLite file in WAL mode changes its -wal file first: both are part of the fingerprint
    extra = [sources.lean_ctx, *dbs, *(Path(f"{d}-wal") for d in dbs), *sources.ledger_files,
             sources.prices_override]
    key_doc = [scan.CACHE_VERSION, sources.max_line, request.since, request.until, request.zone.name,
               str(sources.projects),
               sorted(fps.items()), [(str(p), scan.fingerprint(str(p))) for p in extra], _prices_fingerprint(),
               request.restart_savings]
    return hashlib.sha256(orjson.dumps(key_doc)).hexdigest()


def _last_summary(last_path: Path, key: str) -> dict | None:
    """The last summary when it was built from the same inputs, else None."""
    import orjson

    try:
        last = orjson.loads(last_path.read_bytes())
        if last.get("key") == key:
            return last["summary"]
    except (OSError, ValueError, AttributeError):
        pass
    return None


class _CacheSaver:
    """Writes the scan cache on a thread while the summary is summed; `join` raises what the write raised."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache
        self._errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._save)
        self._thread.start()

    def _save(self) -> None:
        try:
            self._cache.save()
        except BaseException as exc:  # raised again in join, in the caller's thread
            self._errors.append(exc)

    def join(self) -> None:
        self._thread.join()
        if self._errors:
            raise self._errors[0]


def _snapshot_file(sources: _Sources, use_cache: bool) -> Any:
    from service.channels import ledgers

    return ledgers.SnapshotFile(sources.cache_dir / "ledger-snapshots.json" if use_cache else None)


# ---- scanning -----------------------------------------------------------------------------------

def _scan_transcripts(request: ReportRequest, files: list, fps: dict[str, Any], cache: Any, max_line: int,
                      workers: int | None, progress: bool, plan: _RestartPlan | None = None,
                      counts_in: Path | None = None) -> tuple[dict, Any, Any, dict[str, str]]:
    """Every transcript's scan result (cached per file), with the price table and the spend tally fed meanwhile.

    With a restart plan, the main transcripts it names are replayed by the scan as it reads them
    (their segments land in `plan.replayed`): the workers need the price table before they start.
    """
    from service.report import scan
    from service.report.summary import spend_tally

    printer = scan.ProgressPrinter(sys.stderr) if progress else None
    loaded: list = []  # the price table and a spend tally, made while the workers scan
    early = load_prices() if plan is not None and plan.paths else None

    def prepare() -> None:
        table = early if early is not None else load_prices()
        loaded[:] = [table, spend_tally(table.lookup, request.since, request.until, request.zone)]

    # each file's calls are summed as it comes in, while the others are still being scanned
    skipped: dict[str, str] = {}  # files that are not readable regular files: named in the data quality
    results = scan.scan(files, cache, progress=printer, fingerprints=fps, workers=workers, meanwhile=prepare,
                        on_result=lambda path, result: loaded[1].add(path, result), max_line=max_line,
                        skipped=skipped, replay=(early, plan.paths) if plan is not None and early is not None else None,
                        replayed=plan.replayed if plan is not None else None, counts_in=counts_in)
    if printer:
        printer.finish()
    table, tally = loaded
    return results, table, tally, skipped


# ---- reading the ledgers ------------------------------------------------------------------------

def _read_ledgers(sources: _Sources, cache: Any, snapshots: Any) -> _Ledgers:
    """lean-ctx's counters, a usage.db, a router database and ctxlamp's own ledgers, as channel events."""
    from service.channels import ledgers
    from service.report import scan

    read = _Ledgers()
    lean_path, usage_path, router_path = sources.lean_ctx, sources.usage_db, sources.router_db

    lean = ledgers.read_lean_ctx(lean_path)
    if lean is not None:
        snaps = snapshots.observe("lean-ctx:" + str(lean_path), lean, _mtime_iso(lean_path))
        read.external += [e.to_dict() for e in ledgers.snapshot_events("lean-ctx", snaps)]
        read.notes["lean_ctx"] = f" ({lean_path}; all-time counters, booked when first seen, then deltas)"
        read.lean_ctx_present = True

    usage = ledgers.read_usage_db(usage_path) if usage_path.is_file() else None
    if usage is not None:
        snaps = snapshots.observe("usage-db:" + str(usage_path), usage, _mtime_iso(usage_path))
        read.external += [e.to_dict() for e in ledgers.snapshot_events("usage-db", snaps)]
        read.usage_db_tools = {k.partition("\t")[0] for k in usage}
        read.notes["usage_db"] = f"{usage_path} (read-only; all-time rows, booked when first seen, then deltas)"
        read.usage_present = True

    if router_path:
        read.router = router = ledgers.read_router_db(Path(router_path).expanduser())
        read.notes["router"] = (f"{router_path}: route_decisions.pinch_original_tokens/pinch_final_tokens "
                                "(read-only)" + (f"; error: {router['error']}" if router.get("error") else ""))

    for lf in sources.ledger_files:
        fp = scan.fingerprint(str(lf))
        ckey = "ledger:" + str(lf)
        res = cache.get(ckey, fp)
        if res is None:
            res = ledgers.read_native_ledger(lf, sources.max_line)
            cache.put(ckey, fp, res)
        read.stats["files"] += 1
        read.stats["malformed"] += res["malformed"]
        read.external += res["events"]
    return read


# ---- summarizing --------------------------------------------------------------------------------

def _summarize(request: ReportRequest, sources: _Sources, results: dict, table: Any, tally: Any, read: _Ledgers,
               skipped: dict[str, str], restarts: dict | None) -> dict:
    """The summary over the period, with what was skipped and where every figure came from."""
    from service.report.summary import build_summary

    summary = build_summary(results, table.lookup, since=request.since, until=request.until, external=read.external,
                            router=read.router, lean_ctx_present=read.lean_ctx_present,
                            usage_db_tools=read.usage_db_tools, ledger_stats=read.stats, source_notes=read.notes,
                            tally=tally, zone=request.zone)
    summary["data_quality"]["skipped_files"] = [{"path": p, "reason": r} for p, r in sorted(skipped.items())]
    if restarts is not None:
        summary["restart_savings"] = restarts
    summary["sources"] = {
        "transcripts": str(sources.projects),
        "lean_ctx": str(sources.lean_ctx) if read.lean_ctx_present else None,
        "usage_db": str(sources.usage_db) if read.usage_present else None,
        "router_db": str(sources.router_db) if sources.router_db else None,
        "ledgers": str(sources.ledger_dir),
        "prices": f"resources/prices.json ({table.source_date})",
        "computed_by": "ctxlamp report (scan)",
    }
    return summary


def _prices_fingerprint():
    import os

    from resources import resource_path

    try:
        st = os.stat(resource_path("prices.json"))
        return [st.st_size, st.st_mtime_ns]
    except OSError:
        return None


def _mtime_iso(path) -> str:
    from datetime import datetime, timezone
    import os

    try:
        t = os.stat(path).st_mtime
    except OSError:
        t = datetime.now(timezone.utc).timestamp()
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class _RestartPlan:
    """The report's replay for restart savings, decided before the scan: the replay cache's entries and
    the main transcripts to replay (the scan replays those it reads; `replayed` gets their segments)."""

    cache_file: Path | None
    cache: dict[str, Any]
    paths: frozenset[str]
    fps: dict[str, Any]  # the fingerprints the scan was planned with: its cache and this one name the same bytes
    replayed: dict[str, list[dict]] = field(default_factory=dict)
    segments: list[dict] = field(default_factory=list)  # every segment the restart savings were summed over

    @classmethod
    def of(cls, request: ReportRequest, sources: _Sources, files: list, fps: dict[str, Any]) -> _RestartPlan:
        from service.report import restart

        cache_file = sources.cache_dir / "report-restart.json" if request.use_cache else None
        cache = restart.load_cache(cache_file)
        mains = [tf.path for tf in files if not tf.subagent]
        paths = restart.to_replay(mains, cache, fps.get, request.since)
        return cls(cache_file, cache, frozenset(paths), fps)


def _restart_savings(request: ReportRequest, sources: _Sources, files: list, skipped: dict[str, str], table: Any,
                     workers: int | None, plan: _RestartPlan) -> dict:
    """What restarting would have saved (docs/measurement.md 14): the main transcripts replayed, cached per file
    (most of them by the scan, as it read them). The service's report, the Overview and the team push
    take theirs from the service's own profiles, so they spare the replay."""
    from service.report import restart, scan
    from service.days import DayOf

    mains = [tf.path for tf in files if not tf.subagent and tf.path not in skipped]
    segments = restart.replayed_segments(mains, table, plan.cache_file, plan.fps.get, sources.max_line,
                                         since=request.since, workers=workers, cache=plan.cache,
                                         replayed=plan.replayed, share_from=scan.SHARED_ENCODER_MIN_BYTES)
    plan.segments = list(segments)
    return restart.block(segments, [], request.since, request.until, DayOf(request.zone))
