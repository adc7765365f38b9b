"""`ctxlamp statusline`: Claude Code's status-line command (see service/statusline/run.py).

The console entry (service/cli/__init__.py) runs it without argparse; this module is the same command
reached through the dispatcher (help text, `ctxlamp statusline --help`).
"""
from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wrap", metavar="COMMAND",
                        help="also run this status-line command with the same input and print its line beside ours")
    parser.add_argument("--no-color", action="store_true", help="no ANSI colours")


def run(args: argparse.Namespace) -> int:
    from service.statusline.run import main

    argv = (["--wrap", args.wrap] if args.wrap else []) + (["--no-color"] if args.no_color else [])
    return main(argv)
