"""`ctxlamp install`: put ctxlamp's status line, its SessionStart hook and its MCP server into Claude Code."""
from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the change as a unified diff; write nothing")


def run(args: argparse.Namespace) -> int:
    from service.claude import settings as cs

    plan = apply(args, "install", cs.plan_install, "ctxlamp is already installed", ("installed in", "already in"))
    if plan is None:
        return 1
    if not args.dry_run and (plan.settings_changed or plan.mcp_changed):
        print("Start a new Claude Code session to pick it up. Your own settings, as they were before "
              "ctxlamp, are kept in the files ending in .ctxlamp-backup until `ctxlamp uninstall`.")
    if not args.dry_run:
        from service.claude.installed import moving_breaks

        if note := moving_breaks():
            print(f"{note[:1].upper()}{note[1:]}.")
    return 0


def apply(args: argparse.Namespace, command: str, make_plan, nothing: str, verbs: tuple[str, str]):
    """Plan, print the diff (--dry-run) or apply and report; None on an error already reported."""
    from service.claude import settings as cs
    from service.claude.command_line import Unquotable

    try:
        plan = make_plan()
        if args.dry_run:
            sys.stdout.write(plan.diff() or f"nothing to change: {nothing}\n")
            _say_status_line(plan, command)
            return plan
        plan = cs.apply_fresh(make_plan)  # re-plans if Claude Code writes a file meanwhile
    except (cs.SettingsError, Unquotable) as exc:
        print(f"ctxlamp {command}: {exc}", file=sys.stderr)
        return None
    for doc, changed, what in ((plan.settings, plan.settings_changed, "hooks and status line"),
                               (plan.mcp, plan.mcp_changed, "MCP server `ctxlamp`")):
        via = f" (the target of the link {doc.link})" if doc.link is not None else ""
        print(f"{what}: {verbs[0] if changed else verbs[1]} {doc.path}{via}")
    _say_status_line(plan, command)
    return plan


def _say_status_line(plan, command: str) -> None:
    """Install tells what became of the user's own status line (kept and run beside ours)."""
    from service.statusline import settings as status_line

    if command == "install" and (text := status_line.describe(plan.settings)):
        print(text)
