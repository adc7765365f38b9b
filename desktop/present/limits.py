"""Plan limits and the idle cache, as the tray and the window say them (pure Python, no Qt).

Inputs are API dicts (docs/api.md): the status's `limits` object, GET /api/v1/limits, a
SNAPSHOT, the `limits` section of CONFIG. Any of them may be missing or partial.
"""
from __future__ import annotations

import time

from desktop.present import fmt
from desktop.present.lamp import session_name
from desktop.present.overview import run_out_at
from service.client import words

WINDOW_LABELS = {"five_hour": "5h", "seven_day": "week", "spend_limit": "spend"}
DEFAULTS = {"notice_pct": 80.0, "alert_pct": 95.0, "idle_rewrite_usd": 0.5, "idle_notice_s": 60}


def _settings(cfg: dict | None) -> dict:
    out = dict(DEFAULTS)
    for key, value in ((cfg or {}).get("limits") or {}).items():
        if key in out and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
    return out


def _clock(epoch: float, now: float) -> str:
    t = time.localtime(epoch)
    return time.strftime("%H:%M" if epoch - now < 20 * 3600 else "%a %H:%M", t)


def _windows(limits: dict | None):
    """(name, label, window) of each window that has a figure."""
    for name, label in WINDOW_LABELS.items():
        w = (limits or {}).get(name)
        if isinstance(w, dict) and isinstance(w.get("used_percentage"), (int, float)):
            yield name, label, w


def limits_text(limits: dict | None, now: float | None = None) -> str | None:
    """ "5h 37% · resets 17:00; week 12%" (None when no limit was ever seen)."""
    now = time.time() if now is None else now
    parts = []
    for name, label, w in _windows(limits):
        text = f"{label} {w['used_percentage']:.0f}%"
        resets, full = fmt.parse_time(w.get("resets_at")), run_out_at(w, now)
        if full is not None:
            text += f" · full at {_clock(full, now)} at this pace"
        elif resets is not None and resets > now and name == "five_hour":
            text += f" · resets {_clock(resets, now)}"
        parts.append(text)
    return "; ".join(parts) or None


class LimitNotices:
    """A notice when a window passes each threshold: once per window (its resets_at) and threshold."""

    def __init__(self, cfg: dict | None = None) -> None:
        self.configure(cfg)
        self.sent: set[tuple[str, str, float]] = set()

    def configure(self, cfg: dict | None) -> None:
        s = _settings(cfg)
        self.thresholds = sorted({s["notice_pct"], s["alert_pct"]})

    def offer(self, limits: dict | None, now: float | None = None) -> list[tuple[str, str]]:
        """(title, body) of the notices these limits call for now, each given once."""
        now = time.time() if now is None else now
        out = []
        for name, label, w in _windows(limits):
            full = run_out_at(w, now)
            key = (name, str(w.get("resets_at") or ""), -1.0)  # -1: the run-out notice of this window
            if full is not None and key not in self.sent:
                self.sent.add(key)
                resets = fmt.parse_time(w.get("resets_at"))
                out.append((f"ctxlamp: {label} limit runs out before it resets",
                            f"At this pace your {'5-hour' if name == 'five_hour' else label} plan window is full at "
                            f"{_clock(full, now)}" + (f", before it resets at {_clock(resets, now)}." if resets
                                                      else ".")))
            pct = float(w["used_percentage"])
            passed = [t for t in self.thresholds if pct >= t]
            if not passed:
                continue
            top = passed[-1]
            window = str(w.get("resets_at") or "")
            new = [t for t in passed if (name, window, t) not in self.sent]
            for t in passed:
                self.sent.add((name, window, t))
            if not new:
                continue
            resets = fmt.parse_time(w.get("resets_at"))
            when = f" It resets at {_clock(resets, now)}." if resets is not None and resets > now else ""
            out.append((f"ctxlamp: {label} limit at {pct:.0f}%",
                        f"Your {'5-hour' if name == 'five_hour' else label} plan window passed {top:.0f}%.{when}"))
        return out


class IdleCacheNotice:
    """Before an idle session's prompt cache expires: what the next message will re-write and cost, and what
    a fresh session would write instead (the useful part, at the write price), and the move the advice names
    once the cache is cold.

    Status lines freeze between updates; the tray does not. Due `idle_notice_s` before the
    expiry, for sessions whose re-write costs at least `idle_rewrite_usd` or whose cold cache makes a move
    pay (the followed schedule takes every such move); once per expiry.
    """

    def __init__(self, cfg: dict | None = None) -> None:
        self.configure(cfg)
        self.sent: set[tuple[str, str]] = set()

    def configure(self, cfg: dict | None) -> None:
        s = _settings(cfg)
        self.lead_s, self.min_usd = s["idle_notice_s"], s["idle_rewrite_usd"]

    def _candidate(self, snap: dict) -> tuple[float, float] | None:
        cache = snap.get("cache") or {}
        exp, cold = fmt.parse_time(cache.get("expires_at")), cache.get("cold_rewrite_usd")
        if exp is None or not isinstance(cold, (int, float)):
            return None
        if cold < self.min_usd and not words.break_move_sentence(cache):  # a move it names is always said
            return None
        if (str(snap.get("session_id")), str(cache.get("expires_at"))) in self.sent:
            return None
        return exp, float(cold)

    def next_due(self, sessions: dict[str, dict], now: float) -> float | None:
        """When the next notice falls due (epoch s), or None."""
        dues = [c[0] - self.lead_s for s in sessions.values() if (c := self._candidate(s)) and c[0] > now]
        return min(dues) if dues else None

    def due(self, sessions: dict[str, dict], limits: dict | None, now: float) -> list[tuple[str, str]]:
        out = []
        for snap in sessions.values():
            c = self._candidate(snap)
            if c is None or not (now >= c[0] - self.lead_s - 0.5 and now < c[0]):
                continue
            exp, cold = c
            self.sent.add((str(snap.get("session_id")), str((snap.get("cache") or {}).get("expires_at"))))
            tokens = (snap.get("window") or {}).get("tokens")
            what = f"{tokens / 1000:.0f}k tokens" if isinstance(tokens, (int, float)) else "its context"
            body = (f"{session_name(snap)}: the prompt cache expires in {max(0, int(exp - now))} s. "
                    f"The next message will rewrite {what}, about {fmt.usd(cold)}")
            ratio = ((limits or {}).get("five_hour") or {}).get("pct_per_usd")
            if isinstance(ratio, (int, float)) and ratio > 0:
                body += f" (likely {cold * ratio:.1f}% of your 5-hour window)"
            # beside it, the fresh start (the useful part written once) and the move the advice names for a
            # cold cache: the one rule the followed schedule takes at a break (docs/measurement.md 16)
            after = words.cold_cache_lines(snap.get("cache"))[1:]
            out.append(("ctxlamp: cache about to expire", " ".join([body + ".", *after])))
        return out


def usage_points(readings: list[dict], window: str = "five_hour") -> tuple[list[float], list[float]]:
    """(epoch seconds, used %) of one window from GET /api/v1/limits readings."""
    xs, ys = [], []
    for r in readings or []:
        at, pct = fmt.parse_time(r.get("at")), r.get(window)
        if at is not None and isinstance(pct, (int, float)):
            xs.append(at)
            ys.append(float(pct))
    return xs, ys


TURN_COLUMNS = ("turn", "5h before", "5h after", "share of 5h", "Claude Code's cost", "label")


def turn_rows(turns: list[dict]) -> list[tuple[str, ...]]:
    """Per-turn window cost rows, newest first."""
    rows: list[tuple[str, ...]] = []
    for t in reversed(turns or []):
        delta = t.get("delta_pct")
        share = "–" if delta is None else (f"≤{delta:.2f}%" if t.get("label") == "upper bound" else f"{delta:.2f}%")
        span = str(t.get("turn")) if (t.get("turns") or 1) <= 1 else f"{t['turn'] - t['turns'] + 1}–{t['turn']}"
        rows.append((span, f"{t.get('before_pct', 0):.1f}%", f"{t.get('after_pct', 0):.1f}%", share,
                     fmt.usd(t.get("cost_usd")) if t.get("cost_usd") is not None else "–", str(t.get("label") or "")))
    return rows
