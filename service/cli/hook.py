"""`ctxlamp hook session-start|pre-model-switch`: the hooks Claude Code runs (see service/claude/hook.py).

Kept tiny: nothing heavy is imported, and every failure ends in exit 0.
"""
from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("event", choices=["session-start", "pre-model-switch"], help="the Claude Code hook event")


def run(args: argparse.Namespace) -> int:
    try:
        from service.claude import hook
    except BaseException:
        return 0
    return hook.main(event=args.event)
