"""The three moves priced at every call: go on, `/compact` now, or restart with a handoff (docs/measurement.md 15).

Each move is priced as what the prompt side of the next `horizon` calls would cost after it,
the move's own price included, at the latest call's model and tier:

- carrying a prompt of `X` tokens that grows by `g` a call costs, over `H` calls,
  `carry(X, H) = H·p_r·X + p_r·g·H(H−1)/2 + H·p_w·g` (reading it, writing what each call adds);
- *continue*: `carry(S, H)`, S the latest call's prompt;
- *restart*: the handoff's useful stock `B0` written once instead of read, then carried:
  `B0·(p_w5 − p_r) + carry(B0, H)`; its difference with continue is section 14's saving;
- *compact*: the compaction request (it reads the whole prompt, a share `w` of it written to the
  cache because its own system prompt misses the cache, and writes the summary `σ` as output),
  then the compacted prompt `C = F + σ` written once and carried:
  `S·(w·p_w5 + (1−w)·p_r) + σ·p_out + C·(p_w5 − p_r) + carry(C, H)`, with the summary
  `σ = min(keep·S, S − F)`, F the segment's floor and `keep` what past compactions kept
  (Claude Code's `postTokens / preTokens`).

**Once the cache has gone cold** (`cold`: a pause past the cache's life) the next call writes the whole
prompt it carries, whichever move came before it: each move's first call pays `p_w` instead of its
carry price for its starting prompt (`S`, `B0` or `C`). So at a break a restart saves the dead weight
written again: the cache notice names the restart where this advice names one (docs/measurement.md 16).

A share `m` of the coming calls miss the cache (this user's history: the share of calls that wrote
more than half their prompt again); those pay the write price `p_w` for what they carry, so
`carry` reads at `p_r + m·(p_w − p_r)` a token (docs/measurement.md 14's miss pricing).

`H`, `keep`, `w` and `m` come from an `AdviceBasis`: this user's history where the service has one,
documented defaults otherwise. Pure: the same call, prices and basis give the same advice, so
replay and live ingestion agree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from service.engine.pickling import by_fields
from service.client.payloads import Advice, Move

MOVES: tuple[Move, ...] = ("continue", "compact", "restart")  # on a tie the earlier: never a move for nothing

DEFAULT_HORIZON_CALLS = 30.0
DEFAULT_COMPACT_KEEP = 0.06
DEFAULT_COMPACT_WRITE_SHARE = 1.0
HORIZON_RANGE = (1.0, 2000.0)
DEFAULT_NOTICE_GAP_S = 600.0  # reminders.min_gap's default: at most one notice per session this often
NOTICE_GAP_RANGE = (0.0, 7 * 86400.0)
DEFAULT_IDLE_NOTICE_S = 60.0  # limits.idle_notice_s's default: the cache notice comes this long before expiry
IDLE_NOTICE_RANGE = (0.0, 3600.0)


@dataclass(frozen=True)
class AdviceBasis:
    """What the advice assumes of what comes next, and where each figure came from.

    horizon_calls: how many more calls the segment runs (this user's median run after a reminder);
    compact_keep: the summary's size against the prompt it summarized (`postTokens / preTokens`);
    compact_write_share: the share of the compaction request's prompt written to the cache;
    notice_gap_s: the least time between two notices (`reminders.min_gap`), for the followed schedule;
    miss_share: the share of calls that miss the cache (they write what they carry);
    idle_notice_s: how long before the cache expires its notice comes (`limits.idle_notice_s`), for the
    followed schedule: a pause this close to the cache's life or longer is a break the notice spoke in.
    """

    horizon_calls: float = DEFAULT_HORIZON_CALLS
    compact_keep: float = DEFAULT_COMPACT_KEEP
    compact_write_share: float = DEFAULT_COMPACT_WRITE_SHARE
    notice_gap_s: float = DEFAULT_NOTICE_GAP_S
    miss_share: float = 0.0
    idle_notice_s: float = DEFAULT_IDLE_NOTICE_S

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)

    def bounded(self) -> AdviceBasis:
        """The same basis inside its ranges (history can hold anything a transcript wrote)."""
        def clamp(v: float, lo: float, hi: float, default: float) -> float:
            return min(hi, max(lo, v)) if math.isfinite(v) else default

        return AdviceBasis(clamp(self.horizon_calls, *HORIZON_RANGE, DEFAULT_HORIZON_CALLS),
                           clamp(self.compact_keep, 0.0, 1.0, DEFAULT_COMPACT_KEEP),
                           clamp(self.compact_write_share, 0.0, 1.0, DEFAULT_COMPACT_WRITE_SHARE),
                           clamp(self.notice_gap_s, *NOTICE_GAP_RANGE, DEFAULT_NOTICE_GAP_S),
                           clamp(self.miss_share, 0.0, 1.0, 0.0),
                           clamp(self.idle_notice_s, *IDLE_NOTICE_RANGE, DEFAULT_IDLE_NOTICE_S))


@dataclass(frozen=True)
class MovePrices:
    """The latest call's rates (USD per token) at its model and tier; `p_w` the segment's write price."""

    p_r: float
    p_w: float
    p_w5: float
    p_out: float

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)


def carry(prompt: float, growth: float, horizon: float, p: MovePrices, miss_share: float = 0.0) -> float:
    """The prompt side of `horizon` calls that start at `prompt` tokens and grow by `growth` each, a share
    `miss_share` of them missing the cache (paying the write price for what they carry)."""
    p_carry = p.p_r + miss_share * (p.p_w - p.p_r)
    return horizon * p_carry * prompt + p_carry * growth * horizon * (horizon - 1) / 2 + horizon * p.p_w * growth


def compacted_prompt(stock: float, floor: float, keep: float) -> tuple[float, float]:
    """(summary tokens σ, prompt after the compaction C = F + σ); the summary never outgrows the growth."""
    summary = min(keep * stock, max(0.0, stock - floor))
    return summary, floor + summary


def compaction_request(stock: float, summary: float, p: MovePrices, write_share: float) -> float:
    """The compaction's own request: the whole prompt read (a share of it written), the summary as output."""
    return stock * (write_share * p.p_w5 + (1 - write_share) * p.p_r) + summary * p.p_out


def compaction_price(stock: float, summary: float, compacted: float, p: MovePrices, write_share: float) -> float:
    """What a compaction costs beyond the calls it shortens: its request and the compacted prompt's first write."""
    return compaction_request(stock, summary, p, write_share) + compacted * (p.p_w5 - p.p_r)


def advise(stock: int, b_default: float, floor: float, growth: float, p: MovePrices,
           basis: AdviceBasis, cold: bool = False) -> Advice:
    """The three moves after a call whose prompt was `stock` tokens, over `basis.horizon_calls` calls;
    `cold`: the cache has gone cold, so the next call writes the prompt each move leaves."""
    h = basis.horizon_calls
    m = basis.miss_share
    # the first call's carry at the write price, not the expected one, once the cache is cold
    rewrite = (p.p_w - (p.p_r + m * (p.p_w - p.p_r))) if cold else 0.0
    keep_going = carry(stock, growth, h, p, m) + rewrite * stock
    restart = b_default * (p.p_w5 - p.p_r) + carry(b_default, growth, h, p, m) + rewrite * b_default
    summary, compacted = compacted_prompt(stock, floor, basis.compact_keep)
    own = {"continue": 0.0, "restart": b_default * (p.p_w5 - p.p_r),
           "compact": compaction_price(stock, summary, compacted, p, basis.compact_write_share)}
    compact = own["compact"] + carry(compacted, growth, h, p, m) + rewrite * compacted
    priced = {"continue": keep_going, "compact": compact, "restart": restart}
    move = min(MOVES, key=lambda m: (priced[m], MOVES.index(m)))
    saves = keep_going - priced[move]
    return {"move": move, "horizon_calls": h, "continue_usd": keep_going, "compact_usd": compact,
            "restart_usd": restart, "saves_usd": saves, "label": "estimated",
            "pays_twice": move != "continue" and saves >= own[move]}


def compaction_keep(pre_tokens: float, post_tokens: float) -> float | None:
    """What a real compaction kept, `post / pre` in [0, 1], or None when the figures cannot say."""
    if not (math.isfinite(pre_tokens) and pre_tokens > 0 and math.isfinite(post_tokens)):
        return None
    return min(1.0, max(0.0, post_tokens / pre_tokens))
