"""The models one segment used: calls, spend and cache writes per model.

A `/model` switch keeps the context but not the prompt cache (the cache is per
model), so a segment's bill is the sum of its calls each priced at its own
model, and the write price of "this segment's cache" is the current model's.
Pure, like the rest of the engine.
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol


class _Billed(Protocol):
    model: str
    cw5: int
    cw1h: int
    bill_in: float
    bill_out: float


class _Spend:
    """One model's calls and its running bill, summed in call order (as the segment's bill is)."""
    __slots__ = ("before_last_in", "before_last_out", "bill_in", "bill_out", "calls")

    def __init__(self) -> None:
        self.calls: list[_Billed] = []
        self.bill_in = self.bill_out = 0.0
        self.before_last_in = self.before_last_out = 0.0  # the bill without the latest call

    def add(self, call: _Billed) -> None:
        self.calls.append(call)
        self.before_last_in, self.before_last_out = self.bill_in, self.bill_out
        self.bill_in += call.bill_in
        self.bill_out += call.bill_out

    def rebilled(self, call: _Billed) -> None:
        """A call's bill changed: the latest call's costs one addition, an older one's a new sum."""
        if self.calls[-1] is call:
            self.bill_in = self.before_last_in + call.bill_in
            self.bill_out = self.before_last_out + call.bill_out
            return
        calls, self.calls = self.calls, []
        self.bill_in = self.bill_out = 0.0
        for c in calls:
            self.add(c)


class ModelMix:
    """Cache-write tokens (exact integers) and the bill per model, kept as calls come and are revised,
    in order of first use."""

    def __init__(self) -> None:
        self._writes: dict[str, list[int]] = {}
        self._spend: dict[str, _Spend] = {}

    def add(self, call: _Billed) -> None:
        """A new call, its bill already set."""
        self.revised(call, 0, 0)
        spend = self._spend.get(call.model)
        if spend is None:
            spend = self._spend[call.model] = _Spend()
        spend.add(call)

    def rebilled(self, call: _Billed) -> None:
        """A revised call's bill was set anew."""
        self._spend[call.model].rebilled(call)

    def listed(self) -> list[dict[str, Any]]:
        """Each model's calls and spend, in order of first use (what models_listed gives for the same calls)."""
        return [{"model": model, "calls": len(s.calls), "bill_in_usd": s.bill_in, "bill_out_usd": s.bill_out}
                for model, s in self._spend.items()]

    def revised(self, call: _Billed, old_cw5: int, old_cw1h: int) -> None:
        """A call's writes changed from (old_cw5, old_cw1h) to its own (0, 0 for a new call)."""
        w = self._writes.setdefault(call.model, [0, 0])
        w[0] += call.cw5 - old_cw5
        w[1] += call.cw1h - old_cw1h

    def writes(self, model: str | None) -> tuple[int, int]:
        """(5-minute, 1-hour) cache-write tokens this model has written in the segment: they decide its p_w."""
        w = self._writes.get(model) if model is not None else None
        return (w[0], w[1]) if w is not None else (0, 0)

    def opening_model(self) -> str | None:
        return next(iter(self._writes), None)

    def __len__(self) -> int:
        return len(self._writes)


def models_listed(calls: Iterable[_Billed]) -> list[dict[str, Any]]:
    """Each model's calls and spend, in order of first use; money summed in call order, like the segment's bill."""
    uses: dict[str, dict[str, Any]] = {}
    for call in calls:
        use = uses.get(call.model)
        if use is None:
            use = uses[call.model] = {"model": call.model, "calls": 0, "bill_in_usd": 0.0, "bill_out_usd": 0.0}
        use["calls"] += 1
        use["bill_in_usd"] += call.bill_in
        use["bill_out_usd"] += call.bill_out
    return list(uses.values())


def profile_models(profile: dict[str, Any]) -> list[dict[str, Any]]:
    """A profile's per-model list; a one-model profile (which leaves it out) is its own single entry."""
    models = profile.get("models")
    if isinstance(models, list) and models:
        return models
    if profile.get("model") is None:
        return []
    return [{"model": profile.get("model"), "calls": profile.get("calls") or 0,
             "bill_in_usd": profile.get("bill_in_usd") or 0.0, "bill_out_usd": profile.get("bill_out_usd") or 0.0}]
