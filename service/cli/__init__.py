"""The `ctxlamp` command: this dispatcher, one module per subcommand beside it,
plus what only commands use (the demo session's writer, the doctor).

Modules are imported only when their command runs, so `ctxlamp hook` and
`ctxlamp replay` start fast and never load Qt.
"""
from __future__ import annotations

import sys

from service import __version__

# name -> (module, one-line help). Each module has configure(parser) and run(args) -> int.
COMMANDS: dict[str, tuple[str, str]] = {
    "tray": ("desktop.app", "start the tray lamp (the default command)"),
    "start": ("service.cli.start", "what `make run` does: the tray, the demo when you have no "
              "sessions yet, or the status in the terminal without a display"),
    "serve": ("service.cli.serve", "run the background service (no Qt)"),
    "status": ("service.cli.status", "each live session's lamp (white, green, amber, red) and figures, "
               "live in the terminal"),
    "replay": ("service.cli.replay", "replay a transcript from its first line: what the lamp said at each call"),
    "report": ("service.cli.report", "what you spent per day, the rent on dead weight, what restarts "
               "would have saved, your budgets and the savings channels (Edits, Trimming, Search)"),
    "hook": ("service.cli.hook", "Claude Code hook entry points"),
    "mcp": ("service.cli.mcp", "stdio MCP server for Claude Code"),
    "install": ("service.cli.install", "put ctxlamp into Claude Code: its status line (the lamp under the "
                "prompt), a SessionStart hook and the MCP server (history and handoff tools)"),
    "uninstall": ("service.cli.uninstall", "take out what `ctxlamp install` added (the status line, the hook, "
                  "the MCP server), giving your settings back as they were"),
    "statusline": ("service.cli.statusline", "the line Claude Code shows under its prompt (reads its JSON)"),
    "calibrate": ("service.cli.calibrate", "fit how Claude's token counts compare with the tokenizer "
                  "ctxlamp counts with (o200k)"),
    "screenshot": ("desktop.screenshot", "render tray icons and window tabs to PNG"),
    "doctor": ("service.cli.doctor", "check that this machine has what the tray needs, and name the fix"),
    "demo": ("service.cli.demo", "write the bundled demo session live into a Claude folder"),
    "team": ("service.cli.team", "the team view on a PostgreSQL server: init, member add, push, report"),
    "sync": ("service.cli.sync", "your machines in one view through a folder you already sync: "
             "--folder DIR, --off, --now, --name NAME"),
    "devices": ("service.cli.devices", "the devices of the sync folder; `devices forget NAME` drops one"),
}


def build_parser(argv: list[str]):
    import argparse
    import importlib

    parser = argparse.ArgumentParser(prog="ctxlamp", description="Know when restarting a Claude Code session pays.")
    parser.add_argument("--version", action="version", version=f"ctxlamp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == wanted:  # configure only the command that runs: no heavy imports for the rest
            importlib.import_module(module).configure(p)
            p.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["tray", *argv]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    import importlib

    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def entry() -> None:
    """The console script: `main`, then a fast exit for one-shot commands.

    A report over a large history leaves a big heap; tearing it down object by
    object costs ~0.07 s that nobody waits for, so such commands run without the
    cyclic collector, flush their output and leave with os._exit (they hold no
    other resources by then).
    """
    argv = sys.argv[1:]
    if argv[:1] == ["statusline"] and not {"-h", "--help"} & set(argv):
        # Claude Code runs this after each update: no argparse, no dispatcher, straight to the fast path
        from service.statusline.run import main as statusline

        sys.exit(statusline(argv[1:]))
    one_shot = argv[:1] == ["report"]
    if one_shot:
        import gc

        gc.disable()
    rc = main(argv)
    if one_shot:
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                rc = rc or 1
        os._exit(rc)
    sys.exit(rc)
