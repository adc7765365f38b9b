"""What the commands `ctxlamp install` wrote into Claude Code's files run, and whether it is still there.

The installed commands name this installation's files (its Python, the status line's script): the
status line starts in a fraction of `ctxlamp statusline`'s time that way (docs/decisions.md 415).
So a clone that moves or goes breaks them; `ctxlamp doctor` and `install` say so plainly.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from service.claude import settings as cs

WHAT = {"statusLine": "status line", "hook": "SessionStart hook", "mcp": "MCP server"}


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def _paths_of(words: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The program and the files of ours a command line names (env's PYTHONPATH, a script)."""
    found: list[str] = []
    if words[:1] == ["env"]:
        words = words[1:]
        while words and "=" in words[0] and not words[0].startswith(("/", "-")):
            key, _, value = words.pop(0).partition("=")
            if key == "PYTHONPATH":
                found.append(value)
    if words:
        found.append(words[0])
    found += [w for w in words[1:] if w.endswith(".py") and os.path.isabs(w)]
    found += [v for k, v in (env or {}).items() if k == "PYTHONPATH" and isinstance(v, str)]
    return found


def used_paths() -> list[tuple[str, str]]:
    """(what, path) for each file an installed ctxlamp command runs (none when it is not installed)."""
    from service.statusline import settings as status_line

    out: list[tuple[str, str]] = []
    try:
        settings, mcp = cs.Document.read(cs.settings_file()), cs.Document.read(cs.mcp_config_file())
    except cs.SettingsError:
        return out
    entry = settings.data.get(status_line.KEY)
    if isinstance(entry, dict) and status_line.is_ours(entry):
        out += [("statusLine", p) for p in _paths_of(_words(entry["command"]))]
    hooks = settings.data.get("hooks")
    for group in (hooks.get(cs.HOOK_EVENT) if isinstance(hooks, dict) else None) or []:
        for hook in (group.get("hooks") if isinstance(group, dict) else None) or []:
            if cs.is_our_hook(hook):
                out += [("hook", p) for p in _paths_of(_words(hook["command"]))]
    servers = mcp.data.get("mcpServers")
    server = servers.get(cs.SERVER_NAME) if isinstance(servers, dict) else None
    if isinstance(server, dict) and cs.is_our_server(server):
        env = server.get("env") if isinstance(server.get("env"), dict) else {}
        out += [("mcp", p) for p in _paths_of([server["command"]], env)]
    return out


def missing() -> list[tuple[str, str]]:
    return [(what, path) for what, path in used_paths() if not os.path.exists(path)]


def clone() -> Path | None:
    """The source checkout this ctxlamp runs from, None for an installed package or a packaged build."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "service").is_dir() else None


def problem() -> str | None:
    """One sentence when an installed command runs a file that is gone (the clone moved or was deleted)."""
    gone = missing()
    if not gone:
        return None
    what = sorted({WHAT[w] for w, _ in gone}, key=list(WHAT.values()).index)
    return (f"Claude Code's {', '.join(what)} run{'s' if len(what) == 1 else ''} {gone[0][1]}, which is not "
            "there any more (the ctxlamp folder moved or was deleted): its status line shows an error and "
            "the hook and history tools fail; run `ctxlamp install` again from where ctxlamp is now, or "
            "`ctxlamp uninstall`")


def moving_breaks() -> str | None:
    """One sentence when the installed commands run from a clone: what moving or deleting it breaks."""
    folder = clone()
    if folder is None or not any(path.startswith(str(folder)) for _, path in used_paths()):
        return None
    return (f"Claude Code runs ctxlamp's status line, hook and MCP server from {folder}: moving or deleting "
            "that folder breaks them (the status line shows an error); after a move, run `ctxlamp install` "
            "again from the new place")
