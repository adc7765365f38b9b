"""Retrieval channel: estimated bytes saved.

Per discovery call: saved = max(0, sum of distinct result files' sizes -
bytes served), over at most 50 distinct files; when no size is known,
saved = max(0, handles * 4096 - bytes served). Scoped reads (`cl_expand`) and
context tools (`cl_save`, `cl_load`) book 0; operational tools are untracked.
Everything here is an estimate (a counterfactual), and labelled so.

Bytes served for Grep/Glob are the UTF-8 bytes of the tool_result text the
model received; their result files are `toolUseResult.filenames`.
File sizes come from a lookup the caller hands in (sizes read from disk at
ingestion and remembered), so this module does no I/O.
"""
from __future__ import annotations

import json
import posixpath
from typing import Any, Callable, Mapping, Protocol

from service.channels.entries import CallPairs, Parts, base_tool_name, parts, result_text
from service.channels.events import ChannelEvent

DISCOVERY = frozenset({"Grep", "Glob", "cl_search", "cl_explore", "cl_related", "cl_impact"})
BOOKS_ZERO = frozenset({"cl_expand", "cl_save", "cl_load"})
OPERATIONAL = frozenset({"cl_refresh", "cl_doctor", "cl_stats", "cl_prune", "cl_drop", "cl_current", "cl_usage"})
MAX_FILES = 50
FALLBACK_FILE_BYTES = 4096
_IMPACT_KEYS = ("target", "candidates", "callers", "callees", "affected")

class SizeSource(Protocol):
    """Anything with `get(path)`: a dict of sizes, or the report's memo that reads a size from disk once."""

    def get(self, path: str, /) -> Any: ...


SizeLookup = Mapping[str, Any] | SizeSource | Callable[[str], Any] | None


def tracked_tool(name: str) -> str | None:
    """The tracked name of a tool call, or None when the channel ignores it."""
    base = base_tool_name(name)
    if base in DISCOVERY or base in BOOKS_ZERO:
        return base
    return None


def estimate_saved(sizes: list[int | None], handles: int, bytes_served: int) -> tuple[int, str]:
    """(bytes saved, basis). `sizes` are the distinct result files' sizes (None = unknown)."""
    known = [s for s in sizes[:MAX_FILES] if s is not None]
    if known:
        return max(0, sum(known) - bytes_served), "sizes"
    if handles > 0:
        return max(0, min(handles, MAX_FILES) * FALLBACK_FILE_BYTES - bytes_served), "handles"
    return 0, "none"


def _paths_in(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        p = obj.get("path") or obj.get("file") or obj.get("filePath")
        return [p] if isinstance(p, str) else []
    if isinstance(obj, list):
        out: list[str] = []
        for x in obj:
            out.extend(_paths_in(x))
        return out
    return []


def _cl_result(base: str, text: str) -> tuple[list[str], int]:
    """(paths, handles) of a CodeLens-style JSON result; ([], 0) when it is not JSON."""
    try:
        doc = json.loads(text)
    except (ValueError, TypeError):
        return [], 0
    if not isinstance(doc, dict):
        return [], 0
    if base == "cl_impact":
        paths: list[str] = []
        handles = 0
        for k in _IMPACT_KEYS:
            v = doc.get(k)
            if v is None:
                continue
            found = _paths_in(v)
            paths.extend(found)
            handles += len(v) if isinstance(v, list) else 1
        return paths, handles
    for key in (("files", "results") if base == "cl_explore" else ("results", "files")):
        items = doc.get(key)
        if isinstance(items, list):
            return _paths_in(items), len(items)
    return [], 0


def _lookup(sizes: SizeLookup, path: str) -> int | None:
    if sizes is None:
        return None
    v = sizes(path) if callable(sizes) else sizes.get(path)
    return int(v) if isinstance(v, (int, float)) and v >= 0 else None


def _distinct(paths: list[str], cwd: str | None) -> list[str]:
    seen: dict[str, None] = {}
    for p in paths:
        if not p:
            continue
        if cwd and not posixpath.isabs(p) and not (len(p) > 2 and p[1] == ":"):
            p = posixpath.normpath(posixpath.join(cwd, p))
        seen.setdefault(p, None)
        if len(seen) >= MAX_FILES:
            break
    return list(seen)


class RetrievalMeter:
    def __init__(self, session_id: str | None = None):
        self.session_id = session_id
        self.calls = CallPairs()  # id -> (tracked tool, cwd)

    def feed(self, entry: dict, file_sizes: SizeLookup = None, p: Parts | None = None) -> list[ChannelEvent]:
        p = p or parts(entry)
        if p.type == "assistant":
            for b in p.uses:
                base = tracked_tool(b.get("name") or "")
                if base:
                    self.calls.wait(b["id"], (base, entry.get("cwd")))
            return []
        if not p.results or not self.calls.pending:
            return []
        out = []
        for block, tur, tid, (base, cwd) in self.calls.answered(p.results):
            cwd = cwd or entry.get("cwd")
            text = result_text(block)
            served = len(text.encode("utf-8"))
            data: dict[str, Any] = {"tool": base, "bytes_served": served, "bytes_saved": 0,
                                    "files": 0, "handles": 0, "basis": "none", "id": tid}
            if block.get("is_error") is True:
                data["error"] = True
            elif base in DISCOVERY:
                if base in ("Grep", "Glob"):
                    names = tur.get("filenames") if isinstance(tur, dict) else None
                    paths = [p for p in names if isinstance(p, str)] if isinstance(names, list) else []
                    handles = len(paths)
                else:
                    paths, handles = _cl_result(base, text)
                files = _distinct(paths, cwd)
                saved, basis = estimate_saved([_lookup(file_sizes, p) for p in files], handles, served)
                data.update(bytes_saved=saved, files=len(files), handles=handles, basis=basis)
            else:
                data["basis"] = "books_zero"
            out.append(ChannelEvent("retrieval", "tool", entry.get("timestamp"),
                                    entry.get("sessionId") or self.session_id, "transcript", data))
        return out
