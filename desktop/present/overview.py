"""What the Overview tab shows, from OVERVIEW and STATUS dicts (docs/api.md): plain Python, no Qt.

Spend totals with the estimated part apart, stacked daily bars by model or by
project, the dearest sessions, rent and what restarting at the reminders would
have saved, plan-limit meters (when the service has seen them), live sessions
and one sentence per savings channel. Every text is a phrase with its unit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from desktop import fmt

PERIODS = ((1, "Today"), (7, "Last 7 days"), (30, "Last 30 days"))
MAX_STACKS = 6  # bars stack the dearest few; the rest is one "other" layer
OTHER = "other"

LIMIT_NAMES = {"five_hour": "5-hour limit", "seven_day": "Weekly limit", "spend_limit": "Spend limit"}


def project_name(project: str | None) -> str:
    """The project folder's name ("webshop" for /home/dev/webshop)."""
    if not project:
        return "unknown project"
    name = PurePath(str(project)).name
    return name or str(project)


def model_name(model: str | None) -> str:
    """"claude-sonnet-4-5" -> "Sonnet 4.5"; an unknown shape stays as it is."""
    if not model or model == "(none)":
        return "unknown model"
    parts = str(model).split("-")
    if parts[0] == "claude" and len(parts) >= 2:
        family = parts[1].capitalize()
        version = [p for p in parts[2:] if p.isdigit() and len(p) <= 2]
        return f"{family} {'.'.join(version)}".strip()
    return str(model)


@dataclass
class Figure:
    """One headline number: its caption, the value and a sentence on what it means."""
    caption: str
    value: str
    tip: str = ""


def spend_figures(doc: dict | None) -> list[Figure]:
    spend = (doc or {}).get("spend") or {}
    rent = (doc or {}).get("rent") or {}
    est = spend.get("estimated_usd") or 0.0
    figures = [
        Figure("Spent", fmt.usd(spend.get("total_usd")),
               "What the API calls in this period cost, from the tokens Claude Code recorded and the price table "
               "(the same figure as ctxlamp report)."),
        Figure("Measured", fmt.usd(spend.get("measured_usd")),
               "Calls of a model the price table lists by name, priced at its own price."),
        Figure("Estimated", fmt.usd(est) if est else "$0",
               "Calls of a model missing from the price table, priced like the newest model of its family."),
        Figure("Subagents", fmt.usd(spend.get("subagents_usd")), "The part spent by subagents (Task tool)."),
        Figure("Calls", fmt.count(spend.get("calls")), "API calls (one per assistant response)."),
        Figure("Rent on dead weight", fmt.usd(rent.get("rent_usd")),
               "Rent is what calls paid to re-read context a fresh session would not need."),
        Figure("Saved by restarting at reminders", fmt.usd(rent.get("saved_usd")),
               "An estimate: each reminder marks a restart's worth of rent paid; restarting there costs one rebuild "
               "of the useful context instead of the rent that kept accruing."),
    ]
    return figures


def spend_notes(doc: dict | None) -> str:
    """Data-quality remarks in words (unpriced models, estimated prices, undercounted output)."""
    spend = (doc or {}).get("spend") or {}
    notes = []
    est = spend.get("estimated_models") or {}
    if est:
        notes.append("Estimated prices for " + ", ".join(f"{model_name(m)} (priced as {model_name(f)})"
                                                          for m, f in sorted(est.items())) + ".")
    unpriced = spend.get("unpriced_models") or []
    if unpriced:
        notes.append("Not counted (no price known): " + ", ".join(model_name(m) for m in unpriced) + ".")
    ph = spend.get("placeholder_output_calls") or 0
    if ph:
        notes.append(f"{fmt.plural(ph, 'call')} recorded only a placeholder for the output, so their output cost "
                     "is too low.")
    return " ".join(notes)


@dataclass
class Stacks:
    """Daily bars: one layer per model or project, dearest at the bottom."""
    days: list[str] = field(default_factory=list)
    layers: list[tuple[str, list[float]]] = field(default_factory=list)  # (name shown, usd per day)

    @property
    def totals(self) -> list[float]:
        return [sum(layer[1][i] for layer in self.layers) for i in range(len(self.days))]


def daily_stacks(doc: dict | None, by: str = "model") -> Stacks:
    """`by` is "model" or "project"; at most MAX_STACKS layers, the rest summed as "other"."""
    spend = (doc or {}).get("spend") or {}
    days = list(spend.get("days") or [])
    per_day = spend.get("by_day_model" if by == "model" else "by_day_project") or {}
    totals: dict[str, float] = {}
    for row in per_day.values():
        for k, v in row.items():
            totals[k] = totals.get(k, 0.0) + float(v)
    order = sorted(totals, key=lambda k: (-totals[k], k))
    keep = order[:MAX_STACKS] if len(order) <= MAX_STACKS else order[:MAX_STACKS - 1]
    rest = [k for k in order if k not in keep]
    name = model_name if by == "model" else project_name
    layers = [(name(k), [float((per_day.get(d) or {}).get(k, 0.0)) for d in days]) for k in keep]
    if rest:
        layers.append((OTHER, [sum(float((per_day.get(d) or {}).get(k, 0.0)) for k in rest) for d in days]))
    return Stacks(days=days, layers=layers)


@dataclass
class SessionRow:
    session_id: str
    name: str
    spent: str
    calls: str
    last: str
    live: bool
    tip: str


def session_rows(doc: dict | None, now: float | None = None) -> list[SessionRow]:
    rows = []
    for s in (doc or {}).get("sessions") or []:
        sid = str(s.get("session_id") or "")
        sub = s.get("subagents_usd") or 0.0
        tip = f"Session {sid} in {s.get('project') or 'an unknown folder'}"
        if sub:
            tip += f"; subagents spent {fmt.usd(sub)} of it"
        rows.append(SessionRow(session_id=sid, name=f"{project_name(s.get('project'))} · {sid[:8]}",
                               spent=fmt.usd(s.get("usd")), calls=fmt.count(s.get("calls")),
                               last=fmt.when(s.get("last_at"), now), live=bool(s.get("live")),
                               tip=tip + (". Live now: click to open it." if s.get("live")
                                          else ". Click to see it in the Session tab.")))
    return rows


def rent_sentence(doc: dict | None) -> str:
    rent = (doc or {}).get("rent") or {}
    n = rent.get("reminders") or 0
    if not rent.get("segments"):
        return "No session context was carried in this period."
    text = (f"Calls paid {fmt.usd(rent.get('rent_usd'))} of rent to re-read dead weight, over "
            f"{fmt.plural(rent.get('segments') or 0, 'stretch', 'stretches')} of work between restarts.")
    if n:
        text += (f" {fmt.plural(n, 'reminder')} fired; restarting at each would have cost about "
                 f"{fmt.usd(rent.get('rebuild_usd'))} in rebuilds and saved about {fmt.usd(rent.get('saved_usd'))}.")
    else:
        text += " No reminder fired: no session carried a restart's worth of dead weight."
    return text


def channel_headlines(doc: dict | None) -> list[tuple[str, str]]:
    """(channel title, one sentence) for edits, trimming and search, from the report's blocks."""
    ch = (doc or {}).get("channels") or {}
    out = []
    e = ch.get("edit") or {}
    if e:
        text = (f"{fmt.plural(e.get('str_replace_calls') or 0, 'replace edit')} paid "
                f"{fmt.tokens(e.get('str_replace_old_string_tokens') or 0)} output tokens "
                f"({fmt.usd(e.get('str_replace_old_string_usd') or 0)}) re-quoting the old text")
        misses = (e.get("str_replace_misses") or {}).get("total") or 0
        if misses:
            text += f"; {fmt.plural(misses, 'edit')} missed its text"
        if e.get("anchored_calls"):
            text += (f"; {fmt.plural(e['anchored_calls'], 'anchored edit')} avoided "
                     f"{fmt.tokens(e.get('anchored_avoided_output_tokens') or 0)} output tokens")
        out.append(("Edits", text + "."))
    p = ch.get("pinch") or {}
    if p:
        text = (f"Context trimming saved {fmt.tokens(p.get('tokens_saved_total') or 0)} tokens "
                f"({fmt.usd(p.get('saved_usd') or 0)}) on {fmt.count(p.get('pinched_requests') or 0)} of "
                f"{fmt.plural(p.get('requests') or 0, 'request')} ({fmt.percent(p.get('share_pinched') or 0)}).")
        out.append(("Trimming", text))
    r = ch.get("retrieval") or {}
    if r:
        text = (f"{fmt.plural(r.get('calls') or 0, 'search call')} served {fmt.size(r.get('bytes_served') or 0)} "
                f"and spared an estimated {fmt.size(r.get('bytes_saved') or 0)} of whole-file reads.")
        out.append(("Search", text))
    return out


@dataclass
class Meter:
    name: str
    percent: float
    text: str
    tip: str


def limit_meters(status: dict | None, now: float | None = None) -> list[Meter]:
    """Plan-limit meters from status.limits (absent or null: none)."""
    limits = (status or {}).get("limits") or {}
    out = []
    for key, name in LIMIT_NAMES.items():
        m = limits.get(key)
        if not isinstance(m, dict) or m.get("used_percentage") is None:
            continue
        pct = max(0.0, min(100.0, float(m["used_percentage"])))
        text = f"{pct:.0f} % used"
        if m.get("resets_at"):
            text += f", resets {fmt.when(m['resets_at'], now)}"
        tip = f"As Claude Code last reported it ({fmt.when(m.get('seen_at'), now)})."
        out.append(Meter(name=name, percent=pct, text=text, tip=tip))
    return out
