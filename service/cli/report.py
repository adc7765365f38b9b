"""`ctxlamp report`: what was spent per day, the rent on dead weight, what restarts would have saved,
the budgets, then the savings channels (Edits, Trimming, Search), over a period.

Works with or without a running service: when one answers on the local API (`GET /api/v1/report`;
the user's service, else the demo `make run` plays: service/client/running.py), its figures are printed;
otherwise the command scans `$CLAUDE_CONFIG_DIR/projects` and the ledgers itself, with a per-file
cache under the data dir so a second run reads only what changed. The text says docs/glossary.md's
words; `--json` and `--csv` keep the identifiers.
"""
from __future__ import annotations

import argparse
import re
import sys
from datetime import date

from service.days import Zone
from service.engine.prices import label_text
from service.report.build import ReportRequest, build_report
from service.client.figures import count, plural, size
from service.client.textsafe import printable_lines
from service.client.textsafe import printable
from service.client.words import compactions_sentence, misses_sentence, model_name, unrecorded_output

DATE_RE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})$")


def day_argument(text: str) -> str:
    m = DATE_RE.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} (use YYYY-MM-DD)")
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date: {text!r} ({exc})") from exc


DESCRIPTION = (
    "What Claude Code's calls cost, read from its session transcripts: a table per day (models; input, output, "
    "cache write and cache read tokens; cost), what was billed, the rent on dead weight (what calls paid to "
    "re-read context a fresh session would not need), what restarting at the lamp's reminders would have saved "
    "(an estimate), your budgets; then the savings channels: Edits (edits that quote the text they replace), "
    "Trimming (tool results shortened before they reached the model), Search (answers from a code-search index "
    "instead of whole files). Asks the running service when there is one (the demo `make run` plays included).")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument("--since", type=day_argument, help="first day included (YYYY-MM-DD, in --timezone)")
    parser.add_argument("--until", type=day_argument, help="last day included (YYYY-MM-DD, in --timezone)")
    parser.add_argument("--timezone", metavar="ZONE", help="IANA time zone days are cut in (e.g. Asia/Tokyo; "
                        "default: [report] timezone in config.toml, else the machine's zone)")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print every figure as JSON (field names: docs/api.md)")
    fmt.add_argument("--csv", action="store_true", help="print CSV (metric,value,label)")
    parser.add_argument("--projects", help="the folder of Claude Code's session transcripts "
                        "(default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects)")
    parser.add_argument("--lean-ctx", dest="lean_ctx", help="if you use lean-ctx (an editing tool for Claude Code "
                        "that edits by line anchor): its edit_metering.json, counted under Edits "
                        "(default: $LEAN_CTX_DATA_DIR or ~/.lean-ctx)")
    parser.add_argument("--router-db", dest="router_db", help="if you route requests between models with a tool "
                        "that logs its choices: its SQLite database with a route_decisions table "
                        "(default: $CTXLAMP_ROUTER_DB)")
    parser.add_argument("--usage-db", dest="usage_db", help="if you use a code-search index that answers the "
                        "agent's searches (such as CodeLens): its usage.db log, counted under Search "
                        "(default: $CTXLAMP_USAGE_DB or ~/.codelens/usage.db)")
    parser.add_argument("--no-service", action="store_true", help="read the transcripts here, even when the "
                        "service runs")
    parser.add_argument("--no-cache", action="store_true", help="ignore and do not write the scan cache")
    parser.add_argument("--device", metavar="this|NAME|all", help="with sync on (ctxlamp sync): whose figures "
                        "(default: all, summed in UTC days; this: this machine's own report)")


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
    from service.client.textsafe import printable
    from service.config import check_file
    from service.client.paths import app_paths
    from service.days import UnknownZone, Zone

    unreadable = check_file(app_paths().config_file)  # its time zone and budgets are the report's too
    if unreadable is not None:
        print(f"ctxlamp report: {printable(unreadable, 2000)}.", file=sys.stderr)
        return 2
    try:
        zone = Zone.named(args.timezone if args.timezone is not None else _configured_zone())
    except UnknownZone as exc:
        print(f"ctxlamp report: {printable(exc, 300)}", file=sys.stderr)
        return 2
    summary = None
    synced = _synced(args)
    if isinstance(synced, int):
        return synced
    if synced is not None:
        summary = synced
    elif not args.no_service and not any((args.projects, args.lean_ctx, args.router_db, args.usage_db)):
        summary = _from_service(args, zone)
    if summary is None:
        from service.report.forked import WorkerFailed

        _KEPT.clear()  # a process that runs the command twice (tests) keeps only the last
        try:
            summary = build_report(request_of(args, zone), keep=_KEPT)
        except WorkerFailed as exc:
            print(f"ctxlamp report: the scan failed: {printable(exc, 1000)}", file=sys.stderr)
            return 1
    if getattr(args, "device", None) == "this":
        summary = _with_devices(summary)
    if args.json:
        import orjson
        sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    elif args.csv:
        _write_csv(summary, sys.stdout)
    else:  # model names, paths: from transcripts
        from service.client.terminal import fit, width
        from service.sync.report import device_lines

        columns = width()
        text = render_text(summary, _budgets(summary), columns) + _where_data_is(summary)
        text += "".join(line + "\n" for line in device_lines(summary))
        sys.stdout.write(printable_lines("\n".join(fit(text.split("\n"), columns))))
    sys.stdout.flush()
    return 0


def _synced(args: argparse.Namespace) -> dict | int | None:
    """With sync on: the report over the devices asked for (an exit code on an error); None for this
    device's own report (sync off, `--device this`), which then lists the devices too."""
    from service.config import load
    from service.client.paths import app_paths
    from service.sync.settings import resolve

    paths = app_paths()
    cfg = load(paths.config_file)
    if getattr(args, "device", None) is None and not resolve(cfg).on:
        return None  # sync off: this device's report, without importing sync's files and formats (15 ms)
    from service.sync.report import choice, synced_report
    from service.sync.run import SyncError

    elsewhere = any((args.projects, args.lean_ctx, args.router_db, args.usage_db))
    try:
        asked = choice(cfg, getattr(args, "device", None))
        if asked is None or (elsewhere and args.device is None):  # a one-off report over other files
            return None
        if elsewhere:
            raise SyncError("--device sums what the devices wrote; --projects, --lean-ctx, --router-db and "
                            "--usage-db make a one-off report of this machine (leave --device out)")
        _KEPT.clear()
        return synced_report(request_of(args, Zone.named("UTC")), asked, cfg, paths.config, keep=_KEPT)
    except SyncError as exc:
        if getattr(args, "device", None) is None:  # the folder is away: this device's report, said so
            print(f"ctxlamp report: {exc}; this device's figures only", file=sys.stderr)
            return None
        print(f"ctxlamp report: {exc}", file=sys.stderr)
        return 2


def _with_devices(summary: dict) -> dict:
    """`--device this` with sync on: this device's report, with the devices of the folder listed."""
    from service.config import load
    from service.client.paths import app_paths
    from service.sync.report import devices_only

    paths = app_paths()
    listing = devices_only(load(paths.config_file), paths.config)
    return {**summary, "devices": listing["devices"], "sync": {"device": "this", "skipped": listing["skipped"]}}


def _budgets(summary: dict) -> dict | None:
    """The budgets block for today and this month (None: no budget set). From this report's billed days when
    its period covers this month up to today, else from a report over this month."""
    from service.config import load
    from service.client.paths import app_paths
    from service.report import budgets
    from service.days import DayOf, UnknownZone, Zone

    cfg = load(app_paths().config_file)
    if not budgets.configured(cfg):
        return None
    period = summary.get("period") or {}
    try:
        local = DayOf(Zone.named(period.get("timezone") or "UTC"))
    except UnknownZone:
        return budgets.compute(cfg)
    today = local.today()
    since, until = period.get("since"), period.get("until")
    if (since is None or since <= today.replace(day=1).isoformat()) and (until is None or until >= today.isoformat()):
        billed = ((summary.get("spend") or {}).get("billed") or {}).get("by_day") or {}
        return budgets.view(cfg, billed, today, local.name)
    return budgets.compute(cfg)


def _where_data_is(summary: dict) -> str:
    """One line when the report found nothing and the demo's session is on disk: how to see it."""
    from service.client.running import demo_claude_dir

    demo = demo_claude_dir() / "projects"
    if (summary.get("spend") or {}).get("calls") or not demo.is_dir():
        return ""
    return (f"\nNo Claude Code sessions were read. The demo's are in {demo.parent}: while `make run` plays it, "
            f"`ctxlamp report` reads them; afterwards: CLAUDE_CONFIG_DIR={demo.parent} ctxlamp report\n")


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
    from service.client.running import service_api_file

    try:
        # the user's service, else the demo `make run` plays
        client = ApiClient(timeout=SERVICE_WAIT_S, api_file=service_api_file())
        doc = client.get_report(args.since, args.until, zone.name)
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


def day_table(sp: dict, columns: int | None = None) -> list[str]:
    """Per day, in `ccusage daily`'s columns: models (named as the window names them), input, output, cache
    write, cache read, total tokens and what was billed; a Total row. An older service's report has no
    token columns: cost alone then. Narrower than the full table (`columns`), ccusage's compact columns:
    models, total tokens and cost (the rest in --json, --csv or a wider terminal)."""
    days = sp.get("days") or {}
    billed = (sp.get("billed") or {}).get("by_day") or sp.get("by_day") or {}
    cols: tuple[str, ...] = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens",
                             "total_tokens")
    widths: tuple[int, ...] = (11, 11, 13, 14, 14)
    names: tuple[str, ...] = ("Input", "Output", "Cache write", "Cache read", "Total tokens")
    if columns is not None and columns < WIDE_TABLE:
        cols, widths, names = cols[-1:], widths[-1:], names[-1:]
    head = f"{'Date':<10}  {'Models':<22} " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths)) + f" {'Cost':>10}"
    lines = [head, "-" * len(head)]
    sums = dict.fromkeys(cols, 0)
    for day in sorted(set(days) | set(billed)):
        row = days.get(day) or {}
        models = list(dict.fromkeys(model_name(m) for m in row.get("models") or [])) or ["-"]  # dated ids: one name
        figures = " ".join(f"{row.get(c, 0):>{w},}" for c, w in zip(cols, widths))
        lines.append(f"{day:<10}  {models[0][:22]:<22} {figures} {'$' + format(billed.get(day, 0.0), ',.2f'):>10}")
        lines += [f"{'':<10}  {m[:22]}" for m in models[1:]]
        for c in cols:
            sums[c] += int(row.get(c, 0))
    if len(lines) == 2:
        return ["No calls in this period."]
    total = (sp.get("billed") or {}).get("usd", sp.get("total_usd", 0.0))
    figures = " ".join(f"{sums[c]:>{w},}" for c, w in zip(cols, widths))
    lines += ["-" * len(head), f"{'Total':<10}  {'':<22} {figures} {'$' + format(total, ',.2f'):>10}"]
    if len(cols) == 1:
        lines.append("(input, output and cache columns: a wider terminal, --csv or --json)")
    return lines


WIDE_TABLE = 113  # the full day table's width


def _spend_lines(sp: dict) -> list[str]:
    """The headline (what was billed) and its labelled parts; the estimated range apart, never added in."""
    billed = sp.get("billed") or {}
    lines = []
    if billed:
        lines.append(f"Billed: ${billed['usd']:.2f} = written calls ${billed['written_usd']:.2f} "
                     f"+ not written down ${billed['unwritten_measured_usd']:.2f}"
                     + (f" + ${billed['unwritten_statusline_usd']:.2f} (from its status line)"
                        if billed.get("unwritten_statusline_usd") else ""))
    lines.append(f"  written calls (measured): ${sp['total_usd']:.2f} over {sp['calls']} calls, "
                 f"of which subagents ${sp['subagents_usd']:.2f}")
    by_name: dict[str, float] = {}
    for model, usd in sp["by_model"].items():  # a dated id and its plain one are the same model to the reader
        name = model_name(model)
        by_name[name] = by_name.get(name, 0.0) + usd
    for name, usd in sorted(by_name.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {name:<40} ${usd:.2f}")
    unwritten = sp.get("unwritten") or {}
    if unwritten and unwritten["estimated"].get("compactions"):
        est = unwritten["estimated"]
        n = est["compactions"]
        lines.append(f"  not in the billed figure: {plural(n, 'compaction')} Claude Code gave no cost for "
                     f"(estimated): ${est['low_usd']:.2f} .. ${est['high_usd']:.2f}")
    return lines


def _stretches(n: int) -> str:
    return plural(n, "stretch of work", "stretches of work")


def rent_lines(rs: dict | None) -> list[str]:
    """Rent on dead weight over the period (the tray's headline), from the same stretches of work as the
    restart estimates."""
    if not rs or rs.get("rent_usd") is None:
        return []
    n = int(rs.get("segments_with_reminders") or 0)
    return [f"Rent on dead weight: ${rs['rent_usd']:.2f} over {_stretches(rs['segments'])}, "
            f"{plural(n, 'notice')} (one per stretch, when its rent first reached a restart's cost)"]


def followed_lines(schedule: dict | None) -> list[str]:
    """The report's lead: what following every notice would have saved, against the best in hindsight."""
    from service.client.words import followed_sentence, schedule_detail

    lead = followed_sentence(schedule)
    detail = schedule_detail(schedule) if lead else ""
    return [lead] + (["  " + detail] if detail else []) if lead else []


def restart_lines(rs: dict | None) -> list[str]:
    """What restarting would have saved (docs/measurement.md 14), in the text report."""
    if not rs:
        return []
    from service.client.figures import percent

    capture = rs.get("capture")
    noticed = int(rs["segments_with_reminders"])  # a stretch's first reminder is its notice (docs/glossary.md)
    if followed_lines(rs.get("schedule")):  # the lead priced following the notices: one figure for them (458)
        return [f"The best single restart in hindsight would have saved ${rs['best_single_usd']:.2f} "
                f"(estimated) over {_stretches(rs['segments'])}",
                f"  missed (no notice, a restart would have saved): ${rs['missed_usd']:.2f} "
                f"in {_stretches(rs.get('missed_segments', 0))}"]
    lines = [(f"Restarts would have saved (estimated, one per stretch of work): ${rs['first_reminder_usd']:.2f} "
              f"restarting at the notice, ${rs['best_single_usd']:.2f} with the best single restart, "
              f"over {_stretches(rs['segments'])}")]
    lines.append(f"  stretches with a notice: {noticed}"
                 + (f"; {'the notice' if noticed == 1 else 'the notices'} got {percent(capture, 0)} of the best "
                    "single restart" if capture is not None else ""))
    lines.append(f"  missed (no notice, a restart would have saved): ${rs['missed_usd']:.2f} "
                 f"in {_stretches(rs.get('missed_segments', 0))}")
    return lines


def budget_lines(block: dict | None) -> list[str]:
    """The daily and monthly budgets against what was billed (none set: where to set one)."""
    if not block or not (block.get("daily") or block.get("monthly")):
        return ["Budgets: none set ([budgets] daily_usd, monthly_usd in config.toml, or the window's Settings)"]
    parts = []
    for kind, words in (("daily", "today"), ("monthly", "this month")):
        b = block.get(kind)
        if b:
            parts.append(f"{kind} ${b['spent_usd']:.2f} of ${b['budget_usd']:.2f} {words} ({b['share'] * 100:.0f} %)")
    return ["Budgets: " + "; ".join(parts)]


def channel_lines(e: dict, p: dict, r: dict) -> list[str]:
    """The three savings channels: the window's Overview sentence for each (service/client/words.py), then what
    only the report details."""
    from service.client.words import channel_sentences

    said = dict(channel_sentences({"edit": e, "pinch": p, "retrieval": r}))
    misses = e["str_replace_misses"]
    lines = ["Savings channels",
             f"  Edits (measured): {said['Edits']}",
             f"    missed: {count(misses['not_found'])} text not found, {count(misses['ambiguous'])} ambiguous",
             f"    edits by line number (lean-ctx's, quoting no text): {e['anchored_calls']}, {e['anchored_ops']} changes, "
             f"{e['anchored_avoided_output_tokens']} output tokens avoided, {e['anchored_conflicts']} conflicts",
             f"  Trimming (measured): {said['Trimming']}",
             f"    {plural(p['events'], 'tool result')} trimmed, median {count(p['tokens_saved_median'])} tokens saved",
             f"  Search (estimated): {said['Search']}"]
    for tool, t in r["tools"].items():
        lines.append(f"    {tool:<14} {count(t['calls']):>6} calls {size(t['bytes_served']):>10} served "
                     f"~{size(t['bytes_saved']):>10} spared")
    return lines


def render_text(s: dict, budgets: dict | None = None, columns: int | None = None) -> str:
    """The report as text; `columns`: the terminal's width (service/client/terminal.py), None for no limit."""
    from service.client.terminal import fit

    e, p, r, sp, dq = s["edit"], s["pinch"], s["retrieval"], s["spend"], s["data_quality"]
    period = s["period"]
    head = (f"ctxlamp report  {period.get('since') or 'start'} .. {period.get('until') or 'now'} "
            f"(days in {period.get('timezone') or 'UTC'})")
    lines = [head, ""]
    lead = followed_lines((s.get("restart_savings") or {}).get("schedule"))
    lines += lead + ([""] if lead else [])
    lines += day_table(sp, columns)
    lines += [""] + _spend_lines(sp)
    compacted = compactions_sentence((s.get("compactions") or {}).get("by_trigger"),
                                     (s.get("compactions") or {}).get("cost_usd"))
    if compacted:
        lines.append(f"  Claude Code's {compacted[0].lower()}{compacted[1:]}")
    missed = misses_sentence(s.get("cache_misses"))
    if missed:
        lines.append(f"  As Claude Code's status line counted them, {missed[0].lower()}{missed[1:]}")
    rs = s.get("restart_savings")
    lines += [""] + rent_lines(rs) + restart_lines(rs)
    lines += budget_lines(budgets)
    lines += [""] + channel_lines(e, p, r)
    lines += ["", "Data quality:"]
    lines.append(f"  unpriced models: {', '.join(dq['unpriced_models']) or 'none'}")
    for value, models in (dq.get("unknown_price_modifiers") or {}).items():
        calls = ", ".join(f"{label_text(m)} ({n})" for m, n in models.items())
        lines.append(f"  priced at standard, no figure for {value}: {calls}")
    lines.append(f"  calls whose output Claude Code wrote as a placeholder: {dq['placeholder_output_calls']}")
    if dq.get("placeholder_output_estimate_usd"):
        lines.append(f"    not in any figure above: {unrecorded_output(dq['placeholder_output_estimate_usd'])} "
                     "(estimated from what they wrote)")
    diff = dq["cost_state_diff_pct"]
    lines.append(f"  against Claude Code's own cost figure: {'n/a' if diff is None else f'{diff:+.2f}%'}")
    left = dq.get("cost_state_remaining_usd")
    if left is not None:
        lines.append(f"  left after booking what it did not write down: ${left:+.4f}")
    for x in dq.get("cost_state_explained") or []:
        if x.get("kind") != "equal":
            lines.append(f"    {str(x.get('project') or x.get('session_id'))[-30:]}: {x.get('text')}")
    lines.append(f"  lines that are not JSON objects, skipped: {dq['malformed_lines']['transcripts']} in "
                 f"transcripts, {dq['malformed_lines']['ledgers']} in ledgers")
    for found in dq.get("malformed_files") or []:
        lines.append(f"    {plural(found['lines'], 'line')} in {found['path']}")
    if dq.get("long_lines"):
        lines.append(f"  lines longer than the bound ([transcripts] max_line_mb), skipped: {dq['long_lines']}")
    for row in dq.get("skipped_files") or []:
        lines.append(f"  skipped {row['path']}: {row['reason']}")
    return "\n".join(fit(lines, columns)) + "\n"
