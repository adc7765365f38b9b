"""The report: scan transcripts and ledgers (cached) and sum them over a period.

`ctxlamp report` (service/cli/report.py) prints it; the service's
/api/v1/report (service/report/answers.py) answers with it. Heavy imports stay
inside the functions so importing this module costs nothing.
"""
from __future__ import annotations

import argparse
import sys


def load_prices():
    """The bundled price table, with the user's override file applied when present."""
    import json

    from resources import resource_path
    from service.engine.prices import PriceTable
    from service.paths import app_paths

    table = PriceTable.from_json(json.load(open(resource_path("prices.json"), encoding="utf-8")))
    override = app_paths().prices_override
    if override.is_file():
        try:
            table = table.merged(json.loads(override.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"ctxlamp report: ignoring {override}: {exc}", file=sys.stderr)
    return table


def compute(since: str | None = None, until: str | None = None, *, projects: str | None = None,
            lean_ctx: str | None = None, router_db: str | None = None, usage_db: str | None = None,
            use_cache: bool = True, workers: int | None = None, progress: bool = False,
            keep: list | None = None, restart_savings: bool = True) -> dict:
    """The report as a dict, for callers other than the CLI (the service's /api/v1/report, the team push).

    A process with threads (the service) should pass workers=1: the scan's pool forks.
    `keep` receives what the summary was built from (see build_report).
    """
    ns = argparse.Namespace(since=since, until=until, projects=projects, lean_ctx=lean_ctx, router_db=router_db,
                            usage_db=usage_db, no_cache=not use_cache, restart_savings=restart_savings)
    return build_report(ns, workers=workers, progress=progress, keep=keep, reuse_last=keep is None)


def build_report(args, *, workers: int | None = None, progress: bool = True, keep: list | None = None,
                 reuse_last: bool = True) -> dict:
    """Scan transcripts and ledgers (cached) and sum them over the period.

    Two caches under the data dir: per-file scan results (so only changed
    files are read again) and the last summary with the fingerprints of
    everything it was built from (so an unchanged history costs one walk).
    `keep` receives (results, cache, tally, the summary's other inputs); a
    caller that needs them passes reuse_last=False (the last summary has none).
    """
    from service.report.scan import collector_paused

    with collector_paused():  # the summary's small objects would make the collector walk every result again
        return _build_report(args, workers, progress, keep, reuse_last)


def _build_report(args, workers: int | None, progress: bool, keep: list | None, reuse_last: bool = True) -> dict:
    import hashlib
    import os
    import threading
    from pathlib import Path

    import orjson

    from service.channels import ledgers
    from service.config import configured_max_line
    from service.paths import app_paths, claude_projects
    from service.report import scan

    paths = app_paths()
    max_line = configured_max_line()
    cache_dir = paths.data / "cache"
    use_cache = not args.no_cache
    projects = Path(args.projects).expanduser() if args.projects else claude_projects()
    files = scan.discover(projects)
    fps = {tf.path: scan.fingerprint(tf.path) for tf in files}
    lean_path = Path(args.lean_ctx).expanduser() if args.lean_ctx else ledgers.lean_ctx_path()
    usage_path = Path(args.usage_db).expanduser() if args.usage_db else ledgers.codelens_usage_path()
    router_path = args.router_db or os.environ.get("CTXLAMP_ROUTER_DB")
    ledger_files = sorted(paths.ledgers.glob("*.jsonl")) if paths.ledgers.is_dir() else []
    dbs = [usage_path, *([Path(router_path).expanduser()] if router_path else [])]
    # a SQLite file in WAL mode changes its -wal file first: both are part of the fingerprint
    extra = [lean_path, *dbs, *(Path(f"{d}-wal") for d in dbs), *ledger_files, paths.prices_override]
    key_doc = [scan.CACHE_VERSION, max_line, args.since, args.until, str(projects), sorted(fps.items()),
               [(str(p), scan.fingerprint(str(p))) for p in extra], _prices_fingerprint(), _with_restarts(args)]
    key = hashlib.sha256(orjson.dumps(key_doc)).hexdigest()
    last_path = cache_dir / "report-last.json"
    if use_cache and reuse_last:
        try:
            last = orjson.loads(last_path.read_bytes())
            if last.get("key") == key:
                return last["summary"]
        except (OSError, ValueError, AttributeError):
            pass

    cache = scan.ScanCache(cache_dir / "report-scan.json" if use_cache else None, max_line)
    printer = scan.ProgressPrinter(sys.stderr) if progress else None
    from service.report.summary import build_summary, spend_tally

    loaded: list = []  # the price table and a spend tally, made while the workers scan

    def prepare() -> None:
        table = load_prices()
        loaded[:] = [table, spend_tally(table.lookup, args.since, args.until)]

    # each file's calls are summed as it comes in, while the others are still being scanned
    skipped: dict[str, str] = {}  # files that are not readable regular files: named in the data quality
    results = scan.scan(files, cache, progress=printer, fingerprints=fps, workers=workers, meanwhile=prepare,
                        on_result=lambda path, result: loaded[1].add(path, result), max_line=max_line,
                        skipped=skipped)
    if printer:
        printer.finish()

    notes: dict[str, str] = {}
    snapshots = ledgers.SnapshotFile(cache_dir / "ledger-snapshots.json" if use_cache else None)
    external: list[dict] = []

    lean = ledgers.read_lean_ctx(lean_path)
    if lean is not None:
        snaps = snapshots.observe("lean-ctx:" + str(lean_path), lean, _mtime_iso(lean_path))
        external += [e.to_dict() for e in ledgers.snapshot_events("lean-ctx", snaps)]
        notes["lean_ctx"] = f" ({lean_path}; all-time counters, booked when first seen, then deltas)"

    usage_tools: set[str] = set()
    usage = ledgers.read_usage_db(usage_path) if usage_path.is_file() else None
    if usage is not None:
        snaps = snapshots.observe("usage-db:" + str(usage_path), usage, _mtime_iso(usage_path))
        external += [e.to_dict() for e in ledgers.snapshot_events("usage-db", snaps)]
        usage_tools = {k.partition("\t")[0] for k in usage}
        notes["usage_db"] = f"{usage_path} (read-only; all-time rows, booked when first seen, then deltas)"

    router = None
    if router_path:
        router = ledgers.read_router_db(Path(router_path).expanduser())
        notes["router"] = f"{router_path}: route_decisions.pinch_original_tokens/pinch_final_tokens (read-only)" + (
            f"; error: {router['error']}" if router.get("error") else "")

    ledger_stats = {"files": 0, "malformed": 0}
    for lf in ledger_files:
        fp = scan.fingerprint(str(lf))
        ckey = "ledger:" + str(lf)
        res = cache.get(ckey, fp)
        if res is None:
            res = ledgers.read_native_ledger(lf, max_line)
            cache.put(ckey, fp, res)
        ledger_stats["files"] += 1
        ledger_stats["malformed"] += res["malformed"]
        external += res["events"]

    # the scan cache is written (entries serialized already, the write outside the GIL) while the summary is summed
    save_errors: list[BaseException] = []

    def save_cache() -> None:
        try:
            cache.save()
        except BaseException as exc:  # raised again below, in this thread
            save_errors.append(exc)

    saver = threading.Thread(target=save_cache) if use_cache else None
    if saver:
        saver.start()
    table, tally = loaded
    inputs = {"external": external, "router": router, "lean_ctx_present": lean is not None,
              "usage_db_tools": usage_tools, "notes": notes}
    if keep is not None:  # the caller frees the scan's results when it likes (a one-shot command: never)
        keep.append((results, cache, tally, inputs))
    summary = build_summary(results, table.lookup, since=args.since, until=args.until, external=external,
                            router=router, lean_ctx_present=lean is not None, usage_db_tools=usage_tools,
                            ledger_stats=ledger_stats, source_notes=notes, tally=tally)
    summary["data_quality"]["skipped_files"] = [{"path": p, "reason": r} for p, r in sorted(skipped.items())]
    if _with_restarts(args):
        summary["restart_savings"] = _restart_savings(files, skipped, table, cache_dir if use_cache else None,
                                                      args.since, args.until, max_line, workers)
    summary["sources"] = {
        "transcripts": str(projects),
        "lean_ctx": str(lean_path) if lean is not None else None,
        "usage_db": str(usage_path) if usage is not None else None,
        "router_db": str(router_path) if router_path else None,
        "ledgers": str(paths.ledgers),
        "prices": f"resources/prices.json ({table.source_date})",
        "computed_by": "ctxlamp report (scan)",
    }
    if saver:
        saver.join()
        if save_errors:
            raise save_errors[0]
        snapshots.save()
        from service.paths import write_private
        write_private(last_path, orjson.dumps({"key": key, "summary": summary}), durable=False)
    return summary


def _with_restarts(args: object) -> bool:
    """Whether the caller wants the restart block (the Overview and the team push take theirs from the
    service's own profiles, so they spare the replay)."""
    return bool(getattr(args, "restart_savings", True))


def _restart_savings(files: list, skipped: dict[str, str], table: object, cache_dir: object,
                     since: str | None, until: str | None, max_line: int, workers: int | None) -> dict:
    """What restarting would have saved (docs/measurement.md 14): the main transcripts replayed, cached."""
    from pathlib import Path

    from service.report import restart, scan

    mains = [tf.path for tf in files if not tf.subagent and tf.path not in skipped]
    cache_file = Path(str(cache_dir)) / "report-restart.json" if cache_dir is not None else None
    segments = restart.replayed_segments(mains, table, cache_file, scan.fingerprint, max_line, since=since,
                                         workers=workers)
    return restart.block(segments, [], since, until)


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
