"""How wide the terminal is, and lines wrapped to it between words (`status` and `report` at 80 columns).

`COLUMNS` decides when set (a user, a test, a pager); else the terminal's own width when the output is
one; else no limit (a file or a pipe keeps the wide layout a script may parse).
"""
from __future__ import annotations

import os
import shutil
import sys
import textwrap
from typing import TextIO

NARROWEST = 40  # below this a layout would be more breaks than text: the narrow layout at this width


def width(stream: TextIO | None = None) -> int | None:
    """Columns to fit, or None for no limit."""
    stream = stream if stream is not None else sys.stdout
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return max(NARROWEST, int(text))
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return max(NARROWEST, shutil.get_terminal_size().columns) if tty else None


def fit(lines: list[str], columns: int | None) -> list[str]:
    """Each line longer than `columns` wrapped between words; its continuation indented two spaces more
    than the line (a word longer than a line, a path, is left whole rather than cut)."""
    if columns is None:
        return list(lines)
    out: list[str] = []
    for line in lines:
        if len(line) <= columns:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip(" "))]
        out += textwrap.wrap(line, columns, initial_indent="", subsequent_indent=lead + "  ",
                             break_long_words=False, break_on_hyphens=False, drop_whitespace=True) or [line]
    return out
