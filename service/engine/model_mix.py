"""The models one segment used: calls, spend and cache writes per model.

A `/model` switch keeps the context but not the prompt cache (the cache is per
model), so a segment's bill is the sum of its calls each priced at its own
model, and the write price of "this segment's cache" is the current model's.
Pure, like the rest of the engine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol


class _Billed(Protocol):
    model: str
    cw5: int
    cw1h: int
    bill_in: float
    bill_out: float


@dataclass
class ModelUse:
    """One model's share of a segment."""
    model: str
    calls: int = 0
    bill_in: float = 0.0
    bill_out: float = 0.0
    cw5: int = 0   # cache-write tokens by TTL: they decide which write price this model's cache pays
    cw1h: int = 0

    def listed(self) -> dict:
        return {"model": self.model, "calls": self.calls,
                "bill_in_usd": self.bill_in, "bill_out_usd": self.bill_out}


class ModelMix:
    """Per-model tallies of a segment, in order of first use."""

    def __init__(self) -> None:
        self._uses: dict[str, ModelUse] = {}

    def add(self, call: _Billed) -> None:
        use = self._uses.get(call.model)
        if use is None:
            use = self._uses[call.model] = ModelUse(call.model)
        use.calls += 1
        use.bill_in += call.bill_in
        use.bill_out += call.bill_out
        use.cw5 += call.cw5
        use.cw1h += call.cw1h

    def rebuild(self, calls: Iterable[_Billed]) -> None:
        """Re-sum from the calls in order (after a revision): to the bit what the final revisions alone give."""
        self._uses = {}
        for call in calls:
            self.add(call)

    def writes(self, model: str | None) -> tuple[int, int]:
        """(5-minute, 1-hour) cache-write tokens this model has written in the segment."""
        use = self._uses.get(model) if model is not None else None
        return (use.cw5, use.cw1h) if use is not None else (0, 0)

    def opening_model(self) -> str | None:
        return next(iter(self._uses), None)

    def __len__(self) -> int:
        return len(self._uses)

    def listed(self) -> list[dict]:
        return [use.listed() for use in self._uses.values()]


def profile_models(profile: dict) -> list[dict]:
    """A profile's per-model list; a one-model profile (which leaves it out) is its own single entry."""
    models = profile.get("models")
    if isinstance(models, list) and models:
        return models
    if profile.get("model") is None:
        return []
    return [{"model": profile.get("model"), "calls": profile.get("calls") or 0,
             "bill_in_usd": profile.get("bill_in_usd") or 0.0, "bill_out_usd": profile.get("bill_out_usd") or 0.0}]
