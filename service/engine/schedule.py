"""Many moves in a segment: the best schedule in hindsight, and what following every notice saves (measurement 14).

Section 14's single restart is one line per call; a schedule is a sequence of moves. After a
move at call k the counterfactual context is smaller than the real one by a constant drop `d_k`
(growth continues as the real session's did): a restart leaves the useful stock `B_k`
(`d = S_k − B_k`), a `/compact` the compacted prompt `C_k = F + σ_k` (`d = S_k − C_k`, the
summary `σ_k` of the conversation, which is the same whatever was dropped before). Every later
call j then carries `d` fewer tokens at what it paid for them (`carry_j`: the cache-read price,
or the write price where the call missed the cache), so with `P(n) = Σ carry_j` a move at k
is worth `d_k·(P(n) − P(k))` by call n, less its own price:

- a restart: `B_k·(p_w5 − p_r)` (the handoff's stock written once instead of read);
- a compaction: its request, which reads the counterfactual prompt `S_k − d` (section 15's `q`
  with that prompt), the summary as output, and `C_k`'s first write.

**The best schedule** is a dynamic programme over the calls: `G(k)`, the most a schedule whose
last move is at k saves by call k, is the best earlier move's line `G(i) + d_i·(P − P(i))` read
at `P(k)` (a restart) or at `P(k) + α_k` (a compaction, whose request price `α_k·(S_k − d_i)`
depends on the drop before it), less the move's price. The lines go into a Li Chao tree (the
`Envelope` of restart_savings.py), so each call costs a few walks of bounded depth.

**Following every notice** replays the segment as a user who acts on each notice would have
lived it: the counterfactual session keeps its own rent ledger (section 9's wallet, fed by the
smaller context; it starts again after each move), its reminder becomes a notice when the last
notice is at least the notice gap old (held until then), and the user takes the move the
notice names, priced by the advice (section 15) at the counterfactual prompt, after that call
("at your next break"): it is made, and paid, when the next call comes, so a notice at a
segment's last call costs nothing. The cache notice speaks too (section 16): at a pause that
reaches the cache's life less the notice's lead, the user takes the move it names (`break_move`:
a restart where the advice for a cold cache, the next call writing what it carries, names one),
made before the next call. Its moves are a
schedule the programme above also prices, so the best schedule is never below it.

Pure and deterministic, fed call by call as the replay lines are written.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from service.engine.advice import AdviceBasis, MovePrices, advise, compacted_prompt, compaction_request
from service.engine.curve import Curve
from service.engine.pickling import by_fields
from service.client.payloads import Advice, Move, Schedule
from service.engine.restart_savings import Envelope, Line, better, Node

MF_RANGE = (0.5, 4.0)  # the reminder interval's stakes, clamped (section 9): the one rule's constants
BREAKS = "restart"  # the move the cache notice names at a break: a restart, where the cold advice names one


@dataclass(frozen=True)
class NoticeRule:
    """The choices the seeds leave open (bench/advice.py tunes them): the interval's stakes range, which move
    a notice names ("cheaper": the advice's cheaper of restart and /compact; "restart": always), and which
    move the cache notice names at a break (`breaks`: "restart" where the advice for a cold cache names a
    restart; "cheaper": whichever move it names; "off": none, only to measure what the notice adds)."""

    mf_range: tuple[float, float] = MF_RANGE
    name: str = "cheaper"
    breaks: str = BREAKS

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)


RULE = NoticeRule()


def reminder_interval(p_w: float, p_r: float, b0: float, g: float, stock: float,
                      mf_range: tuple[float, float] = MF_RANGE) -> float:
    """Section 9's interval `I = p_w·B0 / clamp(mf)`: a restart's worth of rent, shorter at higher stakes."""
    if b0 <= 0 or g <= 0 or p_w <= 0 or p_r <= 0:
        return 0.0
    a_star = Curve(p_w, p_r, b0, g).a_star
    mf = (p_r * stock + p_w * g) / a_star if a_star > 0 else 1.0
    return (p_w * b0) / min(mf_range[1], max(mf_range[0], mf))


class ScheduleCall(NamedTuple):
    """One call as the schedule reads it (its replay line's figures)."""

    call: int
    t: float | None  # entry time (seconds), for the notice gap
    carry: float  # USD per prompt token the call paid for what it carried: read, or written on a miss
    rates: MovePrices  # the call's own tier: the moves' prices
    stock: int  # S
    b0: float  # B_default
    floor: float  # F
    g: float  # growth per call
    bill_in: float  # the call's prompt bill
    wallet_p_r: float  # the wallet's rates (section 9): the segment's model
    wallet_p_w: float
    ttl_s: float = 300.0  # the cache's life after this call (seconds): 1 hour where the segment writes that cache


@dataclass
class _Follower:
    """The user who follows every notice: the counterfactual session's drop, wallet and what it saved."""

    drop: float = 0.0  # tokens the counterfactual context is smaller than the real one
    offset: float = 0.0  # its useful stock against the real one (a compaction leaves C, not B)
    phase: float = 0.0
    rho: float = 0.0
    held: bool = False  # a reminder waits for the notice gap
    last_notice: float | None = None
    saved: float = 0.0
    restarts: int = 0
    compactions: int = 0
    taken: tuple[ScheduleCall, str] | None = None  # the move a notice named, made when the next call comes
    last: ScheduleCall | None = None  # the call before, for the pause the cache notice speaks in

    def step(self, c: ScheduleCall, basis: AdviceBasis, rule: NoticeRule = RULE) -> None:
        before, self.last = self.last, c
        if self.taken is None and before is not None and _break_notice(before, c, basis):
            move = cold_move(before.stock - self.drop, before.b0 + self.offset, before, basis, rule)
            if move != "continue":  # the cache notice named a move: made before this call, as a rent notice's
                self.taken = (before, move)
        if self.taken is not None:  # the user came back to work: the move is made, and paid, now
            (before, move), self.taken = self.taken, None
            self.act(before, move, basis)
        self.saved += self.drop * c.carry
        stock = c.stock - self.drop
        b0 = c.b0 + self.offset
        bill = max(0.0, c.bill_in - self.drop * c.carry)
        rho = bill * max(0.0, stock - b0) / stock if stock > 0 and b0 > 0 else 0.0
        drent, self.rho = (self.rho + rho) / 2, rho
        interval = reminder_interval(c.wallet_p_w, c.wallet_p_r, b0, c.g, stock, rule.mf_range)
        if interval > 0:
            self.phase += drent / interval
            if self.phase >= 1.0:
                self.phase -= math.floor(self.phase)
                self.held = True
        if not self.held:
            return
        if c.t is not None and self.last_notice is not None and c.t - self.last_notice < basis.notice_gap_s:
            return  # held until the gap has passed
        self.held = False
        if c.t is not None:
            self.last_notice = c.t
        self.taken = (c, named_move(stock, b0, c, basis, rule))

    def act(self, c: ScheduleCall, move: str, basis: AdviceBasis) -> None:
        if move == "restart":
            self.saved -= restart_price(c)
            self.drop, self.offset = c.stock - c.b0, 0.0
            self.restarts += 1
        elif move == "compact":
            cost, compacted = compaction_at(c, self.drop, basis)
            self.saved -= cost
            self.drop, self.offset = c.stock - compacted, compacted - c.b0
            self.compactions += 1
        else:
            return
        self.phase = self.rho = 0.0  # the counterfactual session's wallet starts again
        self.held = False  # a reminder of the session before the move is moot


def named_move(stock: float, b0: float, c: ScheduleCall, basis: AdviceBasis, rule: NoticeRule = RULE) -> str:
    """The move a notice names: the advice's cheaper of restart and /compact over the horizon (section 15)."""
    if rule.name == "restart":
        return "restart"
    a = advise(int(stock), b0, min(c.floor, stock), c.g, c.rates, basis)
    return "compact" if a["compact_usd"] < a["restart_usd"] else "restart"


def _break_notice(before: ScheduleCall, c: ScheduleCall, basis: AdviceBasis) -> bool:
    """The pause between two calls reached the cache notice: the cache's life less the notice's lead."""
    return before.t is not None and c.t is not None and c.t - before.t >= before.ttl_s - basis.idle_notice_s


def break_move(cold: Advice | None, rule: NoticeRule = RULE) -> Move:
    """The move the cache notice names, from the advice for a cold cache: the engine's snapshot and the
    followed schedule both ask this one function ("continue": the notice names none)."""
    move: Move = cold["move"] if cold is not None else "continue"
    if rule.breaks == "cheaper" or (rule.breaks == "restart" and move == "restart"):
        return move
    return "continue"


def cold_move(stock: float, b0: float, c: ScheduleCall, basis: AdviceBasis, rule: NoticeRule = RULE) -> str:
    """The move the cache notice names after call `c` at the counterfactual prompt `stock`."""
    return break_move(advise(int(stock), b0, min(c.floor, stock), c.g, c.rates, basis, cold=True), rule)


def restart_price(c: ScheduleCall) -> float:
    return c.b0 * (c.rates.p_w5 - c.rates.p_r)


def compaction_at(c: ScheduleCall, drop: float, basis: AdviceBasis) -> tuple[float, float]:
    """(price, compacted prompt) of a /compact after the call when the context is `drop` below the real one."""
    summary, compacted = compacted_prompt(c.stock, c.floor, basis.compact_keep)
    cost = compaction_request(c.stock - drop, summary, c.rates, basis.compact_write_share)
    return cost + compacted * (c.rates.p_w5 - c.rates.p_r), compacted


def _alpha(c: ScheduleCall, basis: AdviceBasis) -> float:
    """What the compaction request pays per token of the prompt it reads."""
    w = basis.compact_write_share
    return w * c.rates.p_w5 + (1 - w) * c.rates.p_r


class _FrontierEnvelope(Envelope):
    """The schedule's lines: each new move's line starts at the frontier, where the best of the earlier ones
    is, so many meet within one leaf of the deepest level (a width below a dollar amount's rounding). A leaf
    keeps, beside its own line, only the lines best at either end of its interval: the query stays a walk
    of bounded depth, off the true maximum by at most a slope difference times that width."""

    def _keep(self, node: Node, line: Line, lo: float, hi: float) -> None:
        group = [*node.kept, line]
        ends = []
        for at in (lo, hi):
            top = group[0]
            for other in group[1:]:
                if better(other, top, at):
                    top = other
            if top not in ends:
                ends.append(top)
        node.kept = ends


class _Programme:
    """The best schedule in hindsight so far (restarts, and compactions when `compact`)."""

    def __init__(self, compact: bool) -> None:
        self.compact = compact
        self.envelope: Envelope = _FrontierEnvelope()
        self.p = 0.0
        self.counts: list[tuple[int, int]] = [(0, 0)]  # per line (its `call` field): restarts, compactions
        self.envelope.add(Line(0, 0.0, 0.0, 0.0, 0.0))  # no move yet: nothing saved

    def _query(self, at: float, widen: bool = True) -> Line:
        if widen:  # past the tree: widened now so the walk stays bounded (a snapshot's query never widens)
            self.envelope.cover(at)
        line = self.envelope.best(at)
        assert line is not None  # the no-move line is always there
        return line

    def add(self, c: ScheduleCall, basis: AdviceBasis) -> None:
        self.p += c.carry
        p = self.p
        self.envelope.cover(2 * p)  # room for a snapshot's query past the latest call without widening then
        before = self._query(p)
        moves = [(before.at(p) - restart_price(c), c.stock - c.b0, before, (1, 0))]
        if self.compact:
            alpha = _alpha(c, basis)
            prior = self._query(p + alpha)
            summary, compacted = compacted_prompt(c.stock, c.floor, basis.compact_keep)
            price = alpha * c.stock + summary * c.rates.p_out + compacted * (c.rates.p_w5 - c.rates.p_r)
            moves.append((prior.at(p + alpha) - price, c.stock - compacted, prior, (0, 1)))
        for value, drop, parent, (r, k) in moves:
            if value <= before.at(p) and drop <= before.slope:
                continue  # never above the best line from here on (P only grows): not kept, the tree stays lean
            pr, pk = self.counts[parent.call]
            self.counts.append((pr + r, pk + k))
            self.envelope.add(Line(len(self.counts) - 1, drop, value - drop * p, p, 0.0))

    def best(self, carry_pending: float = 0.0) -> tuple[float, tuple[int, int]]:
        """(most saved by the latest call, (restarts, compactions) of that schedule); a pending call's
        carry price counted as it stands."""
        at = self.p + carry_pending
        line = self._query(at, widen=False)
        value = line.at(at)
        return (value, self.counts[line.call]) if value > 0 else (0.0, (0, 0))


@dataclass(frozen=True)
class ScheduleFigures:
    """A segment's schedules so far (USD, estimates)."""

    best_usd: float
    best_restarts_only_usd: float
    followed_usd: float  # signed: a notice followed can cost
    restarts_best: int
    compactions_best: int
    restarts_followed: int
    compactions_followed: int

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)

    def as_dict(self) -> Schedule:
        return {"best_usd": self.best_usd, "best_restarts_only_usd": self.best_restarts_only_usd,
                "followed_usd": self.followed_usd, "restarts_best": self.restarts_best,
                "compactions_best": self.compactions_best, "restarts_followed": self.restarts_followed,
                "compactions_followed": self.compactions_followed}


class ScheduleLedger:
    """One segment's schedules, fed call by call at the advice's basis as it stands at each call."""

    def __init__(self) -> None:
        self.both = _Programme(compact=True)
        self.restarts = _Programme(compact=False)
        self.follower = _Follower()

    def add_call(self, c: ScheduleCall, basis: AdviceBasis) -> None:
        basis = basis.bounded()
        self.both.add(c, basis)
        self.restarts.add(c, basis)
        self.follower.step(c, basis)

    def figures(self, pending: ScheduleCall | None = None, basis: AdviceBasis | None = None) -> ScheduleFigures:
        """The figures now; `pending`: the latest call, whose line is not written yet, counted as it stands."""
        follower = self.follower
        carry = 0.0
        if pending is not None:
            follower = replace(follower)
            follower.step(pending, (basis or AdviceBasis()).bounded())
            carry = pending.carry
        best, (restarts, compactions) = self.both.best(carry)
        only, _ = self.restarts.best(carry)
        return ScheduleFigures(best, only, follower.saved, restarts, compactions, follower.restarts,
                               follower.compactions)
