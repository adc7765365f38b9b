"""Totals over a period from scanned files and external ledgers (pure).

`build_summary` is what `ctxlamp report --json` prints (and what the service's
spend endpoint can serve). It takes the per-file results of `scan.py`, the
events of the external ledgers and a price lookup, and never reads a file.

Double counting between a recorder and the transcripts is avoided by
preferring the recorder: lean-ctx's ledger for the anchored counters (it
measures avoided tokens, transcripts cannot), and `usage.db` for the CodeLens
tools it lists. The transcript figures stay visible under `by_source`.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from math import fsum
from typing import Any, Callable, Iterable

from service.channels.events import LABELS
from service.channels.ledgers import iso_ts
from service.channels.pinch import blended_rate, cache_rate
from service.report import unwritten
from service.engine.compactions import TRIGGERS
from service.days import UTC_NAME, ZONE_UTC, DayOf, Zone
from service.report.tally import SpendTally

PLACEHOLDER_DEFINITION = ("a call (folded by message.id) whose kept revision reports output_tokens <= 1 "
                          "while its lines carry a non-empty text, thinking or tool_use block")
PLACEHOLDER_ESTIMATE = ("an estimate, not in any spend figure: for each placeholder-output call whose every line "
                        "has stop_reason null, the o200k tokens of its text, thinking and tool_use blocks, priced "
                        "at the model's output rate, less the output it recorded")
Lookup = Callable[[str], tuple[Any, str]]


def day_of(ts: Any) -> str | None:
    """UTC calendar day (YYYY-MM-DD) of an ISO time."""
    if not isinstance(ts, str) or len(ts) < 10:
        return None
    if ts.endswith("Z"):
        return ts[:10]
    iso = iso_ts(ts)
    return iso[:10] if iso else None


class Period:
    """The days since..until (inclusive), each cut in the zone `day_of` reads times in (UTC by default)."""

    def __init__(self, since: str | None = None, until: str | None = None,
                 day_of: Callable[[Any], str | None] = day_of):
        self.since, self.until, self.day_of = since, until, day_of

    def __contains__(self, ts: Any) -> bool:
        if self.since is None and self.until is None:
            return True
        d = self.day_of(ts)
        if d is None:
            return False
        return (self.since is None or d >= self.since) and (self.until is None or d <= self.until)


def _r(x: float) -> float:
    return round(float(x), 9)


class _Prices:
    """Prices by model (today's rates), and by model and time when the table knows dated changes: a
    PriceTable's `lookup` brings its `lookup_at` along (each call at the rates of its day)."""

    def __init__(self, lookup: Lookup):
        self.lookup = lookup
        self.memo: dict[Any, tuple[Any, str]] = {}
        self.lookup_at: Callable[..., tuple[Any, str]] | None = getattr(
            getattr(lookup, "__self__", None), "lookup_at", None)

    def __call__(self, model: Any) -> tuple[Any, str]:
        hit = self.memo.get(model)
        if hit is None:
            hit = self.memo[model] = self.lookup(model) if isinstance(model, str) and model else (None, "unknown")
        return hit

    def at(self, model: Any, ts: Any, speed: Any = None, geo: Any = None) -> tuple[Any, str]:
        """The price of a call of `model` at time `ts` (ISO text from the transcript; None: today's), at its
        usage `speed` and `geo` (None: standard)."""
        if self.lookup_at is None or not (isinstance(model, str) and model) or (
                ts is None and speed is None and geo is None):
            return self(model)
        return self.lookup_at(model, ts, speed, geo)


def _distinct_events(files: list[dict]) -> Iterable[dict]:
    """Transcript events once each: a tool call or boundary copied into a second file is the same event."""
    seen: set[tuple[str, str]] = set()
    for fr in files:
        for e in fr["events"]:
            eid = e["data"].get("id")
            if eid is not None:
                k = (e["channel"], eid)
                if k in seen:
                    continue
                seen.add(k)
            yield e


def spend_tally(lookup: Lookup, since: str | None = None, until: str | None = None,
                zone: Zone = ZONE_UTC) -> SpendTally:
    """An empty tally for a report over these days (cut in `zone`), to feed files to as they are scanned."""
    days = DayOf(zone)
    period = Period(since, until, days)
    everything = since is None and until is None
    return SpendTally(_Prices(lookup), None if everything else period.__contains__, days)


def build_summary(results: dict[str, dict], lookup: Lookup, *, since: str | None = None, until: str | None = None,
                  external: list[dict] | None = None, router: dict | None = None, lean_ctx_present: bool = False,
                  usage_db_tools: set[str] | None = None, ledger_stats: dict | None = None,
                  source_notes: dict | None = None, tally: SpendTally | None = None,
                  zone: Zone = ZONE_UTC) -> dict:
    """The report. `tally` may already hold some of the files (fed while they were scanned); its days are
    the report's days."""
    tally = tally or spend_tally(lookup, since, until, zone)
    local_day = tally.day_of
    period = Period(since, until, local_day)
    paths = sorted(results)  # the workers' order must not change the report
    files = [results[path] for path in paths]
    external = external or []
    usage_db_tools = usage_db_tools or set()
    notes = source_notes or {}

    for path, fr in zip(paths, files):
        tally.add(path, fr)
    spend = tally.spend()
    spend["days"] = tally.day_tokens()
    covered = unwritten.cost_state_rows(files, tally, period.__contains__)
    cs_rows, cost_state_diff = _cost_state_comparison(covered, tally)
    events = period_events(files, external, period)
    edit, pinch, retrieval = channel_totals(events, tally, tally.main_requests, period, router=router,
                                            lean_ctx_present=lean_ctx_present, usage_db_tools=usage_db_tools,
                                            notes=notes)
    booked, guessed = _unwritten_requests(covered, files, events, tally, local_day)
    remaining = [r["claude_code_usd"] - r["ours_usd"] - booked["by_session"].get(r["session_id"], {}).get("usd", 0.0)
                 for r in cs_rows]
    left_by_session = {r["session_id"]: left for r, left in zip(cs_rows, remaining)}
    explained = sorted((unwritten.explain(found, tally, tally.prices, left_by_session[found["session_id"]])
                        for found in covered if found["session_id"] in left_by_session),
                       key=lambda e: e["session_id"])
    billed = billed_block(spend, booked, guessed, since, until)
    compactions = compactions_block(events, tally.prices, local_day)
    return {
        "period": {"since": since, "until": until, "timezone": getattr(local_day, "name", UTC_NAME)},
        "spend": _spend_section(spend, booked, guessed, billed),  # first: what a user looks for in --json
        "edit": edit,
        "pinch": pinch,
        "retrieval": retrieval,
        "compactions": compactions,
        "data_quality": {**_data_quality(spend, tally, files, cs_rows, cost_state_diff, remaining, explained,
                                         ledger_stats or {}),
                         "malformed_files": malformed_files(paths, files)},
    }


def _cost_state_comparison(covered: list[dict], tally: SpendTally) -> tuple[list[dict], float | None]:
    """Claude Code's own cost-state against ours for the same calls: a row per session, and the overall difference (%)."""
    prices = tally.prices
    cs_rows = []
    for found in covered:
        if any(prices(m)[0] is None for m in found["models"]):
            continue
        priced = [tally.usd_of(k) for k in found["keys"]]
        ours = [u for u in priced if u is not None]
        if len(ours) < len(priced):
            continue
        theirs = found["total_usd"]
        row = {"session_id": found["session_id"], "ours_usd": _r(sum(ours)), "claude_code_usd": _r(theirs)}
        row["diff_pct"] = (round((sum(ours) - theirs) / theirs * 100, 3) or 0.0) if theirs else None
        cs_rows.append(row)
    cs_rows.sort(key=lambda r: r["session_id"])  # files arrive in pool order: the report must not depend on it
    ours_sum = sum(r["ours_usd"] for r in cs_rows)
    theirs_sum = sum(r["claude_code_usd"] for r in cs_rows)
    cost_state_diff = (round((ours_sum - theirs_sum) / theirs_sum * 100, 3) or 0.0) if theirs_sum else None
    return cs_rows, cost_state_diff


def _unwritten_requests(covered: list[dict], files: list[dict], events: list[dict],
                        tally: SpendTally, local_day: Callable[[Any], str | None]) -> tuple[dict, dict]:
    """Requests Claude Code made but did not write: measured from cost-state, else estimated."""
    prices = tally.prices
    booked = unwritten.measured(covered, tally, prices, local_day)
    with_cost_state = {fr["session_id"] for fr in files if fr.get("cost_state")}
    guessed = unwritten.estimated([e for e in events if e["channel"] == "pinch" and e["kind"] == "compaction"
                                   and e["source"] == "transcript" and e.get("session_id") not in with_cost_state],
                                  prices, local_day)
    return booked, guessed


def compaction_events(events: list[dict]) -> list[dict]:
    """Claude Code's compactions among the period's events (the transcripts' boundaries)."""
    return [e for e in events if e["channel"] == "pinch" and e["kind"] == "compaction" and e["source"] == "transcript"]


def started_by(event: dict) -> str:
    """manual, auto or idle (a scan cached before `started_by` was kept: the boundary's trigger, auto)."""
    by = event["data"].get("started_by")
    return by if by in TRIGGERS else "auto"


def priced_by_trigger(compactions: list[dict], prices: Callable, local_day: Callable[[Any], str | None]) -> dict:
    """Each trigger's compactions priced by the report's one estimate (unwritten.estimated)."""
    return {by: unwritten.estimated([e for e in compactions if started_by(e) == by], prices, local_day)
            for by in TRIGGERS}


def compactions_block(events: list[dict], prices: Callable, local_day: Callable[[Any], str | None]) -> dict:
    """Claude Code's compactions in the period by who started them (manual, auto, idle; a precomputed summary
    counts as idle), each priced by the report's one estimate of compaction requests (unwritten.estimated):
    the range from the prompt read all from the cache to all written, `cost_usd` its middle."""
    mine = compaction_events(events)
    by_trigger: dict[str, int] = dict.fromkeys(TRIGGERS, 0)
    by_session: dict[str, dict[str, int]] = {}
    for e in mine:
        by = started_by(e)
        by_trigger[by] += 1
        row = by_session.setdefault(str(e.get("session_id") or "?"), dict.fromkeys(TRIGGERS, 0))
        row[by] += 1
    priced = priced_by_trigger(mine, prices, local_day)
    low, high = fsum(p["low_usd"] for p in priced.values()), fsum(p["high_usd"] for p in priced.values())
    return {"label": "estimated", "by_trigger": by_trigger, "count": len(mine),
            "cost_usd": _r((low + high) / 2), "cost_range_usd": {"low": _r(low), "high": _r(high)},
            "cost_usd_by_trigger": {by: _r((p["low_usd"] + p["high_usd"]) / 2) for by, p in priced.items()},
            "unpriced": sum(p["unpriced_compactions"] for p in priced.values()),
            "by_session": dict(sorted(by_session.items())),
            "source": "transcripts: compact_boundary compactMetadata.trigger; idle when precomputed or followed by "
                      "Claude Code's 'Compacted while idle' note; priced as spend.unwritten.estimated prices a "
                      "compaction, cost_usd the middle of that range"}


def _spend_section(spend: dict, booked: dict, guessed: dict, billed: dict) -> dict:
    return {
        "label": LABELS["spend"],
        "source": "transcripts: assistant usage folded by message.id (fallback requestId), highest total kept; "
                  "priced with resources/prices.json",
        "total_usd": _r(spend["total_usd"]), "main_usd": _r(spend["main_usd"]),
        "subagents_usd": _r(spend["subagents_usd"]), "calls": spend["calls"],
        "by_model": {k: _r(v) for k, v in spend["by_model"].items()},
        "by_day": {k: _r(v) for k, v in spend["by_day"].items()},
        "days": spend["days"],  # per day: models and token columns (the text report's daily table)
        "by_project": {k: _r(v) for k, v in spend["by_project"].items()},
        "by_session": {k: {**v, "usd": _r(v["usd"]), "subagents_usd": _r(v["subagents_usd"])}
                       for k, v in spend["by_session"].items()},
        "unwritten": {"measured": booked, "estimated": guessed},
        "billed_usd": billed["usd"],
        "billed": billed,
    }


MALFORMED_FILES_SHOWN = 10


def malformed_files(paths: list[str], files: list[dict]) -> list[dict]:
    """The transcripts holding lines that are not JSON objects, most first (at most MALFORMED_FILES_SHOWN):
    a count a user can act on names its files."""
    found = [(int(fr.get("malformed") or 0), path) for path, fr in zip(paths, files) if fr.get("malformed")]
    return [{"path": path, "lines": n} for n, path in sorted(found, key=lambda f: (-f[0], f[1]))][:MALFORMED_FILES_SHOWN]


def _data_quality(spend: dict, tally: SpendTally, files: list[dict], cs_rows: list[dict],
                  cost_state_diff: float | None, remaining: list[float], explained: list[dict],
                  ledger_stats: dict) -> dict:
    malformed_transcript = sum(fr.get("malformed", 0) for fr in files)
    return {
        "unpriced_models": sorted(spend["unpriced"]),
        "unpriced": spend["unpriced"],
        "family_priced_models": dict(sorted(tally.family_priced.items())),
        **_unknown_modifiers(tally),
        "placeholder_output_calls": tally.placeholder,
        "placeholder_output_definition": PLACEHOLDER_DEFINITION,
        "placeholder_output_estimate_usd": _r(fsum(tally.placeholder_estimate)),
        "placeholder_output_estimate_note": PLACEHOLDER_ESTIMATE,
        "cost_state_diff_pct": cost_state_diff,
        "cost_state_sessions": cs_rows,
        "cost_state_note": "ours = the session's calls before its last cost-state entry plus its subagents' calls; "
                           "Claude Code's totalCostUSD also includes requests it does not write as assistant "
                           "entries (compaction summaries), so ours can be lower",
        "cost_state_remaining_usd": _r(sum(remaining)) if remaining else None,
        "cost_state_remaining_note": "Claude Code's totalCostUSD minus ours minus the requests it did not write "
                                     "(measured); cost_state_explained says per session what the files show "
                                     "of it",
        "cost_state_explained": explained,
        "long_lines": sum(fr.get("long_lines", 0) for fr in files),
        "malformed_lines": {"transcripts": malformed_transcript,
                            "ledgers": int(ledger_stats.get("malformed", 0))},
        "files": len(files),
        "ledger_files": int(ledger_stats.get("files", 0)),
    }


def _unknown_modifiers(tally: SpendTally) -> dict:
    """The calls whose usage named a speed or inference geography the price table has no figure for (priced at
    standard), by that value and model; the key is left out when there are none."""
    if not tally.unknown_modifiers:
        return {}
    out: dict[str, dict[str, int]] = {}
    for (name, model), calls in sorted(tally.unknown_modifiers.items()):
        out.setdefault(name, {})[model] = calls
    return {"unknown_price_modifiers": out}


def _in_days(day: str | None, since: str | None, until: str | None) -> bool:
    return day is not None and (since is None or day >= since) and (until is None or day <= until)


def billed_block(spend: dict, booked: dict, guessed: dict, since: str | None, until: str | None) -> dict:
    """What was billed: the written calls plus the requests Claude Code made and did not write, measured from
    its cost-state (booked on the day of the session's last call before it, so only those days in the period
    count). The estimated range for compactions without a cost-state stays apart: it is no measurement."""
    unwritten_days = {d: v for d, v in booked["by_day"].items() if _in_days(d, since, until)}
    written = float(spend["total_usd"])
    unwritten_usd = fsum(unwritten_days.values())
    by_day = {d: _r(v) for d, v in spend["by_day"].items()}
    for d, v in unwritten_days.items():
        by_day[d] = _r(fsum([by_day.get(d, 0.0), v]))
    by_session = {}
    for sid, row in spend["by_session"].items():
        extra = booked["by_session"].get(sid) or {}
        more = extra.get("usd", 0.0) if _in_days(extra.get("day"), since, until) else 0.0
        by_session[sid] = _r(fsum([row["usd"], more]))
    return {"usd": _r(fsum([written, unwritten_usd])), "written_usd": _r(written),
            "unwritten_measured_usd": _r(unwritten_usd),
            "unwritten_estimated": {"low_usd": guessed["low_usd"], "high_usd": guessed["high_usd"],
                                    "compactions": guessed["compactions"]},
            "by_day": dict(sorted(by_day.items())), "by_session": dict(sorted(by_session.items())),
            "what": "the written calls + the requests Claude Code made and did not write (measured from its "
                    "cost-state); compactions without a cost-state are an estimated range, shown apart"}


def period_events(files: list[dict], external: list[dict], period: Period) -> list[dict]:
    """The transcript events (once each) and ledger events in the period."""
    events = [e for e in _distinct_events(files) if e.get("ts") in period]
    events += [e for e in external if e.get("ts") in period]
    return events


def channel_totals(events: list[dict], tally: SpendTally, main_requests: int, period: Period, *,
                   router: dict | None = None, lean_ctx_present: bool = False, usage_db_tools: set[str] | None = None,
                   notes: dict | None = None) -> tuple[dict, dict, dict]:
    """The edit, pinch and retrieval blocks of the report for these events (the team push calls it per day)."""
    notes = notes or {}
    edit = _edit_totals(events, tally.prices, lean_ctx_present, notes)
    pinch = _pinch_totals(events, tally.prices, tally.session_tokens, tally.session_models(), main_requests,
                          router, period, notes)
    retrieval = _retrieval_totals(events, usage_db_tools or set(), notes)
    return edit, pinch, retrieval


def _edit_totals(events: list[dict], prices: Lookup, lean_ctx_present: bool, notes: dict) -> dict:
    keys = ("str_replace_calls", "str_replace_ops", "str_replace_old_string_tokens", "str_replace_old_string_usd",
            "not_found", "ambiguous", "other_errors", "anchored_calls", "anchored_ops",
            "anchored_avoided_output_tokens", "anchored_conflicts")
    by_source: dict[str, dict] = defaultdict(lambda: dict.fromkeys(keys, 0))
    unpriced_tokens = 0
    for e in events:
        if e["channel"] != "edit":
            continue
        d, kind = e["data"], e["kind"]
        src = "transcript" if e["source"] == "transcript" else e["source"]
        acc = by_source[src]
        if kind == "str_replace":
            acc["str_replace_calls"] += 1
            acc["str_replace_ops"] += d.get("ops", 1)
            acc["str_replace_old_string_tokens"] += d.get("old_string_tokens", 0)
            price, _ = prices(d.get("model"))
            if price is None:
                unpriced_tokens += d.get("old_string_tokens", 0)
            else:
                acc["str_replace_old_string_usd"] += d.get("old_string_tokens", 0) * price.p_out
        elif kind == "str_replace_miss":
            acc["ambiguous" if d.get("miss") == "ambiguous" else "not_found"] += 1
        elif kind == "str_replace_error":
            acc["other_errors"] += 1
        elif kind == "anchored":
            acc["anchored_calls"] += 1
            acc["anchored_ops"] += d.get("ops", 1)
            acc["anchored_avoided_output_tokens"] += d.get("avoided_output_tokens", 0)
        elif kind == "anchored_conflict":
            acc["anchored_conflicts"] += 1
        elif kind == "counters":
            for k in ("str_replace_calls", "str_replace_old_string_tokens", "anchored_calls", "anchored_ops",
                      "anchored_avoided_output_tokens", "anchored_conflicts"):
                acc[k] += d.get(k, 0)
            if "str_replace_misses_not_found" in d:
                acc["not_found"] += d["str_replace_misses_not_found"]
                acc["ambiguous"] += d["str_replace_misses_ambiguous"]
            else:  # lean-ctx's misses are old_string-not-found responses
                acc["not_found"] += d.get("str_replace_misses", 0)
    anchored_from = [s for s in by_source if s != "transcript"] if lean_ctx_present else list(by_source)
    tot = dict.fromkeys(keys, 0)
    for src, acc in by_source.items():
        for k in keys:
            if k.startswith("anchored") and src not in anchored_from:
                continue
            tot[k] += acc[k]
    return {
        "label": LABELS["edit"],
        "str_replace_calls": tot["str_replace_calls"],
        "str_replace_ops": tot["str_replace_ops"],
        "str_replace_old_string_tokens": tot["str_replace_old_string_tokens"],
        "str_replace_old_string_usd": _r(tot["str_replace_old_string_usd"]),
        "str_replace_old_string_tokens_unpriced": unpriced_tokens,
        "str_replace_misses": {"not_found": tot["not_found"], "ambiguous": tot["ambiguous"],
                               "total": tot["not_found"] + tot["ambiguous"]},
        "str_replace_other_errors": tot["other_errors"],
        "anchored_calls": tot["anchored_calls"],
        "anchored_ops": tot["anchored_ops"],
        "anchored_avoided_output_tokens": tot["anchored_avoided_output_tokens"],
        "anchored_conflicts": tot["anchored_conflicts"],
        "by_source": {k: {**v, "str_replace_old_string_usd": _r(v["str_replace_old_string_usd"])}
                      for k, v in sorted(by_source.items())},
        "sources": {
            "str_replace": "transcripts: Edit/MultiEdit tool_use + tool_result (old_string tokens: o200k_base x 1.0, "
                           "priced at the model's output price)" + notes.get("edit_extra", ""),
            "anchored": ("lean-ctx edit_metering.json snapshots" + notes.get("lean_ctx", "")) if lean_ctx_present
                        else "transcripts: tool names ending in ctx_patch (avoided tokens not visible there: 0)",
        },
    }


def _pinch_totals(events: list[dict], prices: Lookup, session_tokens: dict, session_model: dict,
                  main_requests: int, router: dict | None, period: Period, notes: dict) -> dict:
    all_in = sum(t[0] for t in session_tokens.values())
    all_cw = sum(t[1] for t in session_tokens.values())
    all_cr = sum(t[2] for t in session_tokens.values())
    fallback_rate = cache_rate(all_in, all_cw, all_cr)
    saved_list: list[int] = []
    by_kind: dict[str, dict] = defaultdict(lambda: {"events": 0, "tokens_saved": 0, "saved_usd": 0.0})
    usd_total = 0.0
    unpriced_saved = 0
    transcript_pinched = 0

    def book(kind: str, saved: int, model: Any, rate: float) -> None:
        nonlocal usd_total, unpriced_saved
        if saved <= 0:
            return
        saved_list.append(saved)
        b = by_kind[kind]
        b["events"] += 1
        b["tokens_saved"] += saved
        price, _ = prices(model)
        if price is None:
            unpriced_saved += saved
            return
        usd = saved * blended_rate(rate, price.p_in, getattr(price, "p_r", None))
        b["saved_usd"] += usd
        usd_total += usd

    for e in events:
        if e["channel"] != "pinch":
            continue
        d = e["data"]
        sid = e.get("session_id")
        if e["source"] == "transcript":
            st = session_tokens.get(sid) or [0, 0, 0]
            rate = cache_rate(*st)
            model = d.get("model") or session_model.get(sid)
            if d.get("tokens_saved", 0) > 0:
                transcript_pinched += 1
            book(e["kind"], d.get("tokens_saved", 0), model, rate)
        else:
            rate = d.get("cache_rate", fallback_rate)
            book("ledger", d.get("tokens_saved", 0), d.get("model"), rate)

    router_requests = router_pinched = 0
    for ts, orig, final, model, rate in (router or {}).get("requests", []):
        if ts not in period:
            continue
        router_requests += 1
        if orig is None or final is None:
            continue
        saved = max(0, int(orig) - int(final))
        if saved > 0:
            router_pinched += 1
        book("router", saved, model, fallback_rate if rate is None else rate)

    requests = main_requests + router_requests
    pinched = transcript_pinched + router_pinched
    return {
        "label": LABELS["pinch"],
        "events": len(saved_list),
        "requests": requests,
        "pinched_requests": pinched,
        "share_pinched": round(pinched / requests, 6) if requests else 0.0,
        "tokens_saved_total": sum(saved_list),
        "tokens_saved_median": int(statistics.median(saved_list)) if saved_list else 0,
        "saved_usd": _r(usd_total),
        "tokens_saved_unpriced": unpriced_saved,
        "by_kind": {k: {**v, "saved_usd": _r(v["saved_usd"])} for k, v in sorted(by_kind.items())},
        "sources": {
            "compaction": "transcripts: compact_boundary preTokens -> postTokens (or the next call's "
                          "input+cache_creation+cache_read)",
            "context_edit": "transcripts: totalStock fell between consecutive main-chain calls of one model, no boundary",
            "router": notes.get("router", "no router database configured"),
            "ledger": "native ledger pinch events",
            "saved_usd": "saved * ((1 - cache_rate) * p_in + cache_rate * coalesce(p_cache_read, p_in)); "
                         "cache_rate = the session's measured cr / (in + cw + cr); ledger and router rows without "
                         "a rate use all transcripts' measured share",
            "share_pinched": "pinched requests / requests (main-chain calls and router rows in the period)",
        },
    }


def _retrieval_totals(events: list[dict], usage_db_tools: set[str], notes: dict) -> dict:
    by_source: dict[str, dict[str, dict]] = defaultdict(dict)
    for e in events:
        if e["channel"] != "retrieval":
            continue
        d = e["data"]
        tool = d.get("tool") or "?"
        src = e["source"]
        acc = by_source[src].setdefault(tool, {"calls": 0, "bytes_served": 0, "bytes_saved": 0})
        if e["kind"] == "tool":
            acc["calls"] += 1
            acc["bytes_served"] += d.get("bytes_served", 0)
            acc["bytes_saved"] += d.get("bytes_saved", 0)
            basis = d.get("basis", "none")
            acc[f"basis_{basis}"] = acc.get(f"basis_{basis}", 0) + 1
        else:
            for k in ("calls", "bytes_served", "bytes_saved"):
                acc[k] += d.get(k, 0)
    tools: dict[str, dict] = {}
    for src, per_tool in by_source.items():
        for tool, acc in per_tool.items():
            if src == "transcript" and tool in usage_db_tools:
                continue  # usage.db recorded these very calls
            t = tools.setdefault(tool, {"calls": 0, "bytes_served": 0, "bytes_saved": 0, "sources": []})
            for k in ("calls", "bytes_served", "bytes_saved"):
                t[k] += acc[k]
            t["sources"].append(src)
    return {
        "label": LABELS["retrieval"],
        "tools": dict(sorted(tools.items())),
        "calls": sum(t["calls"] for t in tools.values()),
        "bytes_served": sum(t["bytes_served"] for t in tools.values()),
        "bytes_saved": sum(t["bytes_saved"] for t in tools.values()),
        "by_source": {s: dict(sorted(v.items())) for s, v in sorted(by_source.items())},
        "sources": {
            "transcript": "Grep/Glob and cl_* tool calls: bytes served = UTF-8 bytes of the tool_result text; "
                          "saved = max(0, sizes of <= 50 distinct result files (from disk at ingestion) - served), "
                          "else max(0, handles * 4096 - served)",
            "usage-db": notes.get("usage_db", "no usage.db found"),
            "note": "estimated: a counterfactual (the agent would have read the result files whole)",
        },
    }
