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

from service.days import Zone
from service.engine.prices import label_text
from service.report.build import ReportRequest, build_report
from service.client.textsafe import printable_lines
from service.client.textsafe import printable

DATE_RE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})$")


def day_argument(text: str) -> str:
    m = DATE_RE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} (use YYYY-MM-DD)")
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} ({exc})") from exc


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", type=day_argument, help="first day included (YYYY-MM-DD, in --timezone)")
    parser.add_argument("--until", type=day_argument, help="last day included (YYYY-MM-DD, in --timezone)")
    parser.add_argument("--timezone", metavar="ZONE", help="IANA time zone days are cut in (e.g. Asia/Tokyo; "
                        "default: [report] timezone in config.toml, else the machine's zone)")
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


def request_of(args: argparse.Namespace, zone: Zone) -> ReportRequest:
    """The report's input from the command's flags, days cut in `zone` (resolved from --timezone)."""
    return ReportRequest(since=args.since, until=args.until, projects=args.projects, lean_ctx=args.lean_ctx,
                         router_db=args.router_db, usage_db=args.usage_db, use_cache=not args.no_cache,
                         zone=zone)


def run(args: argparse.Namespace) -> int:
    if args.since and args.until and args.since > args.until:
        print("ctxlamp report: --since is after --until", file=sys.stderr)
        return 2
    from service.days import UnknownZone, Zone

    try:
        zone = Zone.named(args.timezone if args.timezone is not None else _configured_zone())
    except UnknownZone as exc:
        print(f"ctxlamp report: {exc}", file=sys.stderr)
        return 2
    summary = None
    if not args.no_service and not any((args.projects, args.lean_ctx, args.router_db, args.usage_db)):
        summary = _from_service(args, zone)
    if summary is None:
        from service.report.forked import WorkerFailed

        _KEPT.clear()  # a process that runs the command twice (tests) keeps only the last
        try:
            summary = build_report(request_of(args, zone), keep=_KEPT)
        except WorkerFailed as exc:
            print(f"ctxlamp report: the scan failed: {exc}", file=sys.stderr)
            return 1
    if args.json:
        import orjson
        sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    elif args.csv:
        _write_csv(summary, sys.stdout)
    else:
        sys.stdout.write(printable_lines(render_text(summary)))  # model names, paths: from transcripts
    sys.stdout.flush()
    return 0


def _configured_zone() -> str:
    from service.config import configured_timezone

    return configured_timezone()


# How long the command waits for a running service's report before reading the transcripts itself. Right
# after a start the service may still be preparing it: waiting costs less than a second read
# of every transcript beside it, with the replay the service spares.
SERVICE_WAIT_S = 30.0


def _from_service(args, zone: Zone) -> dict | None:
    """The running service's report, or None (no service, old service, any error)."""
    from service.client.api import ApiClient

    try:
        doc = ApiClient(timeout=SERVICE_WAIT_S).get_report(args.since, args.until, zone.name)
        if not (isinstance(doc, dict) and "spend" in doc and "edit" in doc):
            return None
        # an older service cuts UTC days whatever it is asked: then scan here, in the zone asked for
        return doc if (doc.get("period") or {}).get("timezone") == zone.name else None
    except Exception:  # any failure means: scan ourselves
        return None


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
    for section in ("edit", "pinch", "retrieval", "spend", "restart_savings", "data_quality"):
        label = summary.get(section, {}).get("label", "")
        for key, value in flatten(summary.get(section, {}), section):
            if key.endswith(".label") or ".sources." in key or key.endswith(".source"):
                continue
            w.writerow([printable(key, 1000), "" if value is None else printable(value, 1000) if isinstance(value, str) else value,
                        label])


def _spend_lines(sp: dict) -> list[str]:
    """The headline (what was billed) and its labelled parts; the estimated range apart, never added in."""
    billed = sp.get("billed") or {}
    lines = []
    if billed:
        lines.append(f"Billed: ${billed['usd']:.2f} = written calls ${billed['written_usd']:.2f} "
                     f"+ requests Claude Code made and did not write ${billed['unwritten_measured_usd']:.2f} "
                     "(measured, from its cost-state)"
                     + (f" + ${billed['unwritten_statusline_usd']:.2f} (its status line)"
                        if billed.get("unwritten_statusline_usd") else ""))
    lines.append(f"Written calls (measured): ${sp['total_usd']:.2f} over {sp['calls']} calls; "
                 f"subagents ${sp['subagents_usd']:.2f}")
    for model, usd in sorted(sp["by_model"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {label_text(model):<40} ${usd:.2f}")
    unwritten = sp.get("unwritten") or {}
    if unwritten and unwritten["estimated"].get("compactions"):
        est = unwritten["estimated"]
        lines.append(f"  not in the billed figure: compactions without a cost-state (estimated, {est['compactions']}): "
                     f"${est['low_usd']:.2f} .. ${est['high_usd']:.2f}")
    return lines


def _segments(n: int) -> str:
    return f"{n} segment" if n == 1 else f"{n} segments"


def restart_lines(rs: dict | None) -> list[str]:
    """What restarting would have saved (docs/measurement.md 14), in the text report."""
    if not rs:
        return []
    capture = rs.get("capture")
    lines = ["", (f"Restarts (estimated, one per segment): at the first reminder ${rs['first_reminder_usd']:.2f}, "
                  f"best single restart ${rs['best_single_usd']:.2f} over {_segments(rs['segments'])}")]
    lines.append(f"  segments with a reminder: {rs['segments_with_reminders']}"
                 + (f"; the lamp's advice got {capture * 100:.0f}% of the best" if capture is not None else ""))
    lines.append(f"  missed (no reminder, a restart would have saved): ${rs['missed_usd']:.2f} "
                 f"in {_segments(rs.get('missed_segments', 0))}")
    return lines


def render_text(s: dict) -> str:
    e, p, r, sp, dq = s["edit"], s["pinch"], s["retrieval"], s["spend"], s["data_quality"]
    period = s["period"]
    head = (f"ctxlamp report  {period.get('since') or 'start'} .. {period.get('until') or 'now'} "
            f"(days in {period.get('timezone') or 'UTC'})")
    lines = [head, ""]
    lines += _spend_lines(sp)
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
    lines += restart_lines(s.get("restart_savings"))
    lines += ["", "Data quality:"]
    lines.append(f"  unpriced models: {', '.join(dq['unpriced_models']) or 'none'}")
    for value, models in (dq.get("unknown_price_modifiers") or {}).items():
        calls = ", ".join(f"{label_text(m)} ({n})" for m, n in models.items())
        lines.append(f"  priced at standard, no figure for {value}: {calls}")
    lines.append(f"  placeholder-output calls: {dq['placeholder_output_calls']}")
    diff = dq["cost_state_diff_pct"]
    lines.append(f"  vs Claude Code's cost-state: {'n/a' if diff is None else f'{diff:+.2f}%'}")
    left = dq.get("cost_state_remaining_usd")
    if left is not None:
        lines.append(f"  left after booking what it did not write: ${left:+.4f}")
    for e in dq.get("cost_state_explained") or []:
        if e.get("kind") != "equal":
            lines.append(f"    {str(e.get('session_id'))[:8]}: {e.get('text')}")
    lines.append(f"  malformed lines: {dq['malformed_lines']['transcripts']} in transcripts, "
                 f"{dq['malformed_lines']['ledgers']} in ledgers")
    if dq.get("long_lines"):
        lines.append(f"  lines longer than the bound ([transcripts] max_line_mb), skipped: {dq['long_lines']}")
    for row in dq.get("skipped_files") or []:
        lines.append(f"  skipped {row['path']}: {row['reason']}")
    return "\n".join(lines) + "\n"
