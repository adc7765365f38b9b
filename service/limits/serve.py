"""The service's side of the status line: POST /api/v1/statusline and GET /api/v1/limits.

The POST keeps what Claude Code told the command (through the same field filter the command
used) and answers with what the line needs: the session's lamp, the last turn's share of the
5-hour window, the limits last seen and the format template. It runs on the API thread and
only reads the registry under its lock: the main loop is never waited on.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from service.statusline.reading import parse, to_epoch

if TYPE_CHECKING:
    from service.api.reads import ServiceView
    from service.client.payloads import Snapshot

SESSION_FIELDS = ("session_id", "lamp", "dhat", "x", "xSweet", "bill_cycle_usd", "laps", "calls", "turns", "segment",
                  "advice", "cache")


def answer(service: ServiceView, body: dict[str, Any]) -> dict[str, Any]:
    reading = parse(body)
    sid = reading.get("session_id")
    snap: Snapshot | None = service.snapshot_of(sid) if sid else None
    fields: dict[str, Any] = dict(snap) if snap else {}
    book = service.readings
    if book.record(sid, reading, fields.get("turns"), fields.get("calls")):
        # the event's pct_per_usd sums every session's turns: not on the status line's clock
        threading.Thread(target=lambda: service.hub.publish("limits", book.limits()), name="limits-event",
                         daemon=True).start()
    turns = book.turn_costs(sid) if sid else []
    cfg = service.cfg.get("statusline") or {}
    expires = to_epoch((fields.get("cache") or {}).get("expires_at"))
    cold = (reading.get("prompt_cache") or {}).get("warm") is False or (expires is not None and expires <= time.time())
    return {
        "handoff": cold and snap is not None and _handoff_ready(service, snap),
        "known": snap is not None,
        "session": {k: fields.get(k) for k in SESSION_FIELDS} if snap else None,
        "limits": book.limits(epoch=True),
        "turn": turns[-1] if turns else None,
        "cache_expires_at": expires,
        "format": cfg.get("format"),
    }


def _handoff_ready(service: ServiceView, snap: Snapshot) -> bool:
    """Whether the session left a handoff before its break (asked only of a cold cache: one store read)."""
    from service.client.breaks import handoff_before_break

    try:
        rows = service.reads.handoffs(project=snap.get("project"), undelivered=True)
    except Exception:  # the database cannot answer: the line says both prices, which is never wrong
        return False
    return handoff_before_break(list(rows), snap.get("session_id"), snap.get("updated_at")) is not None


def limits_view(service, session_id: str | None) -> dict:
    """GET /api/v1/limits: the latest limits, the account's readings and, with ?session=, that session's
    readings and per-turn costs."""
    from service.limits.book import iso

    book = service.readings

    def dated(points):
        return [{**p, "at": iso(p["at"])} for p in points]

    out = {"limits": book.limits(), "account": dated(book.account_readings())}
    if session_id:
        out["session"] = {"session_id": session_id, "readings": dated(book.session_readings(session_id)),
                          "turns": book.turn_costs(session_id),
                          "cache_misses": priced_misses(book.cache_misses(session_id), service.snapshot_of(session_id))}
    return out


def priced_misses(misses: dict | None, snap) -> dict | None:
    """A session's cache misses as Claude Code counted them, with what their rewrites cost at the session's
    write price now (the snapshot's whole-prompt rewrite per token; an estimate) when it is live."""
    from service.limits.book import iso

    if misses is None:
        return None
    out = {**misses, "at": iso(misses.get("at"))}
    cache = (snap or {}).get("cache") or {}
    usd, tokens = cache.get("cold_rewrite_usd"), cache.get("cold_rewrite_tokens")
    if isinstance(misses.get("miss_recache_tokens"), int) and isinstance(usd, (int, float)) and tokens:
        out["rewrote_usd"] = round(misses["miss_recache_tokens"] * usd / tokens, 6)
        out["rewrote_label"] = "estimated"
    return out


def book_misses(doc: dict, service) -> dict:
    """Add to a report the cache misses Claude Code's status line counted for its sessions (display only)."""
    book = service.readings
    rows = {}
    for sid in (doc.get("spend") or {}).get("by_session") or {}:
        found = priced_misses(book.cache_misses(sid), service.snapshot_of(sid))
        if found and found.get("misses"):
            rows[sid] = found
    by_cause: dict[str, int] = {}
    for row in rows.values():
        for cause, n in (row.get("miss_causes") or {}).items():
            by_cause[cause] = by_cause.get(cause, 0) + n
    priced = [r["rewrote_usd"] for r in rows.values() if "rewrote_usd" in r]
    doc["cache_misses"] = {
        "label": "measured", "misses": sum(r["misses"] for r in rows.values()), "by_cause": dict(sorted(by_cause.items())),
        "rewrote_usd": round(sum(priced), 6) if priced else None, "rewrote_label": "estimated",
        "by_session": rows,
        "source": "Claude Code's status line prompt_cache (misses, miss_causes, miss_recache_tokens), the latest "
                  "reading of each session; rewrote_usd prices the rewritten tokens of live sessions at their "
                  "write price"}
    return doc


def book_unwritten(doc: dict, book, whole_history: bool) -> dict:
    """Add to a report what Claude Code's status line says it spent beyond the written calls, for sessions
    with no cost-state yet (those have the measured booking). Its figure is cumulative for the session and
    priced with Claude Code's own prices, so it is used only over the whole history, and labelled so."""
    spend = doc.get("spend") or {}
    unwritten = spend.get("unwritten")
    if not isinstance(unwritten, dict):
        return doc
    known = set((unwritten.get("measured") or {}).get("by_session") or {})
    known |= {r.get("session_id") for r in (doc.get("data_quality") or {}).get("cost_state_sessions") or []}
    rows, total = {}, 0.0
    for sid, ours in (spend.get("by_session") or {}).items() if whole_history else ():
        if sid in known:
            continue
        costs = [p["cost_usd"] for p in book.session_readings(sid) if "cost_usd" in p]
        if not costs:
            continue
        diff = costs[-1] - float(ours.get("usd") or 0.0)
        rows[sid] = {"usd": round(max(0.0, diff), 6), "claude_code_usd": costs[-1],
                     "would_be_negative_usd": round(diff, 6) if diff < 0 else None}
        total += max(0.0, diff)
    unwritten["statusline"] = {
        "label": "measured", "what": "requests Claude Code made but did not write",
        "source": "the status line's cost.total_cost_usd minus the written calls, for sessions without a cost-state "
                  "(Claude Code's prices, whole history only)",
        "usd": round(total, 6), "by_session": rows}
    billed = spend.get("billed")
    if isinstance(billed, dict) and total:  # the headline counts it too, labelled as its own part
        billed["unwritten_statusline_usd"] = round(total, 6)
        billed["usd"] = spend["billed_usd"] = round(float(billed["usd"]) + total, 9)
        per_session = billed.get("by_session") or {}
        for sid, row in rows.items():
            if sid in per_session:
                per_session[sid] = round(per_session[sid] + row["usd"], 9)
    return doc
