"""`ctxlamp mcp`: the stdio MCP server registered with Claude Code (see service/claude/mcp_server.py)."""
from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Serve ctxlamp's handoff and history tools over MCP on stdin/stdout "
                          "(Claude Code starts this; `ctxlamp install` registers it).")


def run(args: argparse.Namespace) -> int:
    from service.claude.mcp_server import main

    return main()
