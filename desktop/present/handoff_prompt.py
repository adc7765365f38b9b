"""The text "Prepare handoff" copies: a prompt the user pastes into Claude Code.

It asks the agent to call the ctxlamp MCP tool `handoff_save` with a task line,
a body a successor can work from, and the paths that matter (the current
selection, largest first), so the next session starts with the useful part.
The paths and the project come from transcripts: each passes the one text filter and stays on its
own line, so a file name cannot add lines to the prompt.
"""
from __future__ import annotations

from service.client.textsafe import printable

MAX_PATHS = 40
PATH_CHARS = 300


def selected_paths(series: dict | None) -> list[str]:
    rows = [p for p in (series or {}).get("paths") or [] if p.get("selected")]
    rows.sort(key=lambda p: -(p.get("tokens") or 0))
    return [printable(p["path"], PATH_CHARS) for p in rows[:MAX_PATHS] if p.get("path")]


def handoff_prompt(snapshot: dict | None, series: dict | None = None) -> str:
    paths = selected_paths(series)
    project = printable((snapshot or {}).get("project") or "", PATH_CHARS)
    lines = [
        "Please hand this work over to a fresh session: call the MCP tool "
        "mcp__ctxlamp__handoff_save now, with these arguments:",
        "- task: one line saying what we are working on;",
        "- body: what is done, what is next, decisions taken and why, open questions and "
        "known pitfalls, written so a successor with no memory of this session can continue;",
    ]
    if paths:
        lines.append("- paths: the files that matter. Start from this list (drop any that no longer "
                     "matter, add any that are missing):")
        lines.extend(f"    {p}" for p in paths)
    else:
        lines.append("- paths: the files that matter for the next steps.")
    if project:
        lines.append(f"The project is {project}.")
    lines.append("Then tell me the load token it returns, and stop.")
    return "\n".join(lines)
