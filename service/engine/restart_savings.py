"""What one restart would have saved in a segment: the counterfactual of docs/measurement.md section 14.

A restart after call k carries the useful stock `B_default(k)` over with a
handoff. Every later call j of the segment then carries `a_k = totalStock(k) -
B_default(k)` fewer tokens at what it paid for them (its cache-read price, or
its cache-write price where it missed the cache), and the restart writes
the useful stock once at the 5-minute cache-write price instead of reading it:
`c_k = B_default(k) * (p_w5(k) - p_r(k))`. With `P(n)` the sum of those carry
prices of calls 1..n, a restart at k saves by call n

    savings_k(n) = a_k * (P(n) - P(k)) - c_k,

a line in P(n). The best single restart in hindsight is the upper envelope of
those lines at the current P(n). P never decreases, but the slopes come in any
order, so the envelope is kept in a Li Chao tree over P: one insertion and one
query per call, each a walk of bounded depth whatever the segment's length
(the domain doubles, and its lines are re-inserted, only when P doubles).

Pure and deterministic: the engine feeds it each call as its replay line is
written, so a replay and live ingestion give the same figures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from service.engine.pickling import by_fields
from service.client.payloads import RestartSavings, Schedule

MAX_DEPTH = 48  # the walk's bound; lines that still tie for a leaf this narrow are all kept there
FIRST_DOMAIN = 2.0 ** -16  # USD per token summed: about 30 calls at $0.50/MTok before the first doubling


class Line(NamedTuple):
    """A restart after `call`: `saving(P) = slope * P + icept` (a tuple: one is made per call)."""

    call: int
    slope: float
    icept: float
    p_at: float  # P(call): the read prices summed up to and including the restart's call
    rebuild: float  # c_k, what the handoff's rebuild costs over reading the stock

    def at(self, p: float) -> float:
        return self.slope * p + self.icept


class Node:
    __slots__ = ("kept", "left", "line", "right")

    def __init__(self, line: Line) -> None:
        self.line = line
        self.left: Node | None = None
        self.right: Node | None = None
        self.kept: list[Line] = []  # at the deepest level: every line that lost here, so none is lost


def better(a: Line, b: Line, p: float) -> bool:
    """a beats b at p: more saved, the earlier call on a tie (as the brute force picks)."""
    va, vb = a.at(p), b.at(p)
    return va > vb or (va == vb and a.call < b.call)


class Envelope:
    """The maximum of lines at query points past every line's own P (a Li Chao tree over [0, width)).

    Only insertions change the tree (a query never does), so its answers depend on the lines
    alone, not on how often or when it was asked: a replay and a live service agree to the bit.
    Lines are placed in the tree when it is next read: the tree is then the one inserting each
    line as it came would have built (every line in order, at the domain's width then), without
    the re-insertions of domain doublings no query saw, and a replay that reads it once per
    segment builds it once.
    """

    def __init__(self) -> None:
        self.width = FIRST_DOMAIN
        self._root: Node | None = None
        self._placed = 0  # lines[:_placed] are in the tree
        self.lines: list[Line] = []

    def add(self, line: Line) -> None:
        self.lines.append(line)
        if math.isfinite(line.p_at) and line.p_at * 2 >= self.width:
            while self.width <= line.p_at * 2:  # room for queries up to twice the sum so far
                self.width *= 2
            self._root, self._placed = None, 0  # built again from every line at the new width

    def cover(self, p: float) -> None:
        """Widen the domain so a query at p walks the tree (the tree is built again when next read)."""
        if math.isfinite(p) and p >= self.width:
            while self.width <= p:
                self.width *= 2
            self._root, self._placed = None, 0

    @property
    def root(self) -> Node | None:
        """The tree of every line added so far."""
        lines = self.lines
        for k in range(self._placed, len(lines)):
            self._insert(lines[k])
        self._placed = len(lines)
        return self._root

    def best(self, p: float) -> Line | None:
        """The line highest at p; past the domain (a price above every earlier one summed), by trying each."""
        if not math.isfinite(p):
            return None
        if p >= self.width:
            found: Line | None = None
            for line in self.lines:
                if found is None or better(line, found, p):
                    found = line
            return found
        node, lo, hi = self.root, 0.0, self.width
        found = None
        while node is not None:
            for line in (node.line, *node.kept):
                if found is None or better(line, found, p):
                    found = line
            mid = (lo + hi) / 2
            if p < mid:
                node, hi = node.left, mid
            else:
                node, lo = node.right, mid
        return found

    def _insert(self, line: Line) -> None:
        if self._root is None:
            self._root = Node(line)
            return
        node, lo, hi = self._root, 0.0, self.width
        # better(line, node.line, x) written out (the same arithmetic): this walk runs once or twice per call
        slope, icept, call = line.slope, line.icept, line.call
        for _ in range(MAX_DEPTH):
            mid = (lo + hi) / 2
            other = node.line
            o_slope, o_icept = other.slope, other.icept
            va, vb = slope * lo + icept, o_slope * lo + o_icept
            low_wins = va > vb or (va == vb and call < other.call)
            va, vb = slope * mid + icept, o_slope * mid + o_icept
            mid_wins = va > vb or (va == vb and call < other.call)
            if mid_wins:
                node.line, line = line, other
                slope, icept, call = o_slope, o_icept, other.call
            if low_wins != mid_wins:  # the loser can still win left of mid
                if node.left is None:
                    node.left = Node(line)
                    return
                node, hi = node.left, mid
            else:
                if node.right is None:
                    node.right = Node(line)
                    return
                node, lo = node.right, mid
        self._keep(node, line, lo, hi)  # two lines crossing within a leaf: the query weighs both

    def _keep(self, node: Node, line: Line, lo: float, hi: float) -> None:
        """A line that reached the deepest level beside `node.line`: every one is kept."""
        node.kept.append(line)


@dataclass(frozen=True)
class RestartFigures:
    """A segment's counterfactual so far (USD; call numbers are the session's)."""

    first_reminder_call: int | None
    first_reminder_usd: float  # 0 where no reminder fired; negative when that restart would have cost
    best_call: int | None  # None when no restart would have saved
    best_usd: float  # >= 0
    calls_after_reminder: int | None  # calls of the segment after its first reminder's call
    compact_first_reminder_usd: float = 0.0  # a /compact at the first reminder instead (section 14); signed
    compaction_keep: float | None = None  # the segment opened after a /compact: the share of the grown prompt kept
    schedule: Schedule | None = None  # the segment's schedules of moves (service/engine/schedule.py)
    calls: int | None = None  # calls counted, and those that missed the cache: the advice learns the share
    missed_calls: int | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)

    @classmethod
    def from_dict(cls, doc: object) -> RestartFigures | None:
        """Figures from a stored or received dict, types checked; None when it is not one."""
        if not isinstance(doc, dict):
            return None

        def call(name: str) -> int | None:
            v = doc.get(name)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"restart_savings.{name} is not a call number")
            return v

        def usd(name: str) -> float:
            v = doc.get(name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise TypeError(f"restart_savings.{name} is not an amount")
            return float(v)

        def count(name: str) -> int | None:
            v = call(name)
            if v is not None and v < 0:
                raise TypeError(f"restart_savings.{name} is not a count")
            return v

        def optional(name: str) -> float | None:
            return usd(name) if doc.get(name) is not None else None  # older rows do not have it

        return cls(call("first_reminder_call"), usd("first_reminder_usd"), call("best_call"), usd("best_usd"),
                   call("calls_after_reminder"), optional("compact_first_reminder_usd") or 0.0,
                   optional("compaction_keep"), _schedule(doc.get("schedule")), count("calls"),
                   count("missed_calls"))

    def as_dict(self) -> RestartSavings:
        return {"first_reminder_call": self.first_reminder_call, "first_reminder_usd": self.first_reminder_usd,
                "best_call": self.best_call, "best_usd": self.best_usd,
                "calls_after_reminder": self.calls_after_reminder,
                "compact_first_reminder_usd": self.compact_first_reminder_usd, "compaction_keep": self.compaction_keep,
                "schedule": self.schedule, "calls": self.calls, "missed_calls": self.missed_calls}


SCHEDULE_AMOUNTS = ("best_usd", "best_restarts_only_usd", "followed_usd")
SCHEDULE_COUNTS = ("restarts_best", "compactions_best", "restarts_followed", "compactions_followed")


def _schedule(doc: object) -> Schedule | None:
    """A stored or received `schedule`, types checked; None when absent (an older row)."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise TypeError("restart_savings.schedule is not an object")
    out: dict[str, float | int] = {}
    for name in SCHEDULE_AMOUNTS:
        v = doc.get(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise TypeError(f"restart_savings.schedule.{name} is not an amount")
        out[name] = float(v)
    for name in SCHEDULE_COUNTS:
        v = doc.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise TypeError(f"restart_savings.schedule.{name} is not a count")
        out[name] = v
    return cast("Schedule", out)


class RestartLedger:
    """One segment's restart counterfactual, fed call by call."""

    def __init__(self) -> None:
        self.envelope = Envelope()
        self.p_sum = 0.0
        self.last_call: int | None = None
        self.first_reminder: int | None = None
        self.compact_line: Line | None = None  # a /compact after the first reminder's call
        self.compaction_keep: float | None = None
        self.calls = 0
        self.missed = 0  # calls that paid more than the read price for what they carried

    def add_call(self, call: int, read_price: float, write5_price: float, total_stock: int,
                 b_default: float, carry_price: float | None = None) -> None:
        """Call `call` (numbers rise by one within a segment) at its own prices and tier; `carry_price`: what
        it paid per prompt token it carried (the read price, or the write price where it missed the cache;
        the read price when not given)."""
        self.p_sum += read_price if carry_price is None else carry_price
        self.calls += 1
        self.missed += carry_price is not None and carry_price > read_price
        slope = total_stock - b_default
        rebuild = b_default * (write5_price - read_price)
        self.envelope.add(Line(call, slope, -slope * self.p_sum - rebuild, self.p_sum, rebuild))
        self.last_call = call

    def mark_compact(self, call: int, saved_per_read: float, price: float) -> None:
        """A /compact after `call` (its first reminder's, as its line shows it): every later call reads
        `saved_per_read` fewer tokens, and the compaction costs `price` (docs/measurement.md 15). The call
        was added already: the read prices summed up to it are its restart line's."""
        if self.compact_line is not None or call != self.first_reminder:
            return
        line = self._line_of(call)
        if line is not None:
            self.compact_line = Line(call, saved_per_read, -saved_per_read * line.p_at - price, line.p_at, price)

    def mark_reminder(self, call: int) -> None:
        """A reminder was raised at `call`; only the segment's first one is the lamp's advice."""
        if self.first_reminder is None:
            self.first_reminder = call

    def _line_of(self, call: int) -> Line | None:
        lines = self.envelope.lines
        if not lines:
            return None
        pos = call - lines[0].call
        return lines[pos] if 0 <= pos < len(lines) else None

    def figures(self, pending: tuple[int, float, float, int, float, float] | None = None,
                pending_compact: tuple[float, float] | None = None) -> RestartFigures:
        """The figures now; `pending` (call, read price, write price, totalStock, B_default, carry price): the
        latest call, whose replay line is not written yet, as it stands (counted without being added);
        `pending_compact` (tokens saved per read, price): a /compact after it, when it is the first reminder's."""
        p = self.p_sum
        extra: Line | None = None
        last = self.last_call
        if pending is not None:
            call, read_price, write5_price, total_stock, b_default, carry_price = pending
            p += carry_price
            slope = total_stock - b_default
            rebuild = b_default * (write5_price - read_price)
            extra = Line(call, slope, -slope * p - rebuild, p, rebuild)
            last = call
        first_usd = compact_usd = 0.0
        after: int | None = None
        compact = self.compact_line
        if compact is None and pending_compact is not None and extra is not None \
                and extra.call == self.first_reminder:
            saved, price = pending_compact
            compact = Line(extra.call, saved, -saved * extra.p_at - price, extra.p_at, price)
        if compact is not None:
            compact_usd = compact.at(p)
        if self.first_reminder is not None:
            line = extra if extra is not None and extra.call == self.first_reminder else self._line_of(
                self.first_reminder)
            if line is not None:
                first_usd = line.at(p)
            if last is not None:
                after = max(0, last - self.first_reminder)
        top = self.envelope.best(p)
        if extra is not None and (top is None or better(extra, top, p)):
            top = extra
        best_usd, best_call = 0.0, None
        if top is not None and top.at(p) > 0:
            best_usd, best_call = top.at(p), top.call
        missed = self.missed + (pending is not None and pending[5] > pending[1])
        return RestartFigures(self.first_reminder, first_usd, best_call, best_usd, after, compact_usd,
                              self.compaction_keep, None, self.calls + (pending is not None), missed)


def restart_now(total_stock: int, b_default: float, read_price: float, write5_price: float,
                calls_ahead: float) -> dict[str, float | None]:
    """A restart after the latest call if `calls_ahead` more calls come at its read price (the reminder's estimate).

    `payback_calls`: how many later calls repay the rebuild (None when a restart drops nothing).
    """
    per_call = (total_stock - b_default) * read_price
    rebuild = b_default * (write5_price - read_price)
    return {"calls_ahead": calls_ahead, "saving_usd": per_call * calls_ahead - rebuild,
            "payback_calls": rebuild / per_call if per_call > 0 else None}
