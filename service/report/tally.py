"""The report's spend figures, fed one file's scan result at a time, in any order (pure).

`ctxlamp report` feeds each file as its worker finishes it, while the others are
still being scanned, so little of the summing is left once the last file is in.
For that the figures must not depend on the order files arrive in:
- a call is kept once across files: its revision with the highest total tokens,
  between equal totals the earliest (older Claude Code copies a resumed session's
  calls into the continuation file, stamped with the copy's time: the call is
  booked to the session and the moment it happened), then the one in the first
  file by path. A revision replaced by a better one arriving later is taken back;
- money is summed exactly (math.fsum) per group of calls, so adding, taking back
  and reordering give the same figures, to the last bit.
"""
from __future__ import annotations

from math import fsum
from collections.abc import Iterator
from typing import Any, Callable

from service.channels.spend import (
    CR, CW1H, CW5, GEO, IN, KEY, MODEL, OUT, SIDE, SPEED, TS, call_cost, is_placeholder_output,
)

Lookup = Callable[[str], tuple[Any, str]]


def _when(rec: list) -> str:
    """A call's time for choosing between its copies: ISO text, which sorts by time; none sorts last."""
    ts = rec[TS]
    return ts if isinstance(ts, str) else "\uffff"


class _Group:
    """Calls booked to one (day, model) or (session, file, side): how many, and their USD."""

    __slots__ = ("calls", "usd")

    def __init__(self) -> None:
        self.calls = 0
        self.usd: list[float] = []


class SpendTally:
    """Keeps every call's best revision and books it, so `spend` can sum at the end.

    `prices(model)` returns (price or None, how); `in_period(ts)` says whether a
    call's time is in the report's period (None: every call is).
    """

    def __init__(self, prices: Lookup, in_period: Callable[[Any], bool] | None, day_of: Callable[[Any], str | None]):
        self.prices = prices
        self.in_period = in_period
        self.day_of = day_of
        self.files: dict[str, dict] = {}
        # key -> (total tokens, path, record, file result, usd or None, the table entry that priced it
        # when the model was priced as a member of its family, else None, the USD of the output a
        # placeholder-output call wrote beyond what it recorded, estimated from its text, else None)
        self.best: dict[str, tuple] = {}
        self.by_day_model: dict[tuple, _Group] = {}
        self.by_session_file: dict[tuple, _Group] = {}  # (session, path, side)
        self.unpriced: dict[str, list[int]] = {}         # model -> calls, in, out, cache read, cache write
        self.family_priced: dict[str, str] = {}
        # a usage value the price table has no figure for (priced at standard): (value, label) -> calls
        self.unknown_modifiers: dict[tuple[str, str], int] = {}
        self._unknown_of: dict[str, tuple[str, ...]] = {}  # call key -> its unknown values
        self.session_tokens: dict[str, list[int]] = {}   # main chain, all time: in, cw, cr
        self._latest_main: dict[str, tuple] = {}         # session -> (ts, key, model) of its latest main-chain call
        self.calls = self.main_requests = self.placeholder = 0
        self.placeholder_estimate: list[float] = []  # USD, added and taken back (summed exactly)

    def _price_at(self, rec: list) -> tuple[Any, str]:
        """The rates in force at the call's time, at its speed and inference geography, when the prices know
        dated changes and modifiers, else the model's."""
        at = getattr(self.prices, "at", None)
        return at(rec[MODEL], rec[TS], rec[SPEED], rec[GEO]) if at is not None else self.prices(rec[MODEL])

    def add(self, path: str, fr: dict) -> None:
        """Book one file's calls (a file already added is ignored)."""
        if path in self.files:
            return
        self.files[path] = fr
        best = self.best
        for rec in fr["calls"]:
            key = rec[KEY]
            total = rec[IN] + rec[CW5] + rec[CW1H] + rec[CR] + rec[OUT]
            prev = best.get(key)
            if prev is not None:
                if total < prev[0] or (total == prev[0] and (_when(rec), path) > (_when(prev[2]), prev[1])):
                    continue
                self._book(prev, -1)
            price, how = self._price_at(rec)
            usd = call_cost(price, rec[IN], rec[CW5], rec[CW1H], rec[CR], rec[OUT]) if price is not None else None
            family = getattr(price, "model", "") if how == "family" else None
            unknown = getattr(price, "unknown_modifiers", ())
            if unknown:
                self._unknown_of[key] = unknown
            else:
                self._unknown_of.pop(key, None)
            est = None
            if usd is not None and is_placeholder_output(rec):
                written = (fr.get("placeholder_tokens") or {}).get(key, 0)
                if written > rec[OUT]:
                    est = call_cost(price, rec[IN], rec[CW5], rec[CW1H], rec[CR], written) - usd
            kept = best[key] = (total, path, rec, fr, usd, family, est)
            self._book(kept, 1)
        if not fr["subagent"]:
            self._note_latest_model(fr)

    def _note_latest_model(self, fr: dict) -> None:
        """The session's latest main-chain call with a model: this file's last one, if later than others'."""
        for rec in reversed(fr["calls"]):
            if not rec[SIDE] and rec[MODEL]:
                latest = (rec[TS] if isinstance(rec[TS], str) else "", rec[KEY], rec[MODEL])
                if latest > self._latest_main.get(fr["session_id"], ("", "", "")):
                    self._latest_main[fr["session_id"]] = latest
                return

    def _book(self, kept: tuple, sign: int) -> None:
        """Count a kept revision in (sign 1) or take it back out (sign -1)."""
        _, path, rec, fr, usd, family, est = kept
        sid = fr["session_id"]
        side = rec[SIDE] or fr["subagent"]  # both are bools
        if not side:
            st = self.session_tokens.get(sid)
            if st is None:
                st = self.session_tokens[sid] = [0, 0, 0]
            st[0] += sign * rec[IN]
            st[1] += sign * (rec[CW5] + rec[CW1H])
            st[2] += sign * rec[CR]
        ts = rec[TS]
        if self.in_period is not None and not self.in_period(ts):
            return
        self.calls += sign
        if not side:
            self.main_requests += sign
        if is_placeholder_output(rec):
            self.placeholder += sign
            if est is not None:
                self.placeholder_estimate.append(est if sign > 0 else -est)
        model = rec[MODEL] or "(none)"
        if usd is None:
            u = self.unpriced.get(model)
            if u is None:
                u = self.unpriced[model] = [0, 0, 0, 0, 0]
            u[0] += sign
            u[1] += sign * rec[IN]
            u[2] += sign * rec[OUT]
            u[3] += sign * rec[CR]
            u[4] += sign * (rec[CW5] + rec[CW1H])
            return
        if family is not None and sign > 0:
            self.family_priced[model] = family
        for name in self._unknown_of.get(rec[KEY], ()):
            counted = self.unknown_modifiers[(name, model)] = self.unknown_modifiers.get((name, model), 0) + sign
            if not counted:
                del self.unknown_modifiers[(name, model)]
        amount = usd if sign > 0 else -usd
        group_key = (self.day_of(ts) or "unknown", model)
        g = self.by_day_model.get(group_key)
        if g is None:
            g = self.by_day_model[group_key] = _Group()
        g.calls += sign
        g.usd.append(amount)
        file_key = (sid, path, side)
        g = self.by_session_file.get(file_key)
        if g is None:
            g = self.by_session_file[file_key] = _Group()
        g.calls += sign
        g.usd.append(amount)

    # -- what the summary reads ------------------------------------------------------------------

    def usd_of(self, key: str) -> float | None:
        kept = self.best.get(key)
        return kept[4] if kept is not None else None

    def ts_of(self, key: str) -> Any:
        kept = self.best.get(key)
        return kept[2][TS] if kept is not None else None

    def session_models(self) -> dict[str, str]:
        """The model of each session's latest main-chain call (by time)."""
        return {sid: latest[2] for sid, latest in self._latest_main.items()}

    def _session_projects(self) -> dict[str, str]:
        # a subagent works for its parent session's project (its own cwd may be a worktree)
        # (files by path: of two main files of one session, the later one names the project)
        return {fr["session_id"]: fr.get("cwd") or fr["project"]
                for _, fr in sorted(self.files.items()) if not fr["subagent"]}

    def _kept_in_period(self) -> Iterator[tuple[Any, str, str, bool, float | None, Any]]:
        """Each kept call of the period: (its record, session, project, whether a subagent made it, USD, the
        family it was priced by when estimated). The groups `breakdown` and `session_days` cut."""
        session_project = self._session_projects()
        for _, _path, rec, fr, usd, family, _est in self.best.values():
            if self.in_period is not None and not self.in_period(rec[TS]):
                continue
            sid = fr["session_id"]
            yield (rec, sid, session_project.get(sid) or fr.get("cwd") or fr["project"],
                   bool(rec[SIDE] or fr["subagent"]), usd, family)

    def breakdown(self) -> dict[tuple[str, str, str], dict]:
        """The spend cut by (day, model, project): calls (main-chain apart), USD of the main chain and of
        subagents, USD priced by model family (estimated) and unpriced calls; the team push sends these.

        The same kept revisions, period and project rules as `spend`, so the groups add up to its totals.
        """
        groups: dict[tuple[str, str, str], list] = {}
        for rec, _sid, project, side, usd, family in self._kept_in_period():
            key = (self.day_of(rec[TS]) or "unknown", rec[MODEL] or "(none)", project)
            g = groups.get(key)
            if g is None:  # calls, main-chain calls, unpriced calls, main USD, subagent USD, family-priced USD
                g = groups[key] = [0, 0, 0, [], [], []]
            g[0] += 1
            if not side:
                g[1] += 1
            if usd is None:
                g[2] += 1
                continue
            (g[4] if side else g[3]).append(usd)
            if family is not None:
                g[5].append(usd)
        return {k: {"calls": g[0], "main_calls": g[1], "unpriced_calls": g[2], "main_usd": fsum(g[3]),
                    "subagents_usd": fsum(g[4]), "estimated_usd": fsum(g[5])} for k, g in sorted(groups.items())}

    def session_days(self) -> dict[tuple[str, str, str, str], dict]:
        """The spend cut by (session, day, model, project), with each group's tokens and its latest call's
        time: what a device writes to a sync folder (service/sync/), so a session seen on two devices can
        be counted once. The same kept revisions, period and project rules as `breakdown`."""
        groups: dict[tuple[str, str, str, str], dict] = {}
        for rec, sid, project, side, usd, family in self._kept_in_period():
            ts = rec[TS]
            key = (sid, self.day_of(ts) or "unknown", rec[MODEL] or "(none)", project)
            g = groups.get(key)
            if g is None:
                g = groups[key] = {"calls": 0, "main_calls": 0, "unpriced_calls": 0, "input_tokens": 0,
                                   "output_tokens": 0, "cache_write_tokens": 0, "cache_read_tokens": 0,
                                   "main_usd": [], "subagents_usd": [], "estimated_usd": [], "last_call": ""}
            g["calls"] += 1
            g["main_calls"] += 0 if side else 1
            g["input_tokens"] += rec[IN]
            g["output_tokens"] += rec[OUT]
            g["cache_write_tokens"] += rec[CW5] + rec[CW1H]
            g["cache_read_tokens"] += rec[CR]
            if isinstance(ts, str) and ts > g["last_call"]:
                g["last_call"] = ts
            if usd is None:
                g["unpriced_calls"] += 1
                continue
            g["subagents_usd" if side else "main_usd"].append(usd)
            if family is not None:
                g["estimated_usd"].append(usd)
        return {k: {**g, **{m: fsum(g[m]) for m in ("main_usd", "subagents_usd", "estimated_usd")}}
                for k, g in sorted(groups.items())}

    def day_tokens(self) -> dict[str, dict]:
        """Per day (in the report's zone) of the period: the models used and the tokens of every kept call,
        subagents and unpriced calls included, in the columns a ccusage user reads (input, output, cache
        write, cache read). The text report's daily table; its cost column is the billed `by_day`."""
        days: dict[str, dict] = {}
        for _, _path, rec, _fr, _usd, _family, _est in self.best.values():
            ts = rec[TS]
            if self.in_period is not None and not self.in_period(ts):
                continue
            day = self.day_of(ts) or "unknown"
            d = days.get(day)
            if d is None:
                d = days[day] = {"models": set(), "input_tokens": 0, "output_tokens": 0,
                                 "cache_write_tokens": 0, "cache_read_tokens": 0}
            d["models"].add(rec[MODEL] or "(none)")
            d["input_tokens"] += rec[IN]
            d["output_tokens"] += rec[OUT]
            d["cache_write_tokens"] += rec[CW5] + rec[CW1H]
            d["cache_read_tokens"] += rec[CR]
        return {day: {**d, "models": sorted(d["models"]),
                      "total_tokens": d["input_tokens"] + d["output_tokens"] + d["cache_write_tokens"]
                      + d["cache_read_tokens"]} for day, d in sorted(days.items())}

    def spend(self) -> dict:
        """Totals by model, day, project and session; money rounded by the caller."""
        session_project = self._session_projects()
        by_day: dict[str, list[float]] = {}
        by_model: dict[str, list[float]] = {}
        for (day, model), g in self.by_day_model.items():
            if g.calls:
                by_day.setdefault(day, []).extend(g.usd)
                by_model.setdefault(model, []).extend(g.usd)
        by_project: dict[str, list[float]] = {}
        sessions: dict[str, dict] = {}
        main: list[float] = []
        sub: list[float] = []
        for (sid, path, side), g in sorted(self.by_session_file.items()):
            if not g.calls:
                continue
            fr = self.files[path]
            project = session_project.get(sid) or fr.get("cwd") or fr["project"]
            by_project.setdefault(project, []).extend(g.usd)
            s = sessions.get(sid)
            if s is None:  # the session's first file by path names its project when it has no main file
                s = sessions[sid] = {"project": project, "usd": [], "subagents_usd": [], "calls": 0}
            s["usd"].extend(g.usd)
            s["calls"] += g.calls
            if side:
                s["subagents_usd"].extend(g.usd)
                sub.extend(g.usd)
            else:
                main.extend(g.usd)
        return {
            "total_usd": fsum(main + sub),
            "main_usd": fsum(main), "subagents_usd": fsum(sub), "calls": self.calls,
            "by_model": {k: fsum(v) for k, v in sorted(by_model.items())},
            "by_day": {k: fsum(v) for k, v in sorted(by_day.items())},
            "by_project": {k: fsum(v) for k, v in sorted(by_project.items())},
            "by_session": {sid: {"project": s["project"], "usd": fsum(s["usd"]),
                                 "subagents_usd": fsum(s["subagents_usd"]), "calls": s["calls"]}
                           for sid, s in sorted(sessions.items())},
            "unpriced": {m: {"calls": u[0], "input_tokens": u[1], "output_tokens": u[2], "cache_read_tokens": u[3],
                             "cache_write_tokens": u[4]} for m, u in sorted(self.unpriced.items()) if u[0]},
        }
