"""Text for a terminal, built from text that came from outside (transcripts, config, the API).

`service/textsafe.py` makes one value safe; a whole block (the report's text) is made safe
here line by line, so its line breaks stay while every control character in it goes.
"""
from __future__ import annotations

from service.textsafe import printable


def printable_lines(text: str) -> str:
    """`text` with each line passed through `printable` (no length limit): an escape sequence
    hidden in a project or model name never reaches the terminal, the layout stays."""
    return "\n".join(printable(line, len(line) + 1) for line in text.split("\n"))
