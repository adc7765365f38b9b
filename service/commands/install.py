"""`ctxlamp install`: register the SessionStart hook and the MCP server with Claude Code."""
from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the change as a unified diff; write nothing")


def run(args: argparse.Namespace) -> int:
    from service import claude_settings as cs

    try:
        plan = cs.plan_install()
        if args.dry_run:
            sys.stdout.write(plan.diff() or "nothing to change: ctxlamp is already installed\n")
            return 0
        plan = cs.apply_fresh(cs.plan_install)  # re-plans if Claude Code writes a file meanwhile
    except cs.SettingsError as exc:
        print(f"ctxlamp install: {exc}", file=sys.stderr)
        return 1
    for doc, changed, what in ((plan.settings, plan.settings_changed, "SessionStart hook"),
                               (plan.mcp, plan.mcp_changed, "MCP server `ctxlamp`")):
        print(f"{what}: {'installed in' if changed else 'already in'} {doc.path}")
    if plan.settings_changed or plan.mcp_changed:
        print("Start a new Claude Code session to pick it up; backups end in .ctxlamp-backup.")
    return 0
