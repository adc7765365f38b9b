"""`ctxlamp demo`: write the bundled demo session live into a demo Claude folder.

Run a service (or the tray) with the same CTXLAMP_HOME / CLAUDE_CONFIG_DIR to
watch the lamp walk from white to red in about a minute; `ctxlamp start`
does all of that for you when you have no transcripts of your own.
"""
from __future__ import annotations

import sys
from pathlib import Path


def configure(p) -> None:
    p.add_argument("--claude-dir", type=Path, help="where to write projects/ (default: $CLAUDE_CONFIG_DIR)")
    p.add_argument("--pace", type=float, default=0.5, help="seconds between API responses (default 0.5)")
    p.add_argument("--quiet", action="store_true", help="no progress output (when another view owns the terminal)")


def run(args) -> int:
    from service.cli.demo_session import play
    from service.client.paths import app_paths, claude_dir

    target = args.claude_dir or claude_dir()
    project = app_paths().data / "demo-project"

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty() and not args.quiet:
            print(f"\rdemo: {done}/{total} transcript lines written", end="", file=sys.stderr, flush=True)

    path = play(target, project, seconds_per_call=args.pace, progress=progress)
    if not args.quiet:
        print(f"\ndemo: finished writing {path}", file=sys.stderr)
    return 0
