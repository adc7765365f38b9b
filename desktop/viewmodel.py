"""What the tray and the window show, computed from API dicts (pure Python, no Qt).

Widgets stay thin: they call these functions and draw the result. Every input
is a dict as docs/api.md defines it (SNAPSHOT, SERIES, CHANNEL, PROFILE); any
field may be missing or null, and the functions must still return something
sensible (the service is being built in parallel and a snapshot can be gated).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePath

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


# ---------- small formatters ----------

def fmt_usd(v) -> str:
    if v is None:
        return "–"
    v = float(v)
    if abs(v) >= 100:
        return f"${v:,.0f}"
    if abs(v) >= 1:
        return f"${v:,.2f}"
    if v == 0:
        return "$0"
    return f"${v:.3f}" if abs(v) >= 0.01 else f"${v:.4f}"


def fmt_tokens(n) -> str:
    if n is None:
        return "–"
    n = float(n)
    if abs(n) >= 1e6:
        return f"{n / 1e6:.2f}M"
    if abs(n) >= 1e3:
        return f"{n / 1e3:.1f}k"
    return f"{n:.0f}"


def fmt_num(v, digits: int = 2) -> str:
    if v is None:
        return "–"
    return f"{float(v):.{digits}f}"


def fmt_duration(seconds: float) -> str:
    s = int(max(0, round(seconds)))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 60}:{s % 60:02d}"


def parse_time(value) -> float | None:
    """ISO-8601 (with Z or offset) or epoch seconds -> epoch seconds; None if unreadable."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        text = str(value).strip().replace("Z", "+00:00")
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    except ValueError:
        return None


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
    if lamp.get("reason"):
        lines.append(str(lamp["reason"]))
    x, xs = snapshot.get("x"), snapshot.get("xSweet")
    if xs is not None:
        lines.append(f"x {fmt_num(x)} of sweet spot {fmt_num(xs)}")
        dhat = snapshot.get("dhat")
        if dhat is not None:
            d = float(dhat)
            if d >= 0:
                lines.append(f"{math.ceil(d)} calls to the sweet spot")
            else:
                lines.append(f"{math.ceil(-d)} calls past the sweet spot")
    elif x is not None:
        lines.append(f"x {fmt_num(x)}")
    rent, br = snapshot.get("bill_cycle_usd"), snapshot.get("br")
    lines.append(f"rent so far {fmt_usd(rent)} · burn {fmt_usd(br)}/h")
    cache = snapshot.get("cache") or {}
    exp = parse_time(cache.get("expires_at"))
    cold = cache.get("cold_rewrite_usd")
    if exp is not None:
        left = exp - now
        if left > 0:
            # a clock time stays true without ticking; the menu shows the live countdown when opened
            clock = datetime.fromtimestamp(exp).strftime("%H:%M:%S")
            lines.append(f"cache warm until {clock}; after that the next turn re-writes {fmt_usd(cold)}")
        else:
            lines.append(f"cache expired: the next turn re-writes {fmt_usd(cold)}")
    return "\n".join(lines)


def pick_followed(sessions: dict[str, dict], service_followed: str | None, chosen: str | None) -> str | None:
    """Which session the lamp shows: the user's choice while live, else the service's, else the newest."""
    if chosen and chosen in sessions:
        return chosen
    if service_followed and service_followed in sessions:
        return service_followed
    if not sessions:
        return None
    return max(sessions, key=lambda sid: parse_time(sessions[sid].get("updated_at")) or 0.0)


def menu_sessions(sessions: dict[str, dict], followed: str | None) -> list[tuple[str, str, bool]]:
    """(session_id, label, checked) for the tray menu, newest first."""
    order = sorted(sessions, key=lambda sid: parse_time(sessions[sid].get("updated_at")) or 0.0, reverse=True)
    out = []
    for sid in order:
        snap = sessions[sid]
        out.append((sid, f"{session_name(snap)} — {lamp_colour(snap)}", sid == followed))
    return out


# ---------- reminder ----------

def reminder_message(reminder: dict) -> tuple[str, str]:
    """Title and body of the restart reminder, stamped with its lap."""
    lap = int(reminder.get("lap") or 1)
    worth = "a restart's" if lap == 1 else f"{lap} restarts'"
    title = f"ctxlamp: you have paid {worth} worth of rent"
    parts = []
    restart = reminder.get("restart_usd")
    rent = reminder.get("rent_usd")
    pp = reminder.get("payback_calls")
    if rent is not None:
        parts.append(f"Rent on dead weight so far: {fmt_usd(rent)}.")
    if restart is not None:
        parts.append(f"A restart costs {fmt_usd(restart)} to rebuild the useful context")
        if pp is not None:
            parts[-1] += f" and pays for itself after {max(1, math.ceil(float(pp)))} calls."
        else:
            parts[-1] += "."
    parts.append("Prepare a handoff, then start a fresh session.")
    return title, " ".join(parts)


# ---------- cost curve (Session tab) ----------

@dataclass
class CurveView:
    us: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    bands: list[tuple[float, float, str]] = field(default_factory=list)  # (u0, u1, colour)
    point: tuple[float, float] | None = None
    u_max: float = 3.0
    note: str = ""


def curve_view(snapshot: dict | None) -> CurveView:
    """A(u)/A* with lamp bands and the current point, from snapshot.skeleton."""
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
    return CurveView(us=us, ys=ys, bands=[b for b in bands if b[1] > b[0]], point=point, u_max=u_max)


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
        return f"{self.path}  ({fmt_tokens(self.tokens)} tok){extra}"


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
        t = parse_time(b.get("start"))
        if t is None:
            continue
        xs.append(t + width / 2)
        hs.append(float(b.get(counter) or 0.0) if counter else 0.0)
    totals = []
    for k, v in (channel.get("totals") or {}).items():
        if isinstance(v, float):
            totals.append((k, fmt_usd(v) if "usd" in k.split("_") else f"{v:,.2f}"))
        elif isinstance(v, int) and not isinstance(v, bool):
            totals.append((k, f"{v:,}"))
        else:
            totals.append((k, str(v)))
    sources = channel.get("sources") or []
    src = ", ".join(s if isinstance(s, str) else str(s.get("name") or s.get("source") or s) for s in sources)
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
    ("started_at", "started"), ("session_id", "session"), ("segment", "seg"), ("end_reason", "ended by"),
    ("model", "model"), ("calls", "calls"), ("turns", "turns"), ("B", "B"), ("L_peak", "L peak"),
    ("g", "g"), ("rent_usd", "rent"), ("laps", "laps"), ("bill_in_usd", "bill in"),
    ("bill_out_usd", "bill out"), ("duration_s", "duration"),
]


def segment_rows(segments: dict | list | None) -> list[list[str]]:
    items = segments.get("segments") if isinstance(segments, dict) else segments
    rows = []
    for s in items or []:
        row = []
        for key, _ in SEGMENT_COLUMNS:
            v = s.get(key)
            if v is None:
                row.append("–")
            elif key.endswith("usd"):
                row.append(fmt_usd(v))
            elif key in ("B", "L_peak", "g"):
                row.append(fmt_tokens(v))
            elif key == "duration_s":
                row.append(fmt_duration(float(v)))
            elif key == "session_id":
                row.append(str(v)[:8])
            elif key == "started_at":
                t = parse_time(v)
                row.append(datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else str(v))
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


def parse_setting(text: str, old):
    """Turn what the user typed back into the type the setting had."""
    import json

    text = text.strip()
    if isinstance(old, bool):
        return text.lower() in ("1", "true", "yes", "on")
    if isinstance(old, int):
        return int(float(text))
    if isinstance(old, float):
        return float(text)
    if isinstance(old, (list, dict)) or old is None:
        if text == "":
            return old
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def min_gap_seconds(config: dict | None, default: float = 600.0) -> float:
    """reminders.min_gap: seconds as a number, or text like "10m", "90s", "1h"."""
    v = ((config or {}).get("reminders") or {}).get("min_gap")
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return float(v)
    text = str(v).strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], None)
    try:
        return float(text[:-1]) * mult if mult else float(text)
    except ValueError:
        return default
