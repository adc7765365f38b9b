"""Server-sent events parsing (pure): lines in, (event, data) pairs out; every client of the event
stream (the desktop's thread, `ctxlamp status`, tests) reads it through here.

Follows the WHATWG rules the service relies on: `event:` names the event,
`data:` lines join with newlines, a blank line dispatches, `:` lines are
comments (keep-alives), a missing event name means "message".
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class SseParser:
    _event: str = ""
    _data: list[str] = field(default_factory=list)

    def feed_line(self, line: str) -> tuple[str, str] | None:
        """Feed one line (without its newline); returns a dispatched event or None."""
        line = line.rstrip("\r\n")
        if line == "":
            if not self._data:
                self._event = ""
                return None
            out = (self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return out
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None

    def feed(self, text: str) -> list[tuple[str, str]]:
        out = []
        for line in text.split("\n"):
            ev = self.feed_line(line)
            if ev:
                out.append(ev)
        return out


def sse_pairs(fp: Any) -> Iterator[tuple[str, Any]]:
    """(event, decoded JSON data) pairs of an event stream read from `fp` (bytes lines), until it ends.
    An event whose data is not JSON is passed over."""
    parser = SseParser()
    while True:
        raw = fp.readline()
        if not raw:
            return
        got = parser.feed_line(raw.decode("utf-8", "replace"))
        if got is not None:
            try:
                yield got[0], json.loads(got[1])
            except ValueError:
                continue
