"""Text from outside ctxlamp (transcripts, other team members, config) made safe to print or show.

A terminal obeys escape sequences and a rich-text label obeys markup; neither may be steered by a
name somebody else chose. `printable` drops every control and bidi-override character and keeps
the text on one bounded line; `html_text` also escapes markup; `printable_lines` keeps a block's
line breaks. The desktop, the CLI and the MCP server all use these, so one filter holds everywhere.
"""
from __future__ import annotations

import html
import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def printable(text: object, limit: int = 200) -> str:
    """`text` as one line without control or bidi-override characters, at most `limit` characters."""
    line = _UNSAFE.sub("", str(text).replace("\t", " ").replace("\n", " "))
    return line if len(line) <= limit else line[: max(0, limit - 1)] + "\u2026"


def html_text(text: object, limit: int = 200) -> str:
    """`printable(text)` escaped for a rich-text label."""
    return html.escape(printable(text, limit))


def printable_lines(text: str) -> str:
    """A whole block (the report's text) made safe line by line: its line breaks stay, every control
    character in it goes, so an escape sequence hidden in a project or model name never reaches the
    terminal and the layout stays."""
    return "\n".join(printable(line, len(line) + 1) for line in text.split("\n"))
