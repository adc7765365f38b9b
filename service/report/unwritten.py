"""Requests Claude Code made but did not write as assistant entries (compaction summaries above all).

Claude Code bills them in its own totals, so ctxlamp's spend, summed from the assistant entries,
falls short of them. Two ways to book them, always shown apart from the measured calls:
- measured, where Claude Code's own count is known: the `modelUsage` of the session's last
  `cost-state` entry (tokens per model, cumulative) minus the tokens of the calls the transcript
  holds before it (its subagents' included), priced with ctxlamp's prices (Claude Code's own differ
  for some models). Booked per session and per day (the day of the session's last call before the
  cost-state). Never negative: a model whose difference would be negative books 0 and says so.
- estimated, where no cost-state is written: each compaction (a `compact_boundary`) read the
  prompt before it and wrote the summary after it; its cost lies between that prompt read
  entirely from the cache and written entirely to it (5-minute rate), the summary
  (`postTokens`) paid as output either way.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

from service.channels.spend import CR, CW1H, CW5, IN, KEY, MODEL, OUT, TS, call_cost
from service.engine.prices import split_label


MEASURED_LABEL = "requests Claude Code made but did not write"


def base_cost(price: Any, inp: int, cw5: int, cw1h: int, cr: int, out: int) -> float:
    """USD at the base rates: summed over many requests, the tokens say nothing of any one prompt's
    length, so the long-context rates (per request) cannot apply to them."""
    return inp * price.p_in + out * price.p_out + cr * price.p_r + cw5 * price.p_w5 + cw1h * price.p_w1h


def _price_at(prices: Callable, model: Any, ts: Any) -> tuple[Any, str]:
    at = getattr(prices, "at", None)
    return at(model, ts) if at is not None else prices(model)


def _r(x: float) -> float:
    return round(x, 6)


def measured(rows: list[dict], tally, prices: Callable, day_of: Callable) -> dict:
    """`rows`: {"session_id", "keys" (the calls the cost-state covers), "usage" (model_usage)} per session."""
    by_session: dict[str, dict] = {}
    by_day: dict[str, float] = defaultdict(float)
    total = 0.0
    for row in rows:
        if not row["usage"]:  # a cost-state without modelUsage: nothing to measure
            continue
        ours: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
        last_ts = None
        best = tally.best
        for key in row["keys"]:  # every call of the session before its cost-state: no loop per field
            kept = best.get(key)
            if kept is None:
                continue
            rec = kept[2]
            acc = ours[split_label(rec[MODEL])[0]]  # Claude Code counts a model's fast calls with it
            acc[0] += rec[IN]
            acc[1] += rec[CW5]
            acc[2] += rec[CW1H]
            acc[3] += rec[CR]
            acc[4] += rec[OUT]
            ts = rec[TS]
            if ts is not None and (last_ts is None or ts > last_ts):
                last_ts = ts
        models, usd_sum, negative = {}, 0.0, 0.0
        for model, theirs in row["usage"].items():
            price, _ = _price_at(prices, model, last_ts)  # the rates of the session's last day
            if price is None:
                continue
            diff = [t - o for t, o in zip(theirs, ours.get(model, [0] * 5))]
            usd = base_cost(price, *diff)
            if usd < 0:
                negative += usd
                usd = 0.0
            models[model] = {"tokens": dict(zip(("input", "cache_write_5m", "cache_write_1h", "cache_read",
                                                 "output"), diff)), "usd": _r(usd)}
            usd_sum += usd
        day = day_of(last_ts) if last_ts is not None else None
        by_session[row["session_id"]] = {"usd": _r(usd_sum), "day": day, "by_model": models,
                                         "would_be_negative_usd": _r(negative) if negative else None}
        if day:
            by_day[day] += usd_sum
        total += usd_sum
    return {"label": "measured", "what": MEASURED_LABEL,
            "source": "Claude Code's cost-state modelUsage minus the calls it wrote, priced with ctxlamp's prices",
            "usd": _r(total), "by_day": {k: _r(v) for k, v in sorted(by_day.items())},
            "by_session": dict(sorted(by_session.items()))}


def estimated(compactions: list[dict], prices: Callable, day_of: Callable) -> dict:
    """Compaction pinch events (sessions without a cost-state) as a range of USD."""
    low = high = 0.0
    by_session: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    by_day: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    unpriced = 0
    for ev in compactions:
        d = ev["data"]
        price, _ = _price_at(prices, d.get("model"), ev.get("ts"))
        if price is None:
            unpriced += 1
            continue
        read, summary = int(d.get("original_tokens") or 0), int(d.get("final_tokens") or 0)
        lo = call_cost(price, 0, 0, 0, read, summary)
        hi = call_cost(price, 0, read, 0, 0, summary)
        low, high = low + lo, high + hi
        s = by_session[ev.get("session_id") or "?"]
        s[0], s[1], s[2] = s[0] + lo, s[1] + hi, s[2] + 1
        day = day_of(ev.get("ts"))
        if day:
            by_day[day][0] += lo
            by_day[day][1] += hi
    return {"label": "estimated", "what": "compactions in sessions without a cost-state",
            "source": "compact_boundary: the prompt it read (preTokens) all cache-read .. all cache-write (5m), "
                      "the summary (postTokens) as output",
            "low_usd": _r(low), "high_usd": _r(high), "compactions": sum(int(v[2]) for v in by_session.values()),
            "unpriced_compactions": unpriced,
            "by_day": {k: {"low_usd": _r(v[0]), "high_usd": _r(v[1])} for k, v in sorted(by_day.items())},
            "by_session": {k: {"low_usd": _r(v[0]), "high_usd": _r(v[1]), "compactions": int(v[2])}
                           for k, v in sorted(by_session.items())}}


def cost_state_rows(files: list[dict], tally, in_period: Callable) -> list[dict]:
    """Per main file with a cost-state in the period: its session, the calls the cost-state covers (its
    subagents' included, once each), Claude Code's usage per model, its models and total."""
    sub_keys: dict[str, list[str]] = defaultdict(list)
    for fr in files:
        if fr["subagent"]:
            sub_keys[fr["session_id"]].extend(rec[KEY] for rec in fr["calls"])
    rows = []
    for fr in files:
        cs = fr.get("cost_state")
        if fr["subagent"] or not cs:
            continue
        keys = [rec[KEY] for rec in fr["calls"][:cs["calls_before"]]]
        if not any(in_period(tally.ts_of(k)) for k in keys if k in tally.best):
            continue
        rows.append({"session_id": fr["session_id"], "keys": list(dict.fromkeys(keys + sub_keys[fr["session_id"]])),
                     "usage": cs.get("usage") or {}, "models": cs.get("models") or [], "total_usd": cs["total_usd"]})
    return rows


def _tokens_of(tally, keys: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
    for key in keys:
        kept = tally.best.get(key)
        if kept is None:
            continue
        rec = kept[2]
        acc = out[split_label(rec[MODEL])[0]]
        for i, f in enumerate((IN, CW5, CW1H, CR, OUT)):
            acc[i] += rec[f]
    return out


def _within(ours: dict[str, list[int]], theirs: dict[str, list[int]]) -> bool:
    """Every token count of ours is at most Claude Code's (what it counted on top: requests it did not write)."""
    return all(all(o <= t for o, t in zip(counts, theirs.get(model, [0] * 5))) for model, counts in ours.items())


def explain(row: dict, tally, prices: Callable, remaining_usd: float) -> dict:
    """Why ctxlamp's figure for the calls a cost-state covers differs from Claude Code's total, by what can be
    shown: the tokens it counted against the calls the file holds, and its total against its own tokens at
    ctxlamp's prices. Prices are blamed only when the tokens agree and the USD do not."""
    theirs = row["usage"] or {}
    last = max((tally.ts_of(k) or "" for k in row["keys"] if k in tally.best), default="") or None
    at_ours, unpriced = 0.0, []
    for model, counts in theirs.items():
        price, _ = _price_at(prices, model, last)
        if price is None:
            unpriced.append(model)
            continue
        at_ours += base_cost(price, *counts)
    prices_agree = not unpriced and abs(at_ours - row["total_usd"]) <= max(1e-6, 1e-4 * abs(row["total_usd"]))
    out = {"session_id": row["session_id"], "calls": len(row["keys"]),
           "claude_code_tokens_at_our_prices_usd": _r(at_ours) if not unpriced else None,
           "claude_code_usd": _r(row["total_usd"]), "prices_agree": prices_agree}
    if not theirs:
        return {**out, "kind": "no_usage", "text": "its own cost figure has no token counts: nothing to compare"}
    if abs(remaining_usd) < 1e-5:
        return {**out, "kind": "equal", "text": "equal: ctxlamp's figure plus the requests it did not write is what "
                                                "Claude Code counted"}
    ordered = sorted((k for k in row["keys"] if k in tally.best), key=lambda k: (tally.ts_of(k) or "", k))
    if not _within(_tokens_of(tally, ordered), theirs):
        # its count covers fewer calls than the file holds before it: the latest calls whose tokens fit in it
        k = next((i for i in range(1, len(ordered) + 1) if _within(_tokens_of(tally, ordered[i:]), theirs)),
                 len(ordered))
        since = tally.ts_of(ordered[k]) if k < len(ordered) else None
        return {**out, "kind": "fewer_calls", "covered_calls": len(ordered) - k, "from": since,
                "text": f"its own cost figure counts only the last {len(ordered) - k} of the {len(ordered)} calls before "
                        f"it" + (f" (from {since} on)" if since else "") + ": its count restarted (after /clear, "
                        "or a new session in the same file), so the difference is calls, not prices"}
    if prices_agree or unpriced:
        return {**out, "kind": "unexplained",
                "text": "its tokens priced at ctxlamp's prices give its total, and every call ctxlamp counted is in "
                        "its count: the difference is not explained by what the files show"}
    return {**out, "kind": "prices",
            "text": f"its prices differ: its own tokens at ctxlamp's prices cost ${at_ours:.4f}, it says "
                    f"${row['total_usd']:.4f}"}

