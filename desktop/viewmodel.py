"""What the tray and the window show, computed from API dicts (pure Python, no Qt).

Widgets stay thin: they call these functions and draw the result. Every input
is a dict as docs/api.md defines it (SNAPSHOT, SERIES, CHANNEL, PROFILE); any
field may be missing or null, and the functions must still return something
sensible (the service is being built in parallel and a snapshot can be gated).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath

from desktop import channel_words, fmt
from desktop.overview_model import model_name

# Lamp colours: fill colours chosen to read on light and dark panels (the icon adds an outline).
LAMP_FILL = {
    "white": "#f5f5f0",
    "green": "#2fbf4a",
    "amber": "#ffb300",
    "red": "#e5322d",
    "grey": "#8c8c8c",
}
LAMP_COLOURS = tuple(LAMP_FILL)
# Band fills for the cost-curve chart (translucent versions of the lamp colours).
BAND_RGBA = {
    "white": (200, 200, 200, 55),
    "green": (47, 191, 74, 55),
    "amber": (255, 179, 0, 65),
    "red": (229, 50, 45, 60),
}
STATE_WORDS = {
    "no_transcript": "no transcript",
    "insufficient_data": "not enough data yet",
    "warming": "warming up",
    "good": "good",
    "warning": "past the sweet spot",
    "critical": "restart pays",
    "service_down": "service down",
}


# ---------- lamp and tooltip ----------

def lamp_colour(snapshot: dict | None) -> str:
    """The icon colour for a snapshot; grey when there is none (service down)."""
    if not snapshot:
        return "grey"
    colour = ((snapshot.get("lamp") or {}).get("colour") or "white").lower()
    return colour if colour in LAMP_FILL and colour != "grey" else "white"


def lamp_state(snapshot: dict | None) -> str:
    if not snapshot:
        return "service_down"
    return (snapshot.get("lamp") or {}).get("state") or "no_transcript"


def session_name(snapshot: dict) -> str:
    """A short human name: the project folder and the first characters of the session id."""
    sid = str(snapshot.get("session_id") or "?")
    project = snapshot.get("project") or ""
    folder = PurePath(project).name if project else ""
    return f"{folder} · {sid[:8]}" if folder else sid[:8]


def tooltip_text(snapshot: dict | None, now: float, down_reason: str | None = None) -> str:
    """The tray tooltip. Computed when shown (the cache countdown is not ticked)."""
    if not snapshot:
        lines = ["ctxlamp — service down"]
        lines.append(down_reason or "The ctxlamp service is not running.")
        return "\n".join(lines)
    lamp = snapshot.get("lamp") or {}
    state = lamp_state(snapshot)
    lines = [f"ctxlamp — {STATE_WORDS.get(state, state)} ({lamp_colour(snapshot)})",
             session_name(snapshot)]
    x, xs = snapshot.get("x"), snapshot.get("xSweet")
    if lamp.get("reason") and xs is None:  # the engine's words only where the figures below are missing
        lines.append(str(lamp["reason"]))
    if xs is not None:
        lines.append(f"context {fmt.number(x)}x its useful part; sweet spot at {fmt.number(xs)}x")
        dhat = snapshot.get("dhat")
        if dhat is not None:
            d = float(dhat)
            if d >= 0:
                lines.append(f"{math.ceil(d)} calls to the sweet spot")
            else:
                lines.append(f"{math.ceil(-d)} calls past the sweet spot")
    elif x is not None:
        lines.append(f"context {fmt.number(x)}x its useful part")
    rent, br = snapshot.get("bill_cycle_usd"), snapshot.get("br")
    lines.append(f"rent so far {fmt.usd(rent)} · burn {fmt.usd(br)}/h")
    cache = snapshot.get("cache") or {}
    exp = fmt.parse_time(cache.get("expires_at"))
    cold = cache.get("cold_rewrite_usd")
    if exp is not None:
        left = exp - now
        if left > 0:
            # a clock time stays true without ticking; the menu shows the live countdown when opened
            clock = datetime.fromtimestamp(exp).strftime("%H:%M:%S")
            lines.append(f"cache warm until {clock}; after that the next turn re-writes {fmt.usd(cold)}")
        else:
            lines.append(f"cache expired: the next turn re-writes {fmt.usd(cold)}")
    return "\n".join(lines)


def pick_followed(sessions: dict[str, dict], service_followed: str | None, chosen: str | None) -> str | None:
    """Which session the lamp shows: the user's choice while live, else the service's, else the newest."""
    if chosen and chosen in sessions:
        return chosen
    if service_followed and service_followed in sessions:
        return service_followed
    if not sessions:
        return None
    return max(sessions, key=lambda sid: fmt.parse_time(sessions[sid].get("updated_at")) or 0.0)


def menu_sessions(sessions: dict[str, dict], followed: str | None) -> list[tuple[str, str, bool]]:
    """(session_id, label, checked) for the tray menu, newest first."""
    order = sorted(sessions, key=lambda sid: fmt.parse_time(sessions[sid].get("updated_at")) or 0.0, reverse=True)
    out = []
    for sid in order:
        snap = sessions[sid]
        out.append((sid, f"{session_name(snap)} — {lamp_colour(snap)}", sid == followed))
    return out


# ---------- reminder ----------

def reminder_message(reminder: dict, snapshot: dict | None = None) -> tuple[str, str]:
    """Title and body of the restart reminder, stamped with its lap.

    A reminder counts rent already paid; the lamp shows the position against the
    sweet spot. When the lamp is not amber or red yet, the body says why both hold.
    """
    lap = int(reminder.get("lap") or 1)
    worth = "a restart's" if lap == 1 else f"{lap} restarts'"
    title = f"ctxlamp: you have paid {worth} worth of rent"
    parts = []
    restart = reminder.get("restart_usd")
    rent = reminder.get("rent_usd")
    pp = reminder.get("payback_calls")
    if rent is not None:
        parts.append(f"Rent on dead weight so far: {fmt.usd(rent)}.")
    if restart is not None:
        parts.append(f"A restart costs {fmt.usd(restart)} to rebuild the useful context")
        if pp is not None:
            parts[-1] += f" and pays for itself after {max(1, math.ceil(float(pp)))} calls."
        else:
            parts[-1] += "."
    estimate = restart_now_note(reminder.get("restart_now"))
    if estimate:
        parts.append(estimate)
    colour = lamp_colour(snapshot) if snapshot else None
    if colour in ("white", "green"):
        parts.append(early_reminder_note(snapshot))
    parts.append("Prepare a handoff, then start a fresh session.")
    return title, " ".join(parts)


def restart_now_note(estimate: dict | None) -> str:
    """What a restart now would save over the calls this user's sessions usually run after a reminder."""
    if not isinstance(estimate, dict) or estimate.get("calls_ahead") is None or estimate.get("saving_usd") is None:
        return ""
    ahead = max(0, round(float(estimate["calls_ahead"])))
    saving = float(estimate["saving_usd"])
    runs = f"{fmt.plural(ahead, 'more call')}, as your sessions usually do after a reminder"
    if saving <= 0:
        return f"Estimate: over {runs}, a restart now would not earn its rebuild back."
    text = f"Estimate: if this session runs on for {runs}, a restart now saves about {fmt.usd(saving)}"
    payback = estimate.get("payback_calls")
    if payback is not None:
        text += f"; it pays for itself after {fmt.plural(max(1, math.ceil(float(payback))), 'call')}"
    return text + "."


def early_reminder_note(snapshot: dict | None) -> str:
    """Why a reminder can come while the lamp is still white or green."""
    dhat = (snapshot or {}).get("dhat")
    when = ""
    if dhat is not None and float(dhat) > 0:
        when = f" in about {math.ceil(float(dhat))} calls"
    return (f"The lamp is still {lamp_colour(snapshot)}: it judges the cost of the next calls against the sweet "
            f"spot (amber{when or ' later'}); this reminder counts the rent already paid on dead weight, which has "
            "reached a restart's price.")


# ---------- cost curve (Session tab) ----------

@dataclass
class CurveView:
    us: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    bands: list[tuple[float, float, str]] = field(default_factory=list)  # (u0, u1, colour)
    point: tuple[float, float] | None = None
    u_max: float = 3.0
    note: str = ""
    reminders: list[tuple[float, float, int]] = field(default_factory=list)  # (u, A/A*, lap) on the curve


def reminder_points(series: dict | None, us: list[float], ys: list[float], segment) -> list[tuple[float, float, int]]:
    """Where the current segment's reminders fired, as points on the cost curve (u at their call)."""
    if not series or not us:
        return []
    u_at = {c.get("call"): c.get("u") for c in series.get("calls") or []
            if c.get("segment") == segment and c.get("u") is not None}
    out = []
    for r in series.get("reminders") or []:
        if r.get("segment", segment) != segment:
            continue
        u = u_at.get(r.get("call"))
        if u is not None:
            out.append((float(u), interpolate(us, ys, float(u)), int(r.get("lap") or 0)))
    return out


def curve_view(snapshot: dict | None, series: dict | None = None) -> CurveView:
    """A(u)/A* with lamp bands, the current point and the reminders, from snapshot.skeleton."""
    if not snapshot:
        return CurveView(note="No session.")
    sk = snapshot.get("skeleton")
    if not sk or not sk.get("curve"):
        state = lamp_state(snapshot)
        return CurveView(note=f"No cost curve yet ({STATE_WORDS.get(state, state)}).")
    pts = sorted((float(u), float(a)) for u, a in sk["curve"])
    us = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    u_max = us[-1] if us else 3.0
    um = float(sk.get("u_mirror") or 0.0)
    ua = float(sk.get("u_amber") or 1.0)
    uc = float(sk.get("u_crit") or 2.0)
    bands = [(0.0, um, "white"), (um, ua, "green"), (ua, uc, "amber"), (uc, max(u_max, uc), "red")]
    u = snapshot.get("u")
    point = None
    if u is not None:
        point = (float(u), interpolate(us, ys, float(u)))
    return CurveView(us=us, ys=ys, bands=[b for b in bands if b[1] > b[0]], point=point, u_max=u_max,
                     reminders=reminder_points(series, us, ys, snapshot.get("segment")))


def interpolate(xs: list[float], ys: list[float], x: float) -> float:
    if not xs:
        return float("nan")
    if x <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            t = (x - xs[i - 1]) / ((xs[i] - xs[i - 1]) or 1.0)
            return ys[i - 1] + t * (ys[i] - ys[i - 1])
    return ys[-1]


# ---------- series (Session tab, lower charts) ----------

@dataclass
class SeriesView:
    calls: list[float] = field(default_factory=list)
    total_stock: list[float] = field(default_factory=list)
    L: list[float] = field(default_factory=list)
    B: list[float] = field(default_factory=list)
    rent: list[float] = field(default_factory=list)
    reminder_calls: list[tuple[float, int]] = field(default_factory=list)  # (call, lap)
    reset_calls: list[float] = field(default_factory=list)
    rewind_calls: list[float] = field(default_factory=list)  # between call n and n+1: drawn at n + 0.5


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def series_view(series: dict | None) -> SeriesView:
    if not series:
        return SeriesView()
    calls = series.get("calls") or []
    v = SeriesView(
        calls=[float(c.get("call", i + 1)) for i, c in enumerate(calls)],
        total_stock=[_num(c.get("totalStock")) for c in calls],
        L=[_num(c.get("L")) for c in calls],
        B=[_num(c.get("B")) for c in calls],
        rent=[_num(c.get("bill_cycle_usd")) for c in calls],
    )
    v.reminder_calls = [(float(r.get("call", 0)), int(r.get("lap") or 0)) for r in series.get("reminders") or []]
    v.reset_calls = [float(r.get("call", 0)) for r in series.get("resets") or []]
    v.rewind_calls = [float(r.get("call", 0)) + 0.5 for r in series.get("rewinds") or []]
    return v


# ---------- Files tab ----------

WHY_WORDS = {None: "", "outside_cwd": "outside the project", "missing": "file is gone", "excluded": "excluded"}


@dataclass
class FileRow:
    path: str
    tokens: int
    selected: bool
    why: str

    @property
    def label(self) -> str:
        extra = f" — {self.why}" if self.why else ""
        return f"{self.path}  ({fmt.tokens(self.tokens)} tokens){extra}"


def file_rows(series: dict | None) -> list[FileRow]:
    rows = []
    for p in (series or {}).get("paths") or []:
        why = p.get("why")
        rows.append(FileRow(path=str(p.get("path")), tokens=int(p.get("tokens") or 0),
                            selected=bool(p.get("selected")), why=WHY_WORDS.get(why, str(why or ""))))
    rows.sort(key=lambda r: (-r.tokens, r.path))
    return rows


def selection_change(path: str, ticked: bool) -> dict:
    """The body of POST /sessions/{id}/selection for one tick or untick."""
    return {"exclude": [] if ticked else [path], "include": [path] if ticked else []}


# ---------- channel tabs ----------

@dataclass
class ChannelView:
    label: str = "estimated"
    counters: list[str] = field(default_factory=list)
    xs: list[float] = field(default_factory=list)  # bucket starts, epoch seconds
    heights: list[float] = field(default_factory=list)
    width_s: float = 86400.0
    totals: list[tuple[str, str]] = field(default_factory=list)
    sources: str = ""


def channel_counters(channel: dict | None) -> list[str]:
    names: list[str] = []
    for b in (channel or {}).get("buckets") or []:
        for k, v in b.items():
            if k != "start" and isinstance(v, (int, float)) and not isinstance(v, bool) and k not in names:
                names.append(k)
    return names


def channel_view(channel: dict | None, counter: str | None = None) -> ChannelView:
    if not channel:
        return ChannelView(label="no data")
    counters = channel_counters(channel)
    counter = counter if counter in counters else (counters[0] if counters else None)
    width = 3600.0 if channel.get("bucket") == "hour" else 86400.0
    xs, hs = [], []
    for b in channel.get("buckets") or []:
        t = fmt.parse_time(b.get("start"))
        if t is None:
            continue
        xs.append(t + width / 2)
        hs.append(float(b.get(counter) or 0.0) if counter else 0.0)
    name = str(channel.get("channel") or "")
    totals = channel_words.totals_rows(name, channel.get("totals"))
    src = channel_words.METHOD.get(name, "")
    return ChannelView(label=str(channel.get("label") or "estimated"), counters=counters, xs=xs, heights=hs,
                       width_s=width, totals=totals, sources=src)


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


# ---------- History tab ----------

SEGMENT_COLUMNS = [
    ("started_at", "Started"), ("session_id", "Session"), ("segment", "Part"), ("end_reason", "Ended by"),
    ("model", "Model"), ("calls", "Calls"), ("turns", "Prompts"), ("B", "Useful context"),
    ("L_peak", "Largest context"), ("g", "Growth per call"), ("rent_usd", "Rent"), ("laps", "Reminders"),
    ("restart_first", "Restart at reminder (est.)"), ("restart_best", "Best restart (est.)"),
    ("bill_in_usd", "Paid for input"), ("bill_out_usd", "Paid for output"), ("duration_s", "Duration"),
    ("models", "Models used (calls, spend)"),
]
SEGMENT_TIPS = {
    "segment": "A session is cut into parts at each compaction; the first part is 1.",
    "B": "Tokens of context a fresh session would need to rebuild (the useful part).",
    "L_peak": "The most context any call of this part re-read from the cache (tokens).",
    "g": "How much the context grew per call on average (tokens).",
    "rent_usd": "What calls paid to re-read context a fresh session would not need (dead weight).",
    "laps": "Reminders raised: each time the rent paid added up to about one restart's cost.",
    "restart_first": "An estimate: what a restart with a handoff at this part's first reminder would have saved "
                     "(the later calls re-read less, one rebuild of the useful context paid). Negative: it would "
                     "have cost.",
    "restart_best": "An estimate: the one restart that would have saved most, in hindsight, and after which call.",
}


def fmt_restart(figures, key: str) -> str:
    """A part's restart estimate: `$0.78 after call 57`, or why there is none."""
    if not isinstance(figures, dict):
        return "–"
    if key == "restart_first":
        call, usd = figures.get("first_reminder_call"), figures.get("first_reminder_usd")
        return "no reminder" if call is None else f"{fmt.usd(usd)} after call {fmt.count(call)}"
    call, usd = figures.get("best_call"), figures.get("best_usd")
    return "none would save" if call is None else f"{fmt.usd(usd)} after call {fmt.count(call)}"
END_WORDS = {"compact": "compaction", "rotation": "new session", "end": "end of transcript",
             "shutdown": "service stopped", "checkpoint": "service stopped"}


def fmt_models(models) -> str:
    """Each model a segment used (a /model switch), with its calls and spend: `Opus 4.5 ×3 $0.30; …`."""
    parts = []
    for m in models or []:
        name = model_name(m.get("model"))
        spend = float(m.get("bill_in_usd") or 0) + float(m.get("bill_out_usd") or 0)
        parts.append(f"{name} ×{m.get('calls', 0)} {fmt.usd(spend)}")
    return "; ".join(parts) or "–"


def segment_rows(segments: dict | list | None) -> list[list[str]]:
    items = segments.get("segments") if isinstance(segments, dict) else segments
    rows = []
    for s in items or []:
        row = []
        for key, _ in SEGMENT_COLUMNS:
            v = s.get(key)
            if key.startswith("restart_"):
                row.append(fmt_restart(s.get("restart_savings"), key))
            elif v is None:
                row.append("–")
            elif key.endswith("usd"):
                row.append(fmt.usd(v))
            elif key in ("B", "L_peak", "g"):
                row.append(f"{fmt.tokens(v)} tokens")
            elif key == "duration_s":
                row.append(fmt.duration(float(v)))
            elif key == "models":
                row.append(fmt_models(v))
            elif key == "session_id":
                row.append(str(v)[:8])
            elif key == "model":
                row.append(model_name(v))
            elif key == "segment":
                row.append(str(int(v) + 1))
            elif key == "end_reason":
                row.append(END_WORDS.get(str(v), str(v).replace("_", " ")))
            elif key in ("calls", "turns", "laps"):
                row.append(fmt.count(v))
            elif key == "started_at":
                row.append(fmt.when(v))
            else:
                row.append(str(v))
        rows.append(row)
    return rows


# ---------- Settings tab ----------

def flatten(config: dict, prefix: str = "") -> dict[str, object]:
    """{"engine": {"g_floor": 500}} -> {"engine.g_floor": 500}; lists and empty dicts stay leaves."""
    out: dict[str, object] = {}
    for k, v in (config or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def unflatten(flat: dict[str, object]) -> dict:
    out: dict = {}
    for key, v in flat.items():
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def min_gap_seconds(config: dict | None, default: float = 600.0) -> float:
    """reminders.min_gap: seconds as a number, or text like "10m", "90s", "1h"."""
    v = ((config or {}).get("reminders") or {}).get("min_gap")
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return float(v)
    text = str(v).strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(text[-1:])
    try:
        return float(text[:-1]) * mult if mult else float(text)
    except ValueError:
        return default
