"""`ctxlamp uninstall`: remove exactly what `ctxlamp install` added to Claude Code's files."""
from __future__ import annotations

import argparse

from service.cli.install import apply, configure  # noqa: F401 - configure is re-exported (same --dry-run flag)


def run(args: argparse.Namespace) -> int:
    from service.claude import settings as cs

    plan = apply(args, "uninstall", cs.plan_uninstall, "ctxlamp is not installed", ("removed from", "not in"))
    return 0 if plan is not None else 1
