"""The `statusLine` entry of Claude Code's settings.json: put in by `ctxlamp install`, taken out by
`uninstall`, and the user's own status line kept.

Without a statusLine, ours goes in: `{"type": "command", "command": "<python> -S
<...>/service/statusline/fast.py"}` (the script form starts in a fraction of `ctxlamp
statusline`'s time: no site packages, no runpy). With the user's own command, only its
`command` changes, to ours with `--wrap '<theirs>'`: ctxlamp runs theirs with the same stdin and
prints its line beside ours; every other key (padding, ...) stays where it is. Uninstall puts
their command back from the `--wrap` argument (or removes the entry ctxlamp added), so the
object is exactly what it was. A statusLine that is not a `command` one is left alone.
"""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

KEY = "statusLine"
SCRIPT = Path(__file__).resolve().parent / "fast.py"
_OURS = re.compile(r"service/statusline/fast\.py|(?:^|[\s/'\"])ctxlamp(?:\.exe)?['\"]?\s+statusline|-m\s+service\.cli\s+statusline")


def command(wrap: str | None = None, python: str | None = None, *, system: str = sys.platform) -> str:
    """Our status-line command line (quoted for Claude Code's shell on `system`: command_line.py)."""
    from service.claude.command_line import command_line, portable_path

    if getattr(sys, "frozen", False):  # a PyInstaller build has no Python to run the script with
        program, args = sys.executable, ["statusline"]
    else:
        program, args = python or sys.executable, ["-S", portable_path(str(SCRIPT), system)]
    if wrap:
        args += ["--wrap", wrap]
    return command_line(program, args, system=system)


def _words(entry: object) -> list[str] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str) or not _OURS.search(entry["command"]):
        return None
    try:
        return shlex.split(entry["command"])
    except ValueError:
        return None


def is_ours(entry: object) -> bool:
    return _words(entry) is not None


def wrapped(entry: object) -> str | None:
    """The user's own command inside ours (the --wrap argument), if any."""
    words = _words(entry) or []
    for i, word in enumerate(words):
        if word == "--wrap" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--wrap="):
            return word[7:]
    return None


def add(doc, python: str | None = None) -> bool:
    """Ours in `doc.data` (a service.claude.settings.Document); True when something changed."""
    entry = doc.data.get(KEY)
    if entry is None:
        doc.data[KEY] = {"type": "command", "command": command(python=python)}
        return True
    if not isinstance(entry, dict) or entry.get("type") != "command" or not isinstance(entry.get("command"), str):
        return False  # another kind of status line: not ours to change
    want = command(wrapped(entry) if is_ours(entry) else entry["command"], python)
    if entry["command"] == want:
        return False
    entry["command"] = want
    return True


def remove(doc) -> bool:
    entry = doc.data.get(KEY)
    if not is_ours(entry):
        return False
    theirs = wrapped(entry)
    if theirs is None:
        del doc.data[KEY]
    else:
        entry["command"] = theirs
    return True


def describe(doc) -> str | None:
    """What install does to the status line, in words (for --dry-run and the install report)."""
    entry = doc.data.get(KEY)
    if not isinstance(entry, dict):
        return "statusLine: left as it is (not a command status line)" if entry is not None else None
    theirs = wrapped(entry)
    if theirs:
        return (f"statusLine: your own `{theirs}` stays: ctxlamp runs it with the same input "
                "and prints its line beside ctxlamp's")
    if is_ours(entry):
        return "statusLine: ctxlamp's line"
    return "statusLine: left as it is (not a command status line)"
