"""What status lines reported, kept per session and per account: bounded, deduplicated, saved.

Claude Code tells a status-line command the plan-limit meters (for claude.ai subscribers), its
own cost figure and the prompt cache's state; nothing else tells ctxlamp the first. The book
keeps a time series per session (for a session's plot and what each turn cost of the 5-hour
window) and one for the account (the limits, whichever session saw them). One machine user is
one account: Claude Code does not say which account a session runs under.

Bounds: a reading equal to the series' last one is not kept; each session keeps its newest
PER_SESSION readings, the account ACCOUNT readings, and only the MAX_SESSIONS most recently
reporting sessions are kept. So no client can grow the book without bound, whatever it sends.
"""
from __future__ import annotations

import json
import os
from bisect import bisect_right
import threading
import time
from collections import OrderedDict, deque
from datetime import datetime, timezone

from service.statusline.reading import LIMIT_WINDOWS
from service.limits.runout import RunOut, run_out

RUN_OUT_WINDOWS = ("five_hour", "seven_day")  # the plan windows with a reset (spend_limit has none)

PER_SESSION = 240
ACCOUNT = 2000
MAX_SESSIONS = 64
SAVE_EVERY_S = 10.0
RATIO_EVERY_S = 30.0  # pct_per_usd moves slowly; a full book takes ~0.1 s to sum
NEW_WINDOW_S = 60.0  # a resets_at that moved this far means the window rolled over


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _moved(a: float | None, b: float | None) -> bool:
    """Did a reset time change (not just jitter by a few seconds between readings)?"""
    return (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > NEW_WINDOW_S)


def _limit_fields(reading: dict) -> dict:
    out = {}
    for name, w in (reading.get("rate_limits") or {}).items():
        out[name] = w["used_percentage"]
        if "resets_at" in w:
            out[name + "_resets"] = w["resets_at"]
    return out


def session_point(reading: dict, turns, calls) -> dict:
    cost, ctx, cache = reading.get("cost") or {}, reading.get("context_window") or {}, reading.get("prompt_cache") or {}
    point = {"turns": turns if isinstance(turns, int) else None, "calls": calls if isinstance(calls, int) else None,
             **_limit_fields(reading), "cost_usd": cost.get("total_cost_usd"), "ctx_pct": ctx.get("used_percentage"),
             "ctx_tokens": ctx.get("total_input_tokens"), "cache_expires_at": cache.get("expires_at"),
             # the cache misses Claude Code counted for the session, by cause (display only: never the engine's)
             "requests": cache.get("requests"), "misses": cache.get("misses"),
             "miss_causes": cache.get("miss_causes"), "miss_recache_tokens": cache.get("miss_recache_tokens")}
    return {k: v for k, v in point.items() if v is not None}


def _current_window(points: list[dict], name: str) -> list[tuple[float, float, float | None]]:
    """(at, pct, resets_at) of the window's readings from the newest back to the last reset (the account's
    readings are in time order: only the current window is walked, not the whole book)."""
    out: list[tuple[float, float, float | None]] = []
    newest: float | None = None
    for p in reversed(points):
        pct, at = p.get(name), p.get("at")
        if not isinstance(pct, (int, float)) or not isinstance(at, (int, float)):
            continue
        resets = p.get(name + "_resets")
        if out and _moved(newest, resets):
            break
        if not out:
            newest = resets
        out.append((at, float(pct), resets))
    return out[::-1]


class _Movers:
    """When sessions reported the 5-hour window: answers "did another session report between two times"
    by bisection (the book is asked this for every turn of every session)."""

    def __init__(self, account: list[dict]) -> None:
        self.all: list[float] = []
        self.by_sid: dict = {}
        for p in account:
            if "five_hour" in p:
                self.all.append(p["at"])
                self.by_sid.setdefault(p.get("sid"), []).append(p["at"])
        self.all.sort()
        for times in self.by_sid.values():
            times.sort()

    def others_between(self, sid: str, t0: float, t1: float) -> bool:
        own = self.by_sid.get(sid, [])
        every = bisect_right(self.all, t1) - bisect_right(self.all, t0)
        return every > bisect_right(own, t1) - bisect_right(own, t0)


class Book:
    def __init__(self, path: str | os.PathLike | None = None, *, per_session: int = PER_SESSION,
                 account: int = ACCOUNT, max_sessions: int = MAX_SESSIONS) -> None:
        self.path = path
        self.per_session = per_session
        self.max_sessions = max_sessions
        self.lock = threading.Lock()
        self._saving = threading.Lock()  # one writer of the file at a time (API threads record concurrently)
        self.sessions: OrderedDict[str, deque] = OrderedDict()
        self.account: deque = deque(maxlen=account)
        self.latest: dict[str, dict] = {}  # window -> {used_percentage, resets_at, seen_at} (epoch s)
        self._dirty = False
        self._version = 0                      # bumped on every kept reading: memo key for pct_per_usd
        self._ratio: tuple[int, float, float | None] = (-1, float("-inf"), None)  # (version, when, value)
        self._runouts: tuple[int, dict[str, RunOut]] = (-1, {})  # (version, window -> its run-out)
        self._saved_at = 0.0
        self._loaded = False

    # ---- recording -------------------------------------------------------------------------
    def record(self, session_id: str | None, reading: dict, turns=None, calls=None, now: float | None = None) -> bool:
        """Keep one reading; True when the latest limits changed (worth telling listeners)."""
        now = time.time() if now is None else now
        self.load()
        limits = reading.get("rate_limits") or {}
        with self.lock:
            changed = False
            for name, w in limits.items():
                before = self.latest.get(name)
                if before is None or before["used_percentage"] != w["used_percentage"] \
                        or _moved(before.get("resets_at"), w.get("resets_at")):
                    changed = True
                self.latest[name] = {**w, "seen_at": now}
            if limits:
                point = {"sid": session_id, **_limit_fields(reading)}
                last = self.account[-1] if self.account else None
                if last is None or {k: v for k, v in last.items() if k not in ("at", "sid")} != \
                        {k: v for k, v in point.items() if k != "sid"}:
                    self.account.append({"at": now, **point})
                    self._dirty = True
                    self._version += 1
            if session_id:
                series = self.sessions.get(session_id)
                if series is None:
                    series = self.sessions[session_id] = deque(maxlen=self.per_session)
                    while len(self.sessions) > self.max_sessions:
                        self.sessions.popitem(last=False)
                else:
                    self.sessions.move_to_end(session_id)
                point = session_point(reading, turns, calls)
                last = series[-1] if series else None
                if point and (last is None or {k: v for k, v in last.items() if k != "at"} != point):
                    series.append({"at": now, **point})
                    self._dirty = True
                    self._version += 1
        if self._dirty and now - self._saved_at >= SAVE_EVERY_S:
            self.save(now)
        return changed

    # ---- reading back ----------------------------------------------------------------------
    def cache_misses(self, session_id: str) -> dict | None:
        """The cache misses Claude Code last reported for the session: {misses, requests, miss_causes,
        miss_recache_tokens, at}, or None when its status line never said."""
        self.load()
        with self.lock:
            points = list(self.sessions.get(session_id) or ())
        for p in reversed(points):
            if isinstance(p.get("misses"), int):
                return {k: p[k] for k in ("misses", "requests", "miss_causes", "miss_recache_tokens", "at") if k in p}
        return None

    def limits(self, *, epoch: bool = False) -> dict:
        """The `limits` object of GET /api/v1/status: what was last seen per window, null when never.
        `epoch`: times as epoch seconds and no `pct_per_usd` (what the status-line command needs)."""
        self.load()
        with self.lock:
            latest = {k: dict(v) for k, v in self.latest.items()}
        ratio = None if epoch else self.pct_per_usd()
        runouts = self.run_outs()
        out: dict = {}
        for name in LIMIT_WINDOWS:
            w = latest.get(name)
            if w is None:
                out[name] = None
                continue
            ro = runouts.get(name)
            if not epoch:
                w = {"used_percentage": w["used_percentage"], "resets_at": iso(w.get("resets_at")),
                     "seen_at": iso(w.get("seen_at"))}
            if name in RUN_OUT_WINDOWS:  # when it runs out at the current pace (null: it resets first)
                w["runs_out_at"] = (ro.runs_out_at if epoch else iso(ro.runs_out_at)) if ro else None
                w["pace_pct_per_hour"] = round(ro.pace_pct_per_hour, 3) if ro and ro.pace_pct_per_hour else None
            if name == "five_hour" and not epoch:
                w["pct_per_usd"] = ratio
            out[name] = w
        return out

    def run_outs(self) -> dict[str, RunOut]:
        """Each plan window's pace and run-out from the account's readings (recomputed after a new one)."""
        with self.lock:
            version = self._version
            if self._runouts[0] == version:
                return self._runouts[1]
            points = list(self.account)
        out = {}
        for name in RUN_OUT_WINDOWS:
            series = _current_window(points, name)
            if series:
                out[name] = run_out(name, series)
        with self.lock:
            self._runouts = (version, out)
        return out

    def session_readings(self, session_id: str) -> list[dict]:
        self.load()
        with self.lock:
            return [dict(p) for p in self.sessions.get(session_id, ())]

    def account_readings(self) -> list[dict]:
        self.load()
        with self.lock:
            return [dict(p) for p in self.account]

    def turn_costs(self, session_id: str, movers: _Movers | None = None, dated: bool = True) -> list[dict]:
        """What each turn cost of the 5-hour window: the change of `five_hour` between the last
        reading of the turn before and the last reading of the turn.

        Labels: "measured"; "upper bound" when another session reported a change of the window in
        between (its calls, or another device's seen through it, are in the difference too);
        "window reset" when the window rolled over in between (no figure)."""
        readings = [p for p in self.session_readings(session_id) if "five_hour" in p and "turns" in p]
        ends: list[dict] = []
        for p in readings:
            if ends and ends[-1]["turns"] == p["turns"]:
                ends[-1] = p
            elif not ends or p["turns"] > ends[-1]["turns"]:
                ends.append(p)
        movers = movers or _Movers(self.account_readings())
        out = []
        for before, after in zip(ends, ends[1:]):
            item = {"turn": after["turns"], "turns": after["turns"] - before["turns"],
                    "at": iso(after["at"]) if dated else after["at"],
                    "before_pct": before["five_hour"], "after_pct": after["five_hour"], "delta_pct": None,
                    "cost_usd": None, "label": "measured"}
            if "cost_usd" in before and "cost_usd" in after:
                item["cost_usd"] = max(0.0, after["cost_usd"] - before["cost_usd"])
            rb, ra = before.get("five_hour_resets"), after.get("five_hour_resets")
            if rb is not None and ra is not None and abs(ra - rb) > NEW_WINDOW_S:
                item["label"] = "window reset"
            else:
                item["delta_pct"] = max(0.0, after["five_hour"] - before["five_hour"])
                if movers.others_between(session_id, before["at"], after["at"]):
                    item["label"] = "upper bound"
            out.append(item)
        return out

    def pct_per_usd(self) -> float | None:
        """Share of the 5-hour window per dollar of Claude Code's own cost, from measured turns of every
        session (None until $0.05 of measured turns): how a cost becomes a share of the window."""
        with self.lock:
            sids, version = list(self.sessions), self._version
        seen, when, value = self._ratio
        if seen == version or time.monotonic() - when < RATIO_EVERY_S:
            return value  # a sum over every session's turns: after a change, and at most every RATIO_EVERY_S
        pct = usd = 0.0
        movers = _Movers(self.account_readings())
        for sid in sids:
            for t in self.turn_costs(sid, movers, dated=False):
                if t["label"] == "measured" and t["cost_usd"]:
                    pct += t["delta_pct"]
                    usd += t["cost_usd"]
        ratio = pct / usd if usd >= 0.05 else None
        self._ratio = (version, time.monotonic(), ratio)
        return ratio

    # ---- keeping it -------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if not self.path:
            return
        try:
            with open(self.path, "rb") as fh:
                data = json.loads(fh.read())
            with self.lock:
                for sid, points in list(data.get("sessions", {}).items())[-self.max_sessions:]:
                    self.sessions[sid] = deque(points[-self.per_session:], maxlen=self.per_session)
                self.account.extend(data.get("account", []))
                self.latest = {k: v for k, v in data.get("latest", {}).items() if k in LIMIT_WINDOWS and isinstance(v, dict)}
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # a missing or damaged file starts an empty book

    def save(self, now: float | None = None) -> None:
        if not self.path or not self._dirty or not self._saving.acquire(blocking=False):
            return  # nothing new, or another thread is writing it right now
        try:
            from pathlib import Path

            from service.client.privdir import write_private

            with self.lock:
                data = {"version": 1, "sessions": {k: list(v) for k, v in self.sessions.items()},
                        "account": list(self.account), "latest": self.latest}
                self._dirty = False
                self._saved_at = time.time() if now is None else now
            try:
                write_private(Path(self.path), json.dumps(data, separators=(",", ":")).encode("utf-8"), durable=False)
            except OSError:
                self._dirty = True
        finally:
            self._saving.release()
