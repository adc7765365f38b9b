"""Split a byte stream into complete JSONL lines, holding back an unfinished tail.

Claude Code appends one JSON object a line; a reader that catches the file
mid-write sees half a line. That half is kept until its newline arrives, so
feeding a file in arbitrary chunks yields exactly the lines of reading it whole.
"""
from __future__ import annotations


class LineSplitter:
    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """Complete lines in `chunk` (newline stripped, blank lines dropped)."""
        if not chunk:
            return []
        data = self._tail + chunk if self._tail else chunk
        end = data.rfind(b"\n")
        if end < 0:
            self._tail = data
            return []
        self._tail = data[end + 1:]
        return [ln for ln in data[:end].split(b"\n") if ln.strip()]

    @property
    def pending(self) -> int:
        """Bytes held back (an unfinished last line)."""
        return len(self._tail)
