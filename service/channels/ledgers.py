"""Adapters for savings ledgers kept outside the transcripts (read-only).

- lean-ctx's `edit_metering.json` (all-time counters, `LEAN_CTX_DATA_DIR`);
- a router database's `route_decisions` (`pinch_original_tokens`,
  `pinch_final_tokens`; NULL = pinch off);
- a CodeLens-style `usage.db` (`(tool, repo_id)` rows of calls, bytes served,
  bytes saved; column names vary, so they are matched loosely);
- ctxlamp's native ledger: `<data dir>/ledgers/*.jsonl`, one event a line
  (docs/ledger-format.md); malformed lines are counted and skipped.

SQLite files are opened with `file:…?mode=ro`, so nothing here can write
another tool's data. All-time counters become events through snapshots:
`counter_delta` turns two snapshots into what happened between them.
"""
from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

import orjson

from service.channels.events import ChannelEvent
from service.channels.retrieval import tracked_tool

EDIT_COUNTERS = ("anchored_calls", "anchored_ops", "anchored_avoided_output_tokens", "anchored_conflicts",
                 "str_replace_calls", "str_replace_old_string_tokens", "str_replace_misses")
RETRIEVAL_COUNTERS = ("calls", "bytes_served", "bytes_saved")


# -- helpers ----------------------------------------------------------------

def _count(v: Any) -> int:
    """A counter value: non-negative int; anything else (missing, text, negative) is 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    return max(0, int(v))


def iso_ts(v: Any) -> str | None:
    """ISO-8601 UTC text for an ISO string or epoch seconds/milliseconds; None if unreadable."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        if isinstance(v, (int, float)):
            secs = v / 1000.0 if v > 1e11 else float(v)
            return datetime.fromtimestamp(secs, timezone.utc).isoformat().replace("+00:00", "Z")
        if isinstance(v, str) and v.strip():
            s = v.strip()
            dt = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return None
    return None


def counter_delta(prev: dict[str, int] | None, cur: dict[str, int]) -> dict[str, int]:
    """What happened between two snapshots of monotone counters, per field.

    A counter that went down was reset (file deleted, reinstall): its new
    value is what happened since, so the delta is the new value.
    """
    prev = prev or {}
    out = {}
    for k, v in cur.items():
        p = prev.get(k, 0)
        out[k] = v - p if v >= p else v
    return out


def ro_connect(path: Path | str) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=2.0)
    con.row_factory = sqlite3.Row
    return con


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def _pick(cols: Iterable[str], *candidates: str) -> str | None:
    lower = {c.lower(): c for c in cols}
    for cand in candidates:
        if cand.lower() in lower:
            return lower[cand.lower()]
    return None


# -- lean-ctx edit_metering.json ------------------------------------------------

def lean_ctx_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("LEAN_CTX_DATA_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".lean-ctx") / "edit_metering.json"


def read_lean_ctx(path: Path) -> dict[str, int] | None:
    """The seven counters (missing or partial fields are 0); None when the file is absent or not JSON."""
    from service.ingest.transcript_file import read_small

    try:
        doc = orjson.loads(read_small(path))  # a FIFO or device there is skipped, never waited on
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    return {k: _count(doc.get(k)) for k in EDIT_COUNTERS}


# -- router database: route_decisions -----------------------------------------------

def read_router_db(path: Path) -> dict:
    """Rows of route_decisions as pinch requests.

    Returns {"requests": [(ts, original|None, final|None, model|None, cache_rate|None)…], "error": text|None}.
    A NULL original or final means pinch was off for that request: a request, not a pinch.
    """
    try:
        con = ro_connect(path)
    except sqlite3.Error as exc:
        return {"requests": [], "error": str(exc)}
    try:
        cols = _columns(con, "route_decisions")
        if not cols:
            return {"requests": [], "error": "no route_decisions table"}
        orig = _pick(cols, "pinch_original_tokens")
        final = _pick(cols, "pinch_final_tokens")
        ts = _pick(cols, "ts", "timestamp", "created_at", "decided_at", "time", "at", "created")
        model = _pick(cols, "model", "chosen_model", "selected_model", "routed_model", "winner")
        prompt = _pick(cols, "prompt_tokens", "input_tokens")
        cached = _pick(cols, "cached_tokens", "cache_read_tokens", "prompt_tokens_cached")
        sel = [f'"{c}"' if c else "NULL" for c in (ts, orig, final, model, prompt, cached)]
        rows = con.execute(f"SELECT {', '.join(sel)} FROM route_decisions").fetchall()
    except sqlite3.Error as exc:
        return {"requests": [], "error": str(exc)}
    finally:
        con.close()
    out = []
    for r in rows:
        o = r[1] if isinstance(r[1], (int, float)) else None
        f = r[2] if isinstance(r[2], (int, float)) else None
        rate = None
        if isinstance(r[4], (int, float)) and r[4] > 0 and isinstance(r[5], (int, float)):
            rate = min(1.0, max(0.0, r[5] / r[4]))
        out.append((iso_ts(r[0]), o, f, r[3] if isinstance(r[3], str) else None, rate))
    return {"requests": out, "error": None}


# -- CodeLens-style usage.db ----------------------------------------------------------

def codelens_usage_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    explicit = env.get("CTXLAMP_USAGE_DB")
    return Path(explicit).expanduser() if explicit else Path.home() / ".codelens" / "usage.db"


def read_usage_db(path: Path) -> dict[str, dict[str, int]] | None:
    """{"<tool>\\t<repo_id>": {calls, bytes_served, bytes_saved}} for tracked tools; None when unreadable.

    The table is the one with a `tool` column (preferring one named like
    `usage`); counters are matched by several spellings.
    """
    try:
        con = ro_connect(path)
    except sqlite3.Error:
        return None
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        chosen = None
        for t in sorted(tables, key=lambda n: (0 if "usage" in n.lower() else 1, n)):
            cols = _columns(con, t)
            if _pick(cols, "tool", "tool_name", "name"):
                chosen = (t, cols)
                break
        if chosen is None:
            return None
        t, cols = chosen
        tool = _pick(cols, "tool", "tool_name", "name")
        repo = _pick(cols, "repo_id", "repo", "repository", "repo_path")
        calls = _pick(cols, "calls", "call_count", "count", "n_calls", "num_calls", "invocations")
        served = _pick(cols, "bytes_served", "served_bytes", "bytesServed", "bytes_out", "served")
        saved = _pick(cols, "bytes_saved", "saved_bytes", "bytesSaved", "est_bytes_saved", "saved")
        sel = [f'"{c}"' if c else "NULL" for c in (tool, repo, calls, served, saved)]
        rows = con.execute(f'SELECT {", ".join(sel)} FROM "{t}"').fetchall()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        name = tracked_tool(str(r[0] or ""))
        if name is None:
            continue  # operational tools are not usage
        key = f"{name}\t{r[1] if r[1] is not None else ''}"
        acc = out.setdefault(key, dict.fromkeys(RETRIEVAL_COUNTERS, 0))
        acc["calls"] += _count(r[2])
        acc["bytes_served"] += _count(r[3])
        acc["bytes_saved"] += _count(r[4])
    return out


class SnapshotFile:
    """Snapshots of all-time ledgers kept in one JSON file, appended when counters change.

    `observe` returns the ledger's snapshots so far, for `snapshot_events`.
    """

    def __init__(self, path: Path | None):
        self.path = Path(path) if path else None
        self.doc: dict[str, list] = {}
        self.dirty = False
        if self.path is not None:
            try:
                doc = orjson.loads(self.path.read_bytes())
                self.doc = doc if isinstance(doc, dict) else {}
            except (OSError, orjson.JSONDecodeError):
                pass

    def observe(self, key: str, counters: dict, ts: str) -> list[dict]:
        snaps = self.doc.setdefault(key, [])
        if not snaps or snaps[-1].get("counters") != counters:
            snaps.append({"ts": ts, "counters": counters})
            self.dirty = True
        return snaps

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        from service.client.privdir import write_private
        write_private(self.path, orjson.dumps(self.doc))
        self.dirty = False


def snapshot_events(source: str, snapshots: list[dict]) -> list[ChannelEvent]:
    """Events from a list of {"ts", "counters"} snapshots of one all-time ledger.

    The first snapshot books everything the ledger had counted until then (at
    the time it was first seen); each later one books the difference.
    """
    out: list[ChannelEvent] = []
    prev_edit: dict | None = None
    prev_ret: dict[str, dict] = {}
    for snap in snapshots:
        counters = snap.get("counters") or {}
        if source == "lean-ctx":
            delta = counter_delta(prev_edit, counters)
            prev_edit = counters
            if any(delta.values()):
                out.append(ChannelEvent("edit", "counters", snap.get("ts"), None, source, delta))
        else:
            for key, cur in counters.items():
                delta = counter_delta(prev_ret.get(key), cur)
                prev_ret[key] = cur
                if any(delta.values()):
                    tool, _, repo = key.partition("\t")
                    out.append(ChannelEvent("retrieval", "counters", snap.get("ts"), None, source,
                                            {"tool": tool, "repo_id": repo, **delta}))
    return out


# -- native ledger --------------------------------------------------------------------------

def parse_ledger_line(line: bytes, source: str) -> ChannelEvent | None:
    """One native-ledger line as an event; None when malformed."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    kind, ts = doc.get("kind"), iso_ts(doc.get("ts"))
    if ts is None or not isinstance(doc.get("ts"), str):
        return None
    sid = doc.get("session_id") if isinstance(doc.get("session_id"), str) else None
    if kind == "edit":
        misses = doc.get("str_replace_misses")
        data: dict[str, Any] = {k: _count(doc.get(k)) for k in EDIT_COUNTERS}
        if isinstance(misses, dict):
            nf, amb = _count(misses.get("not_found")), _count(misses.get("ambiguous"))
            data.update(str_replace_misses=nf + amb, str_replace_misses_not_found=nf, str_replace_misses_ambiguous=amb)
        if not any(data.values()):
            return None
        return ChannelEvent("edit", "counters", ts, sid, source, data)
    if kind == "pinch":
        o, f = doc.get("original_tokens"), doc.get("final_tokens")
        if isinstance(o, bool) or isinstance(f, bool) or not isinstance(o, (int, float)) or not isinstance(f, (int, float)):
            return None
        data = {"original_tokens": max(0, int(o)), "final_tokens": max(0, int(f))}
        data["tokens_saved"] = max(0, data["original_tokens"] - data["final_tokens"])
        if isinstance(doc.get("model"), str):
            data["model"] = doc["model"]
        if isinstance(doc.get("cache_rate"), (int, float)) and 0 <= doc["cache_rate"] <= 1:
            data["cache_rate"] = float(doc["cache_rate"])
        return ChannelEvent("pinch", "ledger", ts, sid, source, data)
    if kind == "retrieval":
        tool = doc.get("tool")
        if not isinstance(tool, str) or not tool:
            return None
        calls = doc.get("calls", 1)
        return ChannelEvent("retrieval", "counters", ts, sid, source,
                            {"tool": tool, "calls": _count(calls), "bytes_served": _count(doc.get("bytes_served")),
                             "bytes_saved": _count(doc.get("bytes_saved"))})
    return None


def read_native_ledger(path: Path, max_line: int | None = None) -> dict:
    """{"events": [event dicts], "malformed": n, "lines": n} of one ledger file.

    Read as transcripts are (service/ingest/transcript_file.py): regular files only,
    lines over `max_line` bytes skipped and counted as malformed.
    """
    from service.engine.lines import LineSplitter
    from service.ingest.transcript_file import chunks

    events, malformed, lines = [], 0, 0
    source = f"ledger:{Path(path).name}"
    splitter = LineSplitter() if max_line is None else LineSplitter(max_line)

    def take(line: bytes) -> None:
        nonlocal malformed, lines
        if not line.strip():
            return
        lines += 1
        ev = parse_ledger_line(line, source)
        if ev is None:
            malformed += 1
        else:
            events.append(ev.to_dict())
    try:
        for chunk in chunks(path):
            for line in splitter.feed(chunk):
                take(line)
    except OSError:
        return {"events": [], "malformed": 0, "lines": 0, "error": "unreadable"}
    take(splitter.tail)  # a last line without its newline counts as before
    long = splitter.long_lines + (splitter.skipping > 0)
    return {"events": events, "malformed": malformed + long, "lines": lines + long}
