"""ChannelEvent: one measured (or estimated) thing that happened in a channel.

Events are plain data so they can be cached as JSON, stored by the service
and summed by the report; `data` holds the channel's own fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Each channel says how much to trust its figures: measured where a transcript or ledger holds the
# number, estimated where it is a counterfactual (retrieval's bytes saved).
LABELS = {"edit": "measured", "pinch": "measured", "retrieval": "estimated", "spend": "measured"}


@dataclass
class ChannelEvent:
    channel: str            # "edit" | "pinch" | "retrieval"
    kind: str               # e.g. "str_replace", "str_replace_miss", "anchored", "compaction", "context_edit", "tool"
    ts: str | None          # ISO-8601 time of the entry that completed the event
    session_id: str | None
    source: str             # "transcript", "lean-ctx", "router-db", "usage-db", "ledger:<file>"
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return LABELS[self.channel]

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "kind": self.kind, "ts": self.ts,
                "session_id": self.session_id, "source": self.source, "data": self.data}
