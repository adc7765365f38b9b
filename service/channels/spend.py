"""Spend: what the API calls cost, per day, model, project and session.

Calls are folded by message.id (fallback requestId), keeping the revision with
the highest total tokens (a response is written as one line per content
block, and output_tokens grows along them). `<synthetic>` entries are client
messages, not calls. Subagent calls (sidechains: subagent files and inline
`isSidechain: true`, and the calls a main transcript's `agent_progress` lines carry) are spend, kept apart
from the main chain; a call both in a progress line and in its subagent's file is one call (one key).

A call whose kept output_tokens is <= 1 while its lines carry a non-empty
text, thinking or tool_use block is a "placeholder output" call: the client
wrote only a streaming placeholder, so its output cost is undercounted. Where
every line of such a call also has `stop_reason: null` (the usage was never
final), the collector keeps the texts of its blocks (`placeholder_texts`): the
report counts their tokens and prices them at the model's output rate, an
estimate shown apart from the measured spend.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from service.channels.entries import Parts, is_sidechain, parts, progress_call
from service.engine.prices import call_label, modifier_value

SYNTHETIC = "<synthetic>"

# Fields of one call record (a list, so the cache file stays small and fast). MODEL is the call's label
# (`<model>-fast` for a fast call: booked apart); SPEED and GEO its usage.speed and usage.inference_geo when
# they are not standard (None when they are), for the price lookup.
KEY, TS, MODEL, SIDE, IN, CW5, CW1H, CR, OUT, CONTENT, SPEED, GEO = range(12)


def _has_content(msg: dict) -> bool:
    c = msg.get("content")
    if isinstance(c, str):
        return bool(c.strip())
    if not isinstance(c, list):
        return False
    for b in c:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "tool_use" or (bt == "text" and str(b.get("text") or "").strip()) or \
                (bt == "thinking" and str(b.get("thinking") or "").strip()):
            return True
    return False


def _block_texts(msg: dict) -> list[str]:
    """What the model wrote in a line's blocks: text, thinking, and each tool call's name and input as JSON."""
    c = msg.get("content")
    if isinstance(c, str):
        return [c] if c.strip() else []
    out: list[str] = []
    for b in c if isinstance(c, list) else ():
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and isinstance(b.get("text"), str) and b["text"].strip():
            out.append(b["text"])
        elif bt == "thinking" and isinstance(b.get("thinking"), str) and b["thinking"].strip():
            out.append(b["thinking"])
        elif bt == "tool_use":
            try:
                out.append(str(b.get("name") or "") + orjson.dumps(b.get("input")).decode())
            except TypeError:
                out.append(str(b.get("name") or ""))
    return out


def call_cost(price: Any, inp: int, cw5: int, cw1h: int, cr: int, out: int) -> float:
    """USD of one call; `price` has per-token p_in, p_out, p_r, p_w5, p_w1h.

    A request whose prompt passes the model's long-context threshold pays the
    long-context rates on all of it (Price.for_prompt).
    """
    lc = getattr(price, "long_context", None)
    if lc is not None and inp + cw5 + cw1h + cr > lc.threshold_tokens:
        price = price.for_prompt(inp + cw5 + cw1h + cr)
    return inp * price.p_in + out * price.p_out + cr * price.p_r + cw5 * price.p_w5 + cw1h * price.p_w1h


@dataclass
class SpendCollector:
    """Per-file: the folded calls in order of first appearance and the last cost-state."""

    sidechain_file: bool = False
    calls: dict[str, list] = field(default_factory=dict)
    cost_state: dict | None = None  # {"total_usd", "models", "calls_before"}
    # key -> the messages of a call every line of which so far has stop_reason null and output_tokens <= 1
    # (None once one has not: it is no placeholder); their texts are taken out at the end, for those left
    _unfinished: dict[str, list[dict] | None] = field(default_factory=dict)

    def feed(self, entry: dict, p: Parts | None = None) -> None:
        t = p.type if p is not None else entry.get("type")
        if t == "assistant":
            p = p or parts(entry)
            m, tokens, key = p.message, p.tokens, p.key
            model = m.get("model")
            if model == SYNTHETIC or tokens is None or key is None:
                return
            self._note_unfinished(key, m, tokens[4])
            rec = self.calls.get(key)
            if rec is None:
                u = m.get("usage")
                speed = modifier_value("speed", u.get("speed")) if isinstance(u, dict) else None
                geo = modifier_value("inference_geo", u.get("inference_geo")) if isinstance(u, dict) else None
                self.calls[key] = [key, entry.get("timestamp"), call_label(model, speed) if isinstance(model, str) else None,
                                   self.sidechain_file or is_sidechain(entry), *tokens, _has_content(m), speed, geo]
                return
            if sum(tokens) > sum(rec[IN:OUT + 1]):
                rec[IN:OUT + 1] = tokens
            if not rec[CONTENT] and _has_content(m):
                rec[CONTENT] = True
        elif t == "progress":
            inner = progress_call(entry)
            if inner is not None:
                self.feed(inner)
        elif t == "cost-state":
            total = entry.get("totalCostUSD")
            if isinstance(total, (int, float)):
                mu = entry.get("modelUsage")
                self.cost_state = {"total_usd": float(total),
                                   "models": sorted(mu) if isinstance(mu, dict) else [],
                                   "calls_before": len(self.calls), "usage": model_usage(mu)}


    def _note_unfinished(self, key: str, m: dict, out: int) -> None:
        lines = self._unfinished.get(key, ())
        if lines is None:
            return
        if out > 1 or m.get("stop_reason") is not None:
            self._unfinished[key] = None
        elif lines:
            lines.append(m)
        else:
            self._unfinished[key] = [m]

    def placeholder_texts(self) -> dict[str, list[str]]:
        """key -> what the model wrote, for each placeholder-output call whose every line was unfinished."""
        out: dict[str, list[str]] = {}
        for key, lines in self._unfinished.items():
            if lines and is_placeholder_output(self.calls[key]):
                out[key] = list(dict.fromkeys(text for m in lines for text in _block_texts(m)))
        return out


def count_placeholders(result: dict, count_tokens: Callable[[str], int]) -> None:
    """A scan result's `placeholder_texts` -> `placeholder_tokens` (key -> tokens of what the call wrote), in
    place, by whoever settles the result (settle_tokens)."""
    texts = result.pop("placeholder_texts", None)
    if texts is not None:
        result["placeholder_tokens"] = {key: sum(count_tokens(t) for t in ts) for key, ts in texts.items()}


# modelUsage fields, in the order of a call record's tokens (in, cache write 5m, 1h, cache read, out)
_USAGE_FIELDS = ("inputTokens", "cacheCreationEphemeral5mInputTokens", "cacheCreationEphemeral1hInputTokens",
                 "cacheReadInputTokens", "outputTokens")


def model_usage(mu: Any) -> dict[str, list[int]]:
    """cost-state `modelUsage` -> model -> [in, cw5, cw1h, cr, out] (bad entries left out)."""
    out: dict[str, list[int]] = {}
    if not isinstance(mu, dict):
        return out
    for model, u in mu.items():
        if not isinstance(model, str) or not isinstance(u, dict):
            continue
        vals: list[Any] = [u.get(f) for f in _USAGE_FIELDS]
        if vals[1] is None and vals[2] is None:  # no 5m/1h split: all creation at the 5-minute rate
            vals[1], vals[2] = u.get("cacheCreationInputTokens"), 0
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            out[model] = [int(v) for v in vals]
    return out


def is_placeholder_output(rec: list) -> bool:
    return rec[OUT] <= 1 and bool(rec[CONTENT])
