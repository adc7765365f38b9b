"""`ctxlamp calibrate`: fit the Claude-to-o200k ratio per model family from transcripts.

Prints each family's ratio with its standard error; `--write` stores the ratios
in config.toml (`[tokenizer.ratio]`), where they apply to tool events from then on.
"""
from __future__ import annotations

import sys
from pathlib import Path


def configure(p) -> None:
    p.add_argument("paths", nargs="*", type=Path, help="transcripts or folders (default: all of Claude Code's)")
    p.add_argument("--write", action="store_true", help="store the fitted ratios in config.toml")


def run(args) -> int:
    from service.config import configured_max_line
    from service.engine import LineSplitter, Malformed, parse_line
    from service.ingest.transcript_file import Skipped, chunks
    from service.engine_setup.calibrate import fit, pairs
    from service.engine_setup.tokenizer import encode_len
    from service.client.paths import claude_projects
    from service.client.textsafe import printable  # a path is outside text: no escape reaches the terminal

    max_line = configured_max_line()

    roots = args.paths or [claude_projects()]
    files = []
    for root in roots:
        files += [root] if root.is_file() else sorted(p for p in root.rglob("*.jsonl")
                                                      if "subagents" not in p.parts and not p.name.startswith("agent-"))
    points = []
    for i, path in enumerate(files, 1):
        entries = []
        splitter = LineSplitter(max_line)
        try:
            for chunk in chunks(path):
                for line in splitter.feed(chunk):
                    try:
                        entry = parse_line(line)
                    except Malformed:
                        continue
                    if entry is not None:
                        entries.append(entry)
        except Skipped as exc:
            if not exc.gone:
                print(f"calibrate: skipped {printable(path, 500)}: {printable(exc.reason)}", file=sys.stderr)
        points += pairs(entries, encode_len)
        if sys.stderr.isatty() and len(files) > 20:
            print(f"\rcalibrate: {i}/{len(files)} transcripts", end="", file=sys.stderr)
    fits = fit(points)
    if not fits:
        print(f"calibrate: not enough tool results in {len(files)} transcripts to fit a ratio "
              f"(need 3 or more results of 200+ tokens per model family).")
        return 1
    print("Claude's tokens per counted token (o200k), per model family. Developer output: ratio the fitted "
          "figure, ± stderr its standard error, error the mean relative error of the fit, overhead the fixed "
          "tokens per tool result, points the tool results fitted.")
    print(f"{'family':<10} {'ratio':>7} {'± stderr':>9} {'error':>7} {'overhead':>9} {'points':>6}")
    for f in fits:
        print(f"{f.family:<10} {f.ratio:>7.3f} {f.stderr:>9.3f} {f.rel_error_pct:>6.1f}% {f.overhead:>9.0f} {f.points:>6}")
    if args.write:
        from service.config import load, merge, save
        from service.client.paths import app_paths

        path = app_paths().ensure().config_file
        save(path, merge(load(path), {"tokenizer": {"ratio": {f.family: round(f.ratio, 4) for f in fits}}}))
        print("calibrate: ratios written to config.toml; they apply to tool events from now on.")
    return 0
