"""`ctxlamp replay FILE [--jsonl] [--with-subagents]`: the engine over one transcript, from byte zero.

`--jsonl` is the machine contract of docs/measurement.md section 11; without it a
compact table a person can read, headed by the engine's session id and the file's own
id (the report's name for it: a resumed session's first line names the session it
continued). `--with-subagents` adds what the session's subagents cost, as the report
books it. Bad input never fails the command; a defect (an error that is not bad input)
exits 3 and archives nothing.
"""
from __future__ import annotations

import itertools
import os
import sys
import traceback

import orjson

from service.client.textsafe import printable

_LAMP_DOT = {"white": "\u25cb", "green": "\x1b[32m\u25cf\x1b[0m", "amber": "\x1b[33m\u25cf\x1b[0m",
             "red": "\x1b[31m\u25cf\x1b[0m"}


def configure(p) -> None:
    p.add_argument("file", help="a Claude Code transcript (.jsonl)")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per call, reset, reminder; then end")
    p.add_argument("--no-cache", action="store_true", help="tokenize every text (no content-hash cache)")
    p.add_argument("--with-subagents", action="store_true", help="also what the session's subagents cost "
                   "(its subagents/ folder, agent-*.jsonl beside it and the calls it reports), as the report books it")


def _fmt(v, spec=".2f") -> str:
    return "-" if v is None else format(v, spec)


def run(args) -> int:
    from service.config import configured_max_line
    from service.ingest.transcript_file import Skipped, open_fd
    from service.engine_setup.engines import load_prices, replay_file, shared_counter

    source = _source(args.file)
    try:
        os.close(open_fd(source)[0])
    except Skipped as exc:
        print(f"ctxlamp replay: cannot read {printable(args.file, 500)}: {printable(exc.reason, 300)}", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    colour = sys.stdout.isatty()
    try:
        prices = load_prices()
        events = replay_file(args.file, prices, counter=shared_counter(not args.no_cache),
                             max_line=configured_max_line(), read_from=source)
        subagents = session_spend(source, prices, configured_max_line()) if args.with_subagents else None
        if args.jsonl:
            for ev in events:
                if ev["event"] == "end" and subagents is not None:
                    out.write(orjson.dumps({"event": "subagents", **subagents}) + b"\n")
                out.write(orjson.dumps(ev) + b"\n")
            out.flush()
            return 0
        _table(events, colour, file_id(args.file), subagents)
        return 0
    except BrokenPipeError:
        return 0
    except Skipped as exc:  # the file went away or its mount failed mid-read
        print(f"ctxlamp replay: reading {printable(args.file, 500)} failed: {printable(exc.reason, 300)}",
              file=sys.stderr)
        return 2
    except Exception:  # a defect, not bad input: say so, archive nothing
        print("ctxlamp replay: internal error (this is a bug, not bad input):", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return 3


def _source(path: str) -> str:
    """What to read for `path`: the file, or the service's kept copy once Claude Code has deleted it."""
    from service.client.paths import app_paths, claude_projects
    from service.ingest.kept import folder_of, readable

    return readable(path, folder_of(app_paths().data), claude_projects())


def file_id(path: str) -> str:
    """The transcript's own id, as the report names the session: its file name without `.jsonl`."""
    return os.path.basename(path).removesuffix(".jsonl")


def session_spend(path: str, prices, max_line: int) -> dict:
    """What the session of the transcript at `path` cost with its subagents, as `ctxlamp report` books it:
    the main file, its `subagents/` folder and the `agent-*.jsonl` files beside it of the same session."""
    from service.report.scan import SizeMemo, TranscriptFile, file_chunks, init_worker, scan_chunks, settle, lazy_counter
    from service.report.summary import build_summary

    own = file_id(path)
    folder = os.path.dirname(os.path.abspath(path))
    project = os.path.basename(folder)
    results = {path: scan_chunks(file_chunks(path), TranscriptFile(path, project, False, own), SizeMemo())}
    session = results[path]["session_id"]
    subs = os.path.join(folder, own, "subagents")
    found = [os.path.join(subs, n) for n in sorted(os.listdir(subs))] if os.path.isdir(subs) else []
    found += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.startswith("agent-")]
    init_worker({}, max_line)
    for sub in found:
        if not sub.endswith(".jsonl") or not os.path.isfile(sub):
            continue
        result = scan_chunks(file_chunks(sub), TranscriptFile(sub, project, True, own), SizeMemo(), defer_tokens=True)
        if sub.startswith(subs) or result["session_id"] in (own, session):
            settle(result, lazy_counter)
            results[sub] = result
    sp = build_summary(results, prices.lookup)["spend"]
    return {"files": [p for p in results if p != path],
            "main_usd": sp["main_usd"], "subagents_usd": sp["subagents_usd"], "usd": sp["total_usd"],
            "calls": sp["calls"]}


DEVELOPER_NOTE = ("developer output: the engine's figures by their identifiers (docs/measurement.md section 11). "
                  "lamp: its colour (W white, G green, A amber, R red) and state; x: context Nx its useful part; "
                  "xSweet: the sweet spot (as x); u: the sweet spot's measure; stock: context tokens; rent $: rent "
                  "on dead weight so far; laps: reminders. `ctxlamp status` says the same in plain words.")


def _table(events, colour: bool, own_id: str = "", subagents: dict | None = None) -> None:
    from service.client.terminal import fit, width

    w = sys.stdout.write
    events = iter(events)
    first = next(events, None)
    if first is not None:
        events = itertools.chain([first], events)
        sid = first.get("session_id")
        if sid and sid != own_id:  # a resumed session's file: the engine names the session it continued
            w(f"session {printable(str(sid), 80)} · file {printable(own_id, 80)}\n")
        elif own_id:
            w(f"session {printable(own_id, 80)}\n")
    w("\n".join(fit([DEVELOPER_NOTE], width() or 100)) + "\n\n")
    w(f"{'call':>5} {'time':>8} {'lamp':<10} {'x':>6} {'xSweet':>6} {'u':>5} {'stock':>8} {'rent $':>9} {'laps':>4}\n")
    for ev in events:
        kind = ev["event"]
        if kind == "call":
            dot = _LAMP_DOT[ev["lamp"]["colour"]] if colour else ev["lamp"]["colour"][0].upper()
            at = (ev.get("updated_at") or "")[11:19]
            w(f"{ev['calls']:>5} {at:>8} {dot} {ev['lamp']['state']:<8} {_fmt(ev['x'])!s:>6} {_fmt(ev['xSweet'])!s:>6} "
              f"{_fmt(ev['u'])!s:>5} {ev['totalStock']:>8} {ev['bill_cycle_usd']:>9.4f} {ev['laps']:>4}\n")
        elif kind == "reset":
            w(f"----- reset: segment {ev['segment']} ({printable(ev.get('trigger') or 'compact', 40)}, "
              f"{ev.get('preTokens')} -> {ev.get('postTokens')} tokens) -----\n")
        elif kind == "rewind":
            w(f"      <<< rewind after call {ev['call']}: B_default {ev['B_default_before']} -> {ev['B_default']} "
              f"(the conversation went back to an earlier message)\n")
        elif kind == "reminder":
            w(f"      >>> reminder: lap {ev['lap']} at call {ev['call']}: the rent paid has reached a restart's cost\n")
        elif kind == "end":
            if subagents is not None:
                w(f"\nwith subagents ({len(subagents['files'])} files): ${subagents['usd']:.4f} over "
                  f"{subagents['calls']} calls = main chain ${subagents['main_usd']:.4f} "
                  f"+ subagents ${subagents['subagents_usd']:.4f} (as the report books them)\n")
            held = f", held back: {ev['held_back_bytes']} bytes of an unfinished last line" if ev["held_back_bytes"] else ""
            w(f"\nsegments ({len(ev['segments'])}), lines skipped (not JSON objects, entries of a shape "
              f"it cannot read, or longer than [transcripts] max_line_mb): {ev['skipped_lines']}{held}\n")
            for s in ev["segments"]:
                w(f"  #{s['segment']} {printable(s['model'], 80)}: {s['calls']} calls, {s['turns']} turns, "
                  f"in ${s['bill_in_usd']:.4f} out ${s['bill_out_usd']:.4f}, rent ${s['rent_usd']:.4f}, "
                  f"laps {s['laps']}, {s['duration_s']:.0f}s, ended by {printable(s['end_reason'], 40)}\n")
                for m in s.get("models", ()):  # a /model switch: each model's share
                    w(f"     {printable(m['model'], 80)}: {m['calls']} calls, in ${m['bill_in_usd']:.4f} out ${m['bill_out_usd']:.4f}\n")
