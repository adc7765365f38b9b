"""The savings channels in words: counter names, units, totals rows and how each is measured.

The API speaks in field names (`kind:str_replace`, `bytes_saved`); the window
shows phrases with units. The CSV export keeps the field names (for scripts).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from desktop.present import fmt

TITLES = {"edit": "Edits", "pinch": "Trimming", "retrieval": "Search"}

# counter -> (phrase, unit); unit is "count", "tokens" or "bytes"
COUNTERS = {
    "events": ("events", "count"),
    "kind:str_replace": ("replace edits", "count"),
    "kind:str_replace_miss": ("edits that missed their text", "count"),
    "kind:str_replace_error": ("edits that failed", "count"),
    "kind:anchored": ("anchored edits", "count"),
    "kind:anchored_conflict": ("anchored edits in conflict", "count"),
    "kind:compaction": ("compactions", "count"),
    "kind:context_edit": ("context edits", "count"),
    "kind:tool": ("search calls", "count"),
    "ops": ("edit operations", "count"),
    "old_string_tokens": ("old text re-quoted (tokens)", "tokens"),
    "avoided_output_tokens": ("output avoided (tokens)", "tokens"),
    "original_tokens": ("context before trimming (tokens)", "tokens"),
    "final_tokens": ("context after trimming (tokens)", "tokens"),
    "tokens_saved": ("tokens saved", "tokens"),
    "bytes_served": ("bytes served", "bytes"),
    "bytes_saved": ("bytes spared (estimate)", "bytes"),
    "files": ("result files", "count"),
    "handles": ("result handles", "count"),
}

METHOD = {
    "edit": "Measured from the transcripts: each replace edit repeats the old text as output tokens, priced at "
            "the model's output price.",
    "pinch": "Measured from the transcripts: compactions and context edits shrink the context re-sent with every "
             "later request; the saving is priced at the session's own cache-read share.",
    "retrieval": "Estimated: search results are compared with reading the matching files whole.",
}

# what an empty chart says: why it is empty, and what fills it
EMPTY = {
    "edit": "No edits in this period: the replace edits Claude Code makes in your sessions fill this chart "
            "as their transcripts are written.",
    "pinch": "Nothing trimmed in this period: a compaction or a context edit in a session fills this chart.",
    "retrieval": "No searches in this period: each call Claude Code makes to ctxlamp's history search (added by "
                 "`ctxlamp install`) fills this chart.",
}


def humanize(key: str) -> str:
    """A field name the table above does not know, made readable ("kind:x_y" -> "x y")."""
    return key.split(":", 1)[-1].replace("_", " ")


def counter_words(key: str) -> str:
    return COUNTERS.get(key, (humanize(key), "count"))[0]


def counter_unit(key: str) -> str:
    return COUNTERS.get(key, (key, "count"))[1]


def _value(unit: str, v) -> str:
    return {"usd": fmt.usd, "tokens": fmt.tokens, "bytes": fmt.size, "pct": fmt.percent}.get(unit, fmt.count)(v)


def totals_rows(name: str, totals: dict | None) -> list[tuple[str, str]]:
    """(phrase, value) rows of a channel's report block over the shown period."""
    t = totals or {}
    if not t:
        return []
    if name == "edit":
        misses = t.get("str_replace_misses") or {}
        spec = [("Replace edits", t.get("str_replace_calls"), "count"),
                ("Edit operations in them", t.get("str_replace_ops"), "count"),
                ("Old text re-quoted (tokens)", t.get("str_replace_old_string_tokens"), "tokens"),
                ("What re-quoting cost", t.get("str_replace_old_string_usd"), "usd"),
                ("Edits whose old text was not found", misses.get("not_found"), "count"),
                ("Edits whose old text matched twice", misses.get("ambiguous"), "count"),
                ("Edits that failed otherwise", t.get("str_replace_other_errors"), "count"),
                ("Anchored edits", t.get("anchored_calls"), "count"),
                ("Output avoided by anchored edits (tokens)", t.get("anchored_avoided_output_tokens"), "tokens"),
                ("Anchored edits in conflict", t.get("anchored_conflicts"), "count")]
    elif name == "pinch":
        spec = [("Requests", t.get("requests"), "count"),
                ("Requests sent with a trimmed context", t.get("pinched_requests"), "count"),
                ("Share of requests trimmed", t.get("share_pinched"), "pct"),
                ("Tokens saved", t.get("tokens_saved_total"), "tokens"),
                ("Tokens saved, typical trim", t.get("tokens_saved_median"), "tokens"),
                ("What the trims saved", t.get("saved_usd"), "usd")]
        for kind, k in sorted((t.get("by_kind") or {}).items()):
            spec.append((f"Saved by {counter_words('kind:' + kind)} ({fmt.plural(k.get('events') or 0, 'time')})",
                         k.get("saved_usd"), "usd"))
    elif name == "retrieval":
        spec = [("Search calls", t.get("calls"), "count"),
                ("Bytes served to the agent", t.get("bytes_served"), "bytes"),
                ("Bytes spared (estimate)", t.get("bytes_saved"), "bytes")]
        for tool, k in sorted((t.get("tools") or {}).items()):
            spec.append((f"{tool}: {fmt.plural(k.get('calls') or 0, 'call')}, served {fmt.size(k.get('bytes_served'))}"
                         ", spared", k.get("bytes_saved"), "bytes"))
    else:
        spec = [(humanize(k), v, "count") for k, v in t.items() if isinstance(v, (int, float))]
    return [(phrase, _value(unit, v)) for phrase, v, unit in spec if v is not None]


# ---------- channel tabs ----------

@dataclass
class ChannelView:
    label: str = "estimated"
    counters: list[str] = field(default_factory=list)
    counter: str | None = None  # the one drawn
    xs: list[float] = field(default_factory=list)  # bucket starts, epoch seconds
    heights: list[float] = field(default_factory=list)
    width_s: float = 86400.0
    totals: list[tuple[str, str]] = field(default_factory=list)
    sources: str = ""
    empty: str = "No data for this channel yet."  # shown when nothing is drawn
    span: tuple[float, float] = (0.0, 0.0)  # the time axis's range (epoch seconds): the period, drawn or not
    period: str = "the shown period"  # the days (or hours) the bars and the totals stand for, in words


def channel_counters(channel: dict | None) -> list[str]:
    names: list[str] = []
    for b in (channel or {}).get("buckets") or []:
        for k, v in b.items():
            if k != "start" and isinstance(v, (int, float)) and not isinstance(v, bool) and k not in names:
                names.append(k)
    return names


# the counter a channel's chart shows first: the one its totals table starts with (the Edits bar counted every
# edit event, misses too, above a table of replace edits)
FIRST_COUNTER = {"edit": "kind:str_replace", "retrieval": "kind:tool"}


def period_words(channel: dict | None, hourly: bool = False) -> str:
    """"14 Nov – 29 Nov" (local days), or with hours for hourly buckets: what "over the period" names."""
    from datetime import datetime

    since, until = fmt.parse_time((channel or {}).get("since")), fmt.parse_time((channel or {}).get("until"))
    if since is None or until is None:
        return "the shown period"
    until = min(until, time.time())  # a period asked up to a later moment still ends now
    shape = "%-d %b %H:%M" if hourly else "%-d %b"
    first, last = datetime.fromtimestamp(since).strftime(shape), datetime.fromtimestamp(until).strftime(shape)
    return first if first == last else f"{first} – {last}"


def _span(channel: dict, xs: list[float], width: float) -> tuple[float, float]:
    """The days (or hours) the chart stands for: its buckets', else the period asked, else the last 30 days."""
    if xs:  # bars are drawn at their bucket's middle: the axis runs from the first bucket's start to the last's end
        return min(xs) - width / 2, max(xs) + width / 2
    since, until = fmt.parse_time(channel.get("since")), fmt.parse_time(channel.get("until"))
    if since is not None and until is not None and until > since:
        return since, until
    end = time.time()
    return end - 30 * 86400.0, end


def channel_view(channel: dict | None, counter: str | None = None) -> ChannelView:
    if not channel:
        return ChannelView(label="no data", empty="No data: the service has not answered for this channel.",
                           span=_span({}, [], 86400.0))
    counters = channel_counters(channel)
    first = FIRST_COUNTER.get(str(channel.get("channel") or ""))
    counter = counter if counter in counters else (first if first in counters else
                                                   (counters[0] if counters else None))
    width = 3600.0 if channel.get("bucket") == "hour" else 86400.0
    xs, hs = [], []
    now = time.time()
    for b in channel.get("buckets") or []:
        t = fmt.parse_time(b.get("start"))
        if t is None or t > now:  # a bucket not begun yet (a period asked up to tomorrow): not drawn
            continue
        xs.append(t + width / 2)
        hs.append(float(b.get(counter) or 0.0) if counter else 0.0)
    name = str(channel.get("channel") or "")
    totals = totals_rows(name, channel.get("totals"))
    src = METHOD.get(name, "")
    return ChannelView(label=str(channel.get("label") or "estimated"), counters=counters, counter=counter, xs=xs,
                       heights=hs,
                       width_s=width, totals=totals, sources=src, empty=EMPTY.get(name, ChannelView.empty),
                       span=_span(channel, xs, width), period=period_words(channel, width < 86400.0))


def channel_csv(channel: dict | None) -> str:
    """CSV export of a channel: one row per bucket, one column per counter."""
    import csv
    import io

    counters = channel_counters(channel)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["start", *counters, "label"])
    label = (channel or {}).get("label") or ""
    for b in (channel or {}).get("buckets") or []:
        w.writerow([b.get("start"), *[b.get(c, "") for c in counters], label])
    return out.getvalue()
