"""ChannelMeters: the three channel meters of one transcript file, fed entry by entry.

The service calls `feed` as entries arrive and stores the events; `ctxlamp
report` does the same over whole files. Sidechain entries (subagents) are
spend, not context: they never count as pinch requests, but their edits and
retrievals are real tool calls and are metered.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable


from service.channels.edit import EditMeter, watches
from service.channels.entries import Parts, parts
from service.channels.events import ChannelEvent
from service.channels.pinch import PinchMeter
from service.channels.retrieval import RetrievalMeter, SizeLookup, tracked_tool


@lru_cache(maxsize=4096)
def watched_tool(name: str) -> bool:
    """Whether the edit or the retrieval meter waits for this tool's result (most calls are neither)."""
    return watches(name) or tracked_tool(name) is not None


def default_token_counter() -> Callable[[str], int]:
    """o200k_base token count at a Claude-to-o200k ratio of 1.0."""
    from service.engine_setup.tokenizer import encode_len

    return encode_len


class ChannelMeters:
    def __init__(self, session_id: str | None = None, *, sidechain_file: bool = False,
                 count_tokens: Callable[[str], int] | None = None, defer_tokens: bool = False):
        self.session_id = session_id
        self.sidechain_file = sidechain_file
        self.edit = EditMeter(None if defer_tokens else count_tokens or default_token_counter(), session_id)
        self.pinch = PinchMeter(session_id)
        self.retrieval = RetrievalMeter(session_id)

    def feed(self, entry: dict, file_sizes: SizeLookup = None, p: Parts | None = None) -> list[ChannelEvent]:
        if not isinstance(entry, dict):
            return []
        p = p or parts(entry)
        events = self.pinch.feed(entry, p) if not self.sidechain_file else []
        # only calls of the tools they watch, and results, concern these two
        if p.results or (p.uses and any(watched_tool(str(b.get("name") or "")) for b in p.uses)):
            events += self.edit.feed(entry, p)
            events += self.retrieval.feed(entry, file_sizes, p)
        return events
