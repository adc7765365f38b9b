"""Pinch channel: context taken out of a request.

From transcripts, per session and on the main chain only:
- a compaction: `compact_boundary` `compactMetadata.preTokens` -> `postTokens`,
  or, when `postTokens` is absent, the next main-chain call's totalStock; who started it
  (`started_by`: manual, auto or idle, service/engine/compactions.py) is the boundary's trigger, made
  idle by a precomputed summary or by the idle note Claude Code writes after the summary;
- a client context edit: totalStock falls between two consecutive main-chain
  calls of the same model with no boundary between them.
Counts are what the API billed (input + cache writes + cache reads), so the
fixed overhead (system prompt, tool definitions) is inside them.

Pricing (`saved_usd`) uses the blended rate `saved * ((1 - share) * p_in + share * p_r)` with the session's
measured cache-read share; it is computed at aggregation time, when the
session's share is known.
"""
from __future__ import annotations

import statistics
from typing import Iterable

from service.channels.entries import Parts, is_sidechain, parts
from service.channels.events import ChannelEvent
from service.engine.compactions import boundary_trigger, is_idle_note

SYNTHETIC = "<synthetic>"


def blended_rate(cache_rate: float, p_in: float, p_cached: float | None) -> float:
    """USD per token: (1 - cache_rate) * p_in + cache_rate * coalesce(p_cached, p_in)."""
    cached = p_in if p_cached is None else p_cached
    return (1.0 - cache_rate) * p_in + cache_rate * cached


def saved_usd(tokens_saved: int, cache_rate: float, p_in: float, p_cached: float | None) -> float:
    return tokens_saved * blended_rate(cache_rate, p_in, p_cached)


def cache_rate(inp: int, cw: int, cr: int) -> float:
    """The measured cache-read share cr / (in + cw + cr); 0 when nothing was sent."""
    total = inp + cw + cr
    return cr / total if total else 0.0


def pinch_event(original: float, final: float, *, ts, session_id, source, kind, **extra) -> ChannelEvent:
    original, final = max(0, int(original)), max(0, int(final))
    data = {"original_tokens": original, "final_tokens": final, "tokens_saved": max(0, original - final)}
    data.update(extra)
    return ChannelEvent("pinch", kind, ts, session_id, source, data)


def summarize(saved: Iterable[int], requests: int) -> dict:
    """share pinched, median and total saved over pinched events (saved > 0)."""
    pinched = [s for s in saved if s > 0]
    return {
        "events": len(pinched),
        "requests": requests,
        "share_pinched": (len(pinched) / requests) if requests else 0.0,
        "tokens_saved_total": sum(pinched),
        "tokens_saved_median": int(statistics.median(pinched)) if pinched else 0,
    }


class PinchMeter:
    """One session's main chain: compactions, context edits, request count, cache share."""

    def __init__(self, session_id: str | None = None):
        self.session_id = session_id
        self.requests = 0
        self.tokens_in = self.tokens_cw = self.tokens_cr = 0
        self._seen: set[str] = set()
        self._prev_stock: int | None = None
        self._prev_model: str | None = None
        self._boundary = False
        self._pending: tuple[int, str | None, str | None] | None = None  # (preTokens, ts, trigger)
        self._pending_id: str | None = None
        self._pending_by: str = "auto"  # who started the pending compaction
        # the data of the compaction emitted last, until a call comes: an idle note after it makes it idle
        # (the emitted event's own dict, so the note marks the event the scan already holds)
        self._last_compaction: dict | None = None

    @property
    def cache_rate(self) -> float:
        return cache_rate(self.tokens_in, self.tokens_cw, self.tokens_cr)

    def feed(self, entry: dict, p: Parts | None = None) -> list[ChannelEvent]:
        t = p.type if p is not None else entry.get("type")
        if t == "system" and entry.get("subtype") == "compact_boundary":
            return self._boundary_seen(entry)
        if t == "system" and is_idle_note(entry):
            self._idle_note()
            return []
        if t != "assistant" or is_sidechain(entry):
            return []
        p = p or parts(entry)
        tokens, key = p.tokens, p.key
        model = p.message.get("model")
        if model == SYNTHETIC or tokens is None or key is None or key in self._seen:
            return []
        self._seen.add(key)
        self._last_compaction = None
        self.requests += 1
        inp, cw, cr = tokens[0], tokens[1] + tokens[2], tokens[3]
        self.tokens_in += inp
        self.tokens_cw += cw
        self.tokens_cr += cr
        stock = inp + cw + cr  # what the request carried
        sid = entry.get("sessionId") or self.session_id
        out: list[ChannelEvent] = []
        if self._pending is not None:
            pre, _bts, trigger = self._pending
            out.append(pinch_event(pre, stock, ts=entry.get("timestamp"), session_id=sid, source="transcript",
                                   kind="compaction", trigger=trigger, started_by=self._pending_by,
                                   final_from="next_call", model=model, id=self._pending_id))
            self._pending = None
        elif (self._prev_stock is not None and not self._boundary and stock < self._prev_stock
              and model == self._prev_model):
            out.append(pinch_event(self._prev_stock, stock, ts=entry.get("timestamp"), session_id=sid,
                                   source="transcript", kind="context_edit", model=model, id=key))
        self._prev_stock, self._prev_model, self._boundary = stock, model, False
        return out

    def _boundary_seen(self, entry: dict) -> list[ChannelEvent]:
        meta = entry["compactMetadata"] if isinstance(entry.get("compactMetadata"), dict) else {}
        self._boundary = True
        pre = meta.get("preTokens")
        if not isinstance(pre, (int, float)):
            return []  # a boundary without a size: a reset, nothing measurable
        post = meta.get("postTokens")
        trigger = meta.get("trigger")
        by = boundary_trigger(meta)
        self._last_compaction = None
        if isinstance(post, (int, float)):
            ev = pinch_event(pre, post, ts=entry.get("timestamp"), session_id=entry.get("sessionId") or self.session_id,
                             source="transcript", kind="compaction", trigger=trigger, started_by=by,
                             final_from="postTokens", model=self._prev_model, id=entry.get("uuid"))
            self._last_compaction = ev.data
            return [ev]
        self._pending = (int(pre), entry.get("timestamp"), trigger)
        self._pending_id, self._pending_by = entry.get("uuid"), by
        return []

    def _idle_note(self) -> None:
        """Claude Code's note that the compaction just written ran while the user was idle."""
        if self._last_compaction is not None:
            self._last_compaction["started_by"] = "idle"
        elif self._pending is not None:
            self._pending_by = "idle"
