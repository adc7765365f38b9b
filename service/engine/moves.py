"""The open segment's three moves, priced from the engine's own figures (docs/measurement.md section 15).

The glue between `SessionEngine` and the pure formulas of service/engine/advice.py: which rates a
move is priced at (the latest call's model and tier), the compaction counterfactual at the first
reminder (section 14), and what a real `/compact` kept, learnt when the segment it opened has its floor.
"""
from __future__ import annotations

from typing import Any, Protocol

from service.engine.advice import AdviceBasis, MovePrices, advise, compacted_prompt, compaction_keep, \
    compaction_price
from service.engine.prices import PriceTable
from service.client.payloads import Advice
from service.engine.restart_savings import RestartLedger


class CallFigures(Protocol):
    """What the moves read of a call: its model (speed and geography too) and prompt."""

    model: str
    speed: str | None
    geo: str | None

    @property
    def stock(self) -> int: ...


class SegmentFigures(Protocol):
    """What the moves read and set of the open segment."""

    floor: int | None
    compacted_from: tuple[float, float, float | None] | None
    restart: RestartLedger


def _count(v: object) -> float | None:
    return float(v) if not isinstance(v, bool) and isinstance(v, (int, float)) and v >= 0 else None


def compacted_from(floor: int | None, last_stock: int | None,
                   meta: dict[str, Any]) -> tuple[float, float, float | None] | None:
    """(prompt the /compact summarized, the closing segment's floor, the summary's tokens if Claude Code
    wrote them): `preTokens`, else the closing segment's latest prompt; None when it had no call."""
    if floor is None:
        return None
    pre = _count(meta.get("preTokens")) or (float(last_stock) if last_stock else None)
    return (pre, float(floor), _count(meta.get("postTokens"))) if pre else None


class SegmentMoves:
    """The moves of one segment as it stands: `advice` after its latest call, `compact_at` a past call."""

    def __init__(self, seg: SegmentFigures, prices: PriceTable, basis: AdviceBasis, writes_1h: bool) -> None:
        self.seg = seg
        self.prices = prices
        self.basis = basis.bounded()
        self.writes_1h = writes_1h

    def _rates(self, call: CallFigures) -> MovePrices | None:
        """The call's rates at its model, speed, geography and tier, as section 14 prices its restart."""
        if not call.model:
            return None
        stock = call.stock
        price, _ = self.prices.lookup(call.model, call.speed, call.geo)
        if price is None:
            return None
        tier = price.for_prompt(stock)
        return MovePrices(p_r=tier.p_r, p_w=tier.p_w1h if self.writes_1h else tier.p_w5, p_w5=tier.p_w5,
                          p_out=tier.p_out)

    def advice(self, last: CallFigures | None, b_default: float, growth: float, cold: bool = False) -> Advice | None:
        """The moves after the latest call (`cold`: once the cache has gone cold); None before the segment's
        first call or without a price."""
        seg = self.seg
        if last is None or seg.floor is None:
            return None
        rates = self._rates(last)
        if rates is None or rates.p_r <= 0:
            return None
        return advise(last.stock, b_default, seg.floor, growth, rates, self.basis, cold)

    def compact_at(self, call: CallFigures) -> tuple[float, float] | None:
        """A /compact after `call`: (tokens each later call would read less, what the compaction costs)."""
        rates = self._rates(call)
        if rates is None or self.seg.floor is None:
            return None
        summary, compacted = compacted_prompt(call.stock, self.seg.floor, self.basis.compact_keep)
        price = compaction_price(call.stock, summary, compacted, rates, self.basis.compact_write_share)
        return call.stock - compacted, price

    def opened(self, seg: SegmentFigures) -> None:
        """The segment's first call fixed its floor: what the /compact before it kept, when one did."""
        if seg.compacted_from is not None and seg.floor is not None:
            pre, floor_before, post = seg.compacted_from
            if post is None:  # an older Claude Code: what the new floor holds beyond the old one
                post = max(0.0, seg.floor - floor_before)
            seg.restart.compaction_keep = compaction_keep(pre, post)
