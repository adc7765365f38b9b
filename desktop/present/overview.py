"""What the Overview tab shows, from OVERVIEW and STATUS dicts (docs/api.md): plain Python, no Qt.

Spend totals with the estimated part apart, stacked daily bars by model or by
project, the dearest sessions, rent and what restarting at the reminders would
have saved, plan-limit meters (when the service has seen them), live sessions
and one sentence per savings channel. Every text is a phrase with its unit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from desktop.present import fmt
from desktop.present.lamp import project_name, session_label
from service.client.words import (OLDER_DEVICE, channel_sentences, compactions_sentence,  # noqa: F401
                                  followed_sentence, model_name, unrecorded_output)  # (model_name: the tabs' model names)

PERIODS = ((1, "Today"), (7, "Last 7 days"), (30, "Last 30 days"))
MAX_STACKS = 6  # bars stack the dearest few; the rest is one "other" layer
OTHER = "other"
NOT_WRITTEN = "not written down (measured)"  # requests Claude Code billed without writing them

LIMIT_NAMES = {"five_hour": "5-hour limit", "seven_day": "Weekly limit", "spend_limit": "Spend limit"}


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
        Figure("Spent", fmt.usd(spend.get("billed_usd", spend.get("total_usd"))), spent_tip(spend)),
        Figure("Measured", fmt.usd(spend.get("measured_usd")),
               "Calls of a model the price table lists by name, priced at its own price."),
        Figure("Estimated", fmt.usd(est) if est else "$0",
               "Calls of a model missing from the price table, priced like the newest model of its family."),
        Figure("Not written down", fmt.usd(spend.get("unwritten_usd") or 0.0),
               "Requests Claude Code billed without writing them to its transcript (compaction summaries), "
               "measured from its own cost record. Measured + Estimated + Not written down = Spent."),
        Figure("Subagents", fmt.usd(spend.get("subagents_usd")), "The part spent by subagents (Task tool)."),
        Figure("Calls", fmt.count(spend.get("calls")), "API calls (one per assistant response)."),
        Figure("Rent", fmt.usd(rent.get("rent_usd")),  # the glossary's short form: the long one wraps here
               "Rent on dead weight: what calls paid to re-read context a fresh session would not need."),
        restart_figure(doc),
    ]
    return figures


def days_title(doc: dict | None) -> str:
    """The daily chart's title, naming the time zone its days are cut in (the report's)."""
    zone = ((doc or {}).get("period") or {}).get("timezone")
    where = "this computer's time zone" if zone in (None, "", "local") else f"days in {zone}"
    return f"Spend per day ({where}, as ctxlamp report counts them)"


def spent_tip(spend: dict) -> str:
    """The headline's parts in words: what was written, what Claude Code billed without writing it, and the
    estimated range that is left out of the figure."""
    written, unwritten = spend.get("total_usd") or 0.0, spend.get("unwritten_usd") or 0.0
    by_line = spend.get("unwritten_statusline_usd") or 0.0
    text = (f"What the API billed in this period (the same figure as ctxlamp report): {fmt.usd(written)} for the "
            f"calls Claude Code wrote down + {fmt.usd(unwritten)} for requests it made without writing them "
            "(compaction summaries), measured from its own cost record")
    if by_line:
        text += f" + {fmt.usd(by_line)} reported by its status line"
    text += "."
    est = spend.get("unwritten_estimated") or {}
    if est.get("compactions"):
        text += (f" Not included: {fmt.plural(est['compactions'], 'compaction')} in sessions without a cost record, "
                 f"estimated at {fmt.usd(est.get('low_usd'))} to {fmt.usd(est.get('high_usd'))}.")
    return text


def unwritten_note(doc: dict | None) -> str:
    """The estimated range for compactions without a cost record, apart from the headline (empty without any)."""
    est = ((doc or {}).get("spend") or {}).get("unwritten_estimated") or {}
    if not est.get("compactions"):
        return ""
    return (f"{fmt.plural(est['compactions'], 'compaction')} in sessions without Claude Code's cost record "
            f"cost an estimated {fmt.usd(est.get('low_usd'))} to {fmt.usd(est.get('high_usd'))}, not in Spent.")


def spend_notes(doc: dict | None) -> str:
    """Data-quality remarks in words (unpriced models, estimated prices, undercounted output)."""
    spend = (doc or {}).get("spend") or {}
    notes = [unwritten_note(doc)] if unwritten_note(doc) else []
    est = spend.get("estimated_models") or {}
    if est:
        notes.append("Estimated prices for " + ", ".join(f"{model_name(m)} (priced as {model_name(f)})"
                                                          for m, f in sorted(est.items())) + ".")
    unpriced = spend.get("unpriced_models") or []
    if unpriced:
        notes.append("Not counted (no price known): " + ", ".join(model_name(m) for m in unpriced) + ".")
    unknown = spend.get("unknown_price_modifiers") or {}
    for value, models in sorted(unknown.items()) if isinstance(unknown, dict) else ():
        names = ", ".join(model_name(m) for m in sorted(models)) if isinstance(models, dict) else ""
        notes.append(f"Priced at standard rates, no price known for {value}: {names}.")
    ph = spend.get("placeholder_output_calls") or 0
    est = spend.get("placeholder_output_estimate_usd") or 0.0
    if ph:
        notes.append(f"{fmt.plural(ph, 'call')} recorded only a placeholder for the output, so their output cost "
                     "is too low" + (f": {unrecorded_output(est)}, not in these figures." if est else "."))
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
    unwritten = spend.get("unwritten_by_day") or {}
    if any(unwritten.values()):  # on top, so the bars add up to Spent (what was billed)
        layers.append((NOT_WRITTEN, [float(unwritten.get(d, 0.0)) for d in days]))
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
        tip = f"In {s.get('project') or 'an unknown folder'} (Claude Code's session id: {sid})"
        if sub:
            tip += f"; subagents spent {fmt.usd(sub)} of it"
        if s.get("unwritten_usd"):
            tip += (f"; {fmt.usd(s['unwritten_usd'])} of it were requests Claude Code made without writing them "
                    "(measured from its cost record)")
        rows.append(SessionRow(session_id=sid, name=session_label(s.get("project"), s.get("started_at"), now),
                               spent=fmt.usd(s.get("billed_usd", s.get("usd"))), calls=fmt.count(s.get("calls")),
                               last=fmt.when(s.get("last_at"), now), live=bool(s.get("live")),
                               tip=tip + (". Live now: click to open it." if s.get("live")
                                          else ". Click to see it in the Session tab.")))
    return rows


def restart_figure(doc: dict | None) -> Figure:
    """What following every notice would have saved (an estimate, docs/measurement.md 14); from a service
    without the schedules, what restarting at the first notice would have saved."""
    rs = (doc or {}).get("restart_savings") or {}
    schedule = rs.get("schedule")
    if isinstance(schedule, dict):
        return Figure("Notices save (est.)", fmt.usd(schedule.get("followed_usd")),
                      "What following every notice would have saved, an estimate per stretch of work: the move "
                      "each notice names, made at the next call, against what the later calls paid for what it "
                      "would have left behind (at the cache-write price where a call missed the cache), less "
                      f"each move's own price. The best schedule in hindsight: {fmt.usd(schedule.get('best_usd'))}; "
                      f"the best single restart: {fmt.usd(rs.get('best_single_usd'))}.")
    return Figure("Restarts save (est.)", fmt.usd(rs.get("first_reminder_usd")),
                  "What restarting at the restart notices would have saved, an estimate per stretch of work: a "
                  "restart with a handoff at its notice, against what the "
                  "later calls paid to re-read what the handoff would have left behind, less one rebuild of the "
                  f"useful context. The best single restart in hindsight: {fmt.usd(rs.get('best_single_usd'))}.")


def restart_sentence(rs: dict) -> str:
    """The reminders' worth against the best restart one could have picked, and what they missed."""
    if not rs.get("segments"):
        return ""
    text = ""
    if followed_sentence(rs.get("schedule")):  # the lead priced following the notices: one figure for them (458)
        text = f" The best single restart in hindsight would have saved {fmt.usd(rs.get('best_single_usd'))}."
    elif rs.get("segments_with_reminders"):
        text = (f" One restart per stretch, at its notice, would have saved about "
                f"{fmt.usd(rs.get('first_reminder_usd'))} (estimate); the best single restart in hindsight, "
                f"{fmt.usd(rs.get('best_single_usd'))}")
        capture = rs.get("capture")
        the = "the notice" if rs["segments_with_reminders"] == 1 else "the notices"
        text += f", so {the} got {fmt.percent(capture, 0)} of it." if capture is not None else "."
    if rs.get("missed_segments"):
        text += (f" {fmt.plural(rs['missed_segments'], 'stretch', 'stretches')} without a notice could have "
                 f"saved {fmt.usd(rs.get('missed_usd'))} by a restart.")
    return text


def rent_sentence(doc: dict | None) -> str:
    rent = (doc or {}).get("rent") or {}
    n = rent.get("reminders") or 0
    if not rent.get("segments"):
        return "No session context was carried in this period."
    text = (f"Calls paid {fmt.usd(rent.get('rent_usd'))} of rent to re-read dead weight, over "
            f"{fmt.plural(rent.get('segments') or 0, 'stretch', 'stretches')} of work between restarts.")
    advised = rent.get("segments_with_reminders") or 0
    if n:
        # the notices the tray gives (one a stretch), not the rent's laps that count restarts' worth of rent
        each = ", once each," if advised != 1 else ","
        text += (f" The restart notice was given in {fmt.plural(advised, 'stretch', 'stretches')}{each} when "
                 f"the rent first reached a restart's cost.")
    else:
        text += " No restart notice: no stretch paid a restart's worth of rent on dead weight."
    rs = (doc or {}).get("restart_savings") or {}
    lead = followed_sentence(rs.get("schedule"))
    return (lead + " " if lead else "") + text + restart_sentence(rs)


def channel_headlines(doc: dict | None) -> list[tuple[str, str]]:
    """(channel title, one sentence) for edits, trimming and search, then Claude Code's own compactions: the
    command line's report says them too."""
    out = channel_sentences((doc or {}).get("channels") or {})
    block = (doc or {}).get("compactions") or {}
    compacted = compactions_sentence(block.get("by_trigger"), block.get("cost_usd"))
    if compacted:
        out.append(("Compactions", compacted))
    return out


@dataclass
class Meter:
    name: str
    percent: float
    text: str
    tip: str


BUDGET_NAMES = (("daily", "Daily budget", "today"), ("monthly", "Monthly budget", "this month"))


def budget_meters(status: dict | None) -> list[Meter]:
    """Budget meters from status.budgets (none without a budget): billed against budget, per day and month."""
    block = (status or {}).get("budgets") or {}
    out = []
    for kind, name, words in BUDGET_NAMES:
        b = block.get(kind)
        if not isinstance(b, dict) or not isinstance(b.get("share"), (int, float)):
            continue
        pct = float(b["share"]) * 100
        out.append(Meter(name=name, percent=max(0.0, min(100.0, pct)),
                         text=f"{fmt.usd(b.get('spent_usd'))} of {fmt.usd(b.get('budget_usd'))} {words} ({pct:.0f} %)",
                         tip=f"What the API billed {words} ({block.get('timezone') or 'local'} days), against the "
                             f"budget in Settings; a notice at {float(block.get('notice_pct') or 80):g} % and 100 %."))
    return out


def budgets_text(block: dict | None) -> str | None:
    """ "budget today $3.20 of $20.00 (16 %); month $120 of $300 (40 %)" for the tray (None: no budget)."""
    parts = []
    for kind, _name, words in BUDGET_NAMES:
        b = (block or {}).get(kind)
        if isinstance(b, dict) and isinstance(b.get("share"), (int, float)):
            parts.append(f"{words.replace('this ', '')} {fmt.usd(b.get('spent_usd'))} of {fmt.usd(b.get('budget_usd'))} "
                         f"({float(b['share']) * 100:.0f} %)")
    return ("Budget " + "; ".join(parts)) if parts else None


def run_out_at(w: dict, now: float | None) -> float | None:
    """When a plan window fills at the current pace (epoch s), if before its reset (and still ahead of `now`,
    when given)."""
    full, resets = fmt.parse_time(w.get("runs_out_at")), fmt.parse_time(w.get("resets_at"))
    if full is None or (now is not None and full <= now) or (resets is not None and full >= resets):
        return None
    return full


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
        full = run_out_at(m, None)  # as last reported: the tip says when that was
        if full is not None:  # the sooner of the two, so the bar's text stays one line
            text += f", full {fmt.when(full, now)} at this pace"
        elif m.get("resets_at"):
            text += f", resets {fmt.when(m['resets_at'], now)}"
        tip = f"As Claude Code last reported it ({fmt.when(m.get('seen_at'), now)})."
        if full is not None and m.get("resets_at"):
            tip += f" At this pace it is full before it resets ({fmt.when(m['resets_at'], now)})."
        if m.get("pace_pct_per_hour"):
            tip += f" Lately it fills by {m['pace_pct_per_hour']:.1f} % an hour."
        out.append(Meter(name=name, percent=pct, text=text, tip=tip))
    return out


@dataclass
class DeviceRow:
    name: str
    spent: str
    calls: str
    last_seen: str
    tip: str


DEVICE_COLUMNS = ("Device", "Spent", "Calls", "Last seen")


def device_rows(sync: dict | None, now: float | None = None) -> list[DeviceRow]:
    """The sync folder's devices (GET /api/v1/sync) over the Overview's days: this one first, each with
    what it spent (billed) and when it last wrote; none when sync is off."""
    from service.client.textsafe import printable

    if not (sync or {}).get("on"):
        return []
    rows = []
    for d in sync.get("devices") or []:  # type: ignore[union-attr]
        name = printable(str(d.get("name") or ""), 60) + (" (this device)" if d.get("this") else "")
        seen = fmt.when(d.get("last_seen"), now)
        tip = (f"Its figures as it last wrote them to the sync folder ({seen}); days in UTC. "
               "A session seen on two devices counts once.")
        if d.get("stale"):
            seen += " (a while ago)"
            tip += " Not seen for a while: its last figures still count."
        if d.get("older"):
            tip += f" {OLDER_DEVICE}"
        rows.append(DeviceRow(name=name, spent=fmt.usd(d.get("total_usd")), calls=fmt.count(d.get("calls")),
                              last_seen=seen, tip=tip))
    return rows


def devices_note(sync: dict | None) -> str:
    """One line per file of the sync folder left out (a sync tool's copy, a torn file), else nothing."""
    from service.client.textsafe import printable

    return "\n".join(f"{printable(str(r.get('file')), 120)}: {printable(str(r.get('reason')), 200)}"
                     for r in (sync or {}).get("skipped") or [])


def first_utc_day(days: int, today: date | None = None) -> str:
    """The first UTC day of the Overview's last `days` days: the devices' figures are kept in UTC days."""
    from datetime import datetime, timedelta, timezone

    today = today or datetime.now(timezone.utc).date()
    return (today - timedelta(days=max(1, days) - 1)).isoformat()


def sync_sentence(answer: dict | None) -> str:
    """What a sync did (POST /api/v1/sync/now): the devices now in the folder, and each file left out."""
    from service.client.textsafe import printable

    devices = [printable(str(d.get("name") or ""), 60) for d in (answer or {}).get("devices") or []]
    text = f"Synced: {fmt.plural(len(devices), 'device')} in the folder ({', '.join(devices) or 'none'})."
    note = devices_note(answer)
    return text + ("\n" + note if note else "")
