"""The Session tab's charts: the cost curve with its zones and reminders, context and rent over calls
(pure Python, no Qt; desktop/widgets/charts.py draws them)."""
from __future__ import annotations

from dataclasses import dataclass, field

from desktop.present.lamp import STATE_WORDS, lamp_state

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
