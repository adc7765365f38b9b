"""Who compacted: the user (`/compact`), Claude Code near the window's end (auto), or Claude Code while the
user was away (idle). One reading of the transcript's marks for the engine and the report alike.

A `compact_boundary`'s `compactMetadata.trigger` says manual or auto; an idle compaction writes the
boundary (trigger auto; 2.1.285-2.1.300 wrote manual), its summary, then a `system` line of subtype
`informational` whose content begins with one of IDLE_NOTES. A summary prepared while the user was away
also marks its boundary `precomputed: true`: idle, with or without the note.
"""
from __future__ import annotations

from typing import Any

TRIGGERS = ("manual", "auto", "idle")
IDLE_NOTES = ("Compacted while idle", "Compacted using a summary written while you were away")
# the bytes a line reader looks for before parsing a line that may be an idle note (both notes begin so)
IDLE_NOTE_MARK = b"Compacted "


def boundary_trigger(meta: Any) -> str:
    """The trigger a boundary's compactMetadata says: idle when precomputed, manual when it says so, else auto
    (a boundary with no readable trigger was not asked for by the user as far as the file shows)."""
    if not isinstance(meta, dict):
        return "auto"
    if meta.get("precomputed") is True:
        return "idle"
    return "manual" if meta.get("trigger") == "manual" else "auto"


def is_idle_note(entry: dict[str, Any]) -> bool:
    """A `system` `informational` line saying the compaction before it ran while the user was idle."""
    if entry.get("type") != "system" or entry.get("subtype") != "informational":
        return False
    content = entry.get("content")
    return isinstance(content, str) and content.startswith(IDLE_NOTES)
