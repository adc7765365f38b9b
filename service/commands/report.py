"""`ctxlamp report`: edit, pinch, retrieval and spend totals over a period.

Works with or without a running service: when one answers on the local API
(`GET /api/v1/report`), its figures are printed; otherwise the command scans
`$CLAUDE_CONFIG_DIR/projects` and the ledgers itself, with a per-file cache
under the data dir so a second run reads only what changed.
"""
from __future__ import annotations

import argparse
import re
import sys
from datetime import date

DATE_RE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})$")


def _day(text: str) -> str:
    m = DATE_RE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} (use YYYY-MM-DD)")
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} ({exc})") from exc


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", type=_day, help="first day included (YYYY-MM-DD, UTC)")
    parser.add_argument("--until", type=_day, help="last day included (YYYY-MM-DD, UTC)")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON")
    fmt.add_argument("--csv", action="store_true", help="print CSV (metric,value,label)")
    parser.add_argument("--projects", help="transcript folder (default: $CLAUDE_CONFIG_DIR/projects)")
    parser.add_argument("--lean-ctx", dest="lean_ctx", help="lean-ctx edit_metering.json "
                        "(default: $LEAN_CTX_DATA_DIR or ~/.lean-ctx)")
    parser.add_argument("--router-db", dest="router_db", help="router database with a route_decisions table "
                        "(default: $CTXLAMP_ROUTER_DB)")
    parser.add_argument("--usage-db", dest="usage_db", help="CodeLens-style usage.db "
                        "(default: $CTXLAMP_USAGE_DB or ~/.codelens/usage.db)")
    parser.add_argument("--no-service", action="store_true", help="always scan, even when the service runs")
    parser.add_argument("--no-cache", action="store_true", help="ignore and do not write the scan cache")


# The command's scan state, kept to the end of the process: `ctxlamp report` ends with
# os._exit (service.cli.entry), and freeing it object by object took 7 ms over 500 MB.
_KEPT: list = []


def run(args: argparse.Namespace) -> int:
    if args.since and args.until and args.since > args.until:
        print("ctxlamp report: --since is after --until", file=sys.stderr)
        return 2
    summary = None
    if not args.no_service and not any((args.projects, args.lean_ctx, args.router_db, args.usage_db)):
        summary = _from_service(args)
    if summary is None:
        from service.channels.forked import WorkerFailed

        _KEPT.clear()  # a process that runs the command twice (tests) keeps only the last
        try:
            summary = build_report(args, keep=_KEPT)
        except WorkerFailed as exc:
            print(f"ctxlamp report: the scan failed: {exc}", file=sys.stderr)
            return 1
    if args.json:
        import orjson
        sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    elif args.csv:
        _write_csv(summary, sys.stdout)
    else:
        sys.stdout.write(render_text(summary))
    sys.stdout.flush()
    return 0


def _from_service(args) -> dict | None:
    """The running service's report, or None (no service, old service, any error)."""
    from service.paths import app_paths

    api_file = app_paths().api_file
    if not api_file.is_file():
        return None
    import json
    import urllib.parse
    import urllib.request

    try:
        info = json.loads(api_file.read_text())
        query = urllib.parse.urlencode({k: v for k, v in (("since", args.since), ("until", args.until)) if v})
        req = urllib.request.Request(f"http://127.0.0.1:{int(info['port'])}/api/v1/report?{query}",
                                     headers={"Authorization": f"Bearer {info['token']}"})
        with urllib.request.urlopen(req, timeout=2.0) as resp:
            doc = json.loads(resp.read())
        return doc if isinstance(doc, dict) and "spend" in doc and "edit" in doc else None
    except Exception:  # noqa: BLE001 - any failure means: scan ourselves
        return None


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
            use_cache: bool = True, workers: int | None = None, progress: bool = False) -> dict:
    """The report as a dict, for callers other than the CLI (the service's /api/v1/report).

    A process with threads (the service) should pass workers=1: the scan's pool forks.
    """
    ns = argparse.Namespace(since=since, until=until, projects=projects, lean_ctx=lean_ctx, router_db=router_db,
                            usage_db=usage_db, no_cache=not use_cache)
    return build_report(ns, workers=workers, progress=progress)


def build_report(args, *, workers: int | None = None, progress: bool = True, keep: list | None = None) -> dict:
    """Scan transcripts and ledgers (cached) and sum them over the period.

    Two caches under the data dir: per-file scan results (so only changed
    files are read again) and the last summary with the fingerprints of
    everything it was built from (so an unchanged history costs one walk).
    """
    from service.channels.scan import collector_paused

    with collector_paused():  # the summary's small objects would make the collector walk every result again
        return _build_report(args, workers, progress, keep)


def _build_report(args, workers: int | None, progress: bool, keep: list | None) -> dict:
    import hashlib
    import os
    import threading
    from pathlib import Path

    import orjson

    from service.channels import ledgers, scan
    from service.paths import app_paths, claude_projects

    paths = app_paths()
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
    key_doc = [scan.CACHE_VERSION, args.since, args.until, str(projects), sorted(fps.items()),
               [(str(p), scan.fingerprint(str(p))) for p in extra], _prices_fingerprint()]
    key = hashlib.sha256(orjson.dumps(key_doc)).hexdigest()
    last_path = cache_dir / "report-last.json"
    if use_cache:
        try:
            last = orjson.loads(last_path.read_bytes())
            if last.get("key") == key:
                return last["summary"]
        except (OSError, ValueError, AttributeError):
            pass

    cache = scan.ScanCache(cache_dir / "report-scan.json" if use_cache else None)
    printer = scan.ProgressPrinter(sys.stderr) if progress else None
    from service.channels.summary import build_summary, spend_tally

    loaded: list = []  # the price table and a spend tally, made while the workers scan

    def prepare() -> None:
        table = load_prices()
        loaded[:] = [table, spend_tally(table.lookup, args.since, args.until)]

    # each file's calls are summed as it comes in, while the others are still being scanned
    results = scan.scan(files, cache, progress=printer, fingerprints=fps, workers=workers, meanwhile=prepare,
                        on_result=lambda path, result: loaded[1].add(path, result))
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
            res = ledgers.read_native_ledger(lf)
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
    if keep is not None:  # the caller frees the scan's results when it likes (a one-shot command: never)
        keep.append((results, cache, tally))
    summary = build_summary(results, table.lookup, since=args.since, until=args.until, external=external,
                            router=router, lean_ctx_present=lean is not None, usage_db_tools=usage_tools,
                            ledger_stats=ledger_stats, source_notes=notes, tally=tally)
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


def flatten(obj, prefix: str = ""):
    """(dotted key, scalar) pairs of a nested report."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, list):
        if all(not isinstance(x, (dict, list)) for x in obj):
            yield prefix, ";".join(str(x) for x in obj)
        else:
            for i, x in enumerate(obj):
                yield from flatten(x, f"{prefix}.{i}")
    else:
        yield prefix, obj


def _write_csv(summary: dict, out) -> None:
    import csv

    w = csv.writer(out, lineterminator="\n")
    w.writerow(["metric", "value", "label"])
    for section in ("edit", "pinch", "retrieval", "spend", "data_quality"):
        label = summary.get(section, {}).get("label", "")
        for key, value in flatten(summary.get(section, {}), section):
            if key.endswith(".label") or ".sources." in key or key.endswith(".source"):
                continue
            w.writerow([key, "" if value is None else value, label])


def render_text(s: dict) -> str:
    e, p, r, sp, dq = s["edit"], s["pinch"], s["retrieval"], s["spend"], s["data_quality"]
    period = s["period"]
    lines = [f"ctxlamp report  {period.get('since') or 'start'} .. {period.get('until') or 'now'} (UTC days)", ""]
    lines.append(f"Spend (measured): ${sp['total_usd']:.2f} over {sp['calls']} calls; subagents ${sp['subagents_usd']:.2f}")
    for model, usd in sorted(sp["by_model"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {model:<40} ${usd:.2f}")
    unwritten = sp.get("unwritten") or {}
    if unwritten:
        m, est = unwritten["measured"], unwritten["estimated"]
        lines.append(f"  + {m['what']} (measured, from its cost-state): ${m['usd']:.2f}")
        lines.append(f"  + compactions without a cost-state (estimated, {est['compactions']}): "
                     f"${est['low_usd']:.2f} .. ${est['high_usd']:.2f}")
    lines += ["", f"Edits (measured): {e['str_replace_calls']} str_replace calls, "
                  f"{e['str_replace_old_string_tokens']} old_string tokens (${e['str_replace_old_string_usd']:.4f}), "
                  f"misses {e['str_replace_misses']['not_found']} not found / {e['str_replace_misses']['ambiguous']} ambiguous",
              f"  anchored: {e['anchored_calls']} calls, {e['anchored_ops']} ops, "
              f"{e['anchored_avoided_output_tokens']} output tokens avoided, {e['anchored_conflicts']} conflicts",
              "", f"Pinch (measured): {p['events']} events over {p['requests']} requests "
                  f"({p['share_pinched'] * 100:.1f}%), saved {p['tokens_saved_total']} tokens "
                  f"(median {p['tokens_saved_median']}), ${p['saved_usd']:.4f}",
              "", f"Retrieval (estimated): {r['calls']} calls, {r['bytes_served']} bytes served, "
                  f"~{r['bytes_saved']} bytes saved"]
    for tool, t in r["tools"].items():
        lines.append(f"  {tool:<14} {t['calls']:>6} calls {t['bytes_served']:>10} B served ~{t['bytes_saved']:>10} B saved")
    lines += ["", "Data quality:"]
    lines.append(f"  unpriced models: {', '.join(dq['unpriced_models']) or 'none'}")
    lines.append(f"  placeholder-output calls: {dq['placeholder_output_calls']}")
    diff = dq["cost_state_diff_pct"]
    lines.append(f"  vs Claude Code's cost-state: {'n/a' if diff is None else f'{diff:+.2f}%'}")
    left = dq.get("cost_state_remaining_usd")
    if left is not None:
        lines.append(f"  left after booking what it did not write: ${left:+.4f} (its prices vs ours)")
    lines.append(f"  malformed lines: {dq['malformed_lines']['transcripts']} in transcripts, "
                 f"{dq['malformed_lines']['ledgers']} in ledgers")
    return "\n".join(lines) + "\n"
