"""`ctxlamp replay FILE [--jsonl]`: the engine over one transcript, from byte zero.

`--jsonl` is the machine contract of docs/measurement.md section 11; without it a
compact table a person can read. Bad input never fails the command; a defect
(an error that is not bad input) exits 3 and archives nothing.
"""
from __future__ import annotations

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


def _fmt(v, spec=".2f") -> str:
    return "-" if v is None else format(v, spec)


def run(args) -> int:
    from service.config import configured_max_line
    from service.ingest.transcript_file import Skipped, open_fd
    from service.engine_setup.engines import load_prices, replay_file, shared_counter

    try:
        os.close(open_fd(args.file)[0])
    except Skipped as exc:
        print(f"ctxlamp replay: cannot read {printable(args.file, 500)}: {printable(exc.reason, 300)}", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    colour = sys.stdout.isatty()
    try:
        events = replay_file(args.file, load_prices(), counter=shared_counter(not args.no_cache),
                             max_line=configured_max_line())
        if args.jsonl:
            for ev in events:
                out.write(orjson.dumps(ev) + b"\n")
            out.flush()
            return 0
        _table(events, colour)
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


DEVELOPER_NOTE = ("developer output: the engine's figures by their identifiers (docs/measurement.md section 11). "
                  "lamp: its colour (W white, G green, A amber, R red) and state; x: context Nx its useful part; "
                  "xSweet: the sweet spot (as x); u: the sweet spot's measure; stock: context tokens; rent $: rent "
                  "on dead weight so far; laps: reminders. `ctxlamp status` says the same in plain words.")


def _table(events, colour: bool) -> None:
    from service.client.terminal import fit, width

    w = sys.stdout.write
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
            held = f", held back: {ev['held_back_bytes']} bytes of an unfinished last line" if ev["held_back_bytes"] else ""
            w(f"\nsegments ({len(ev['segments'])}), lines skipped (not JSON objects, entries of a shape "
              f"it cannot read, or longer than [transcripts] max_line_mb): {ev['skipped_lines']}{held}\n")
            for s in ev["segments"]:
                w(f"  #{s['segment']} {printable(s['model'], 80)}: {s['calls']} calls, {s['turns']} turns, "
                  f"in ${s['bill_in_usd']:.4f} out ${s['bill_out_usd']:.4f}, rent ${s['rent_usd']:.4f}, "
                  f"laps {s['laps']}, {s['duration_s']:.0f}s, ended by {printable(s['end_reason'], 40)}\n")
                for m in s.get("models", ()):  # a /model switch: each model's share
                    w(f"     {printable(m['model'], 80)}: {m['calls']} calls, in ${m['bill_in_usd']:.4f} out ${m['bill_out_usd']:.4f}\n")
