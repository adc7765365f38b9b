"""`ctxlamp uninstall`: remove exactly what `ctxlamp install` added to Claude Code's files."""
from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the change as a unified diff; write nothing")


def run(args: argparse.Namespace) -> int:
    from service import claude_settings as cs

    try:
        plan = cs.plan_uninstall()
        if args.dry_run:
            sys.stdout.write(plan.diff() or "nothing to change: ctxlamp is not installed\n")
            return 0
        plan = cs.apply_fresh(cs.plan_uninstall)  # re-plans if Claude Code writes a file meanwhile
    except cs.SettingsError as exc:
        print(f"ctxlamp uninstall: {exc}", file=sys.stderr)
        return 1
    for doc, changed, what in ((plan.settings, plan.settings_changed, "SessionStart hook"),
                               (plan.mcp, plan.mcp_changed, "MCP server `ctxlamp`")):
        print(f"{what}: {'removed from' if changed else 'not in'} {doc.path}")
    return 0
