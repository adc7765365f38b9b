"""Fit the Claude-to-o200k token ratio from transcripts (the ratio of docs/measurement.md section 5).

Between two consecutive main-chain calls the prompt grows by what was appended:
the first call's output, the tool results that answered it, and a little framing.
So for each such pair, growth - output = ratio * o200k(results) + overhead.
A least-squares line through those points gives the ratio (its slope) with a
standard error. Pure: entries in, numbers out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from service.engine.prices import family_of

MIN_RESULT_TOKENS = 200  # below this the framing overhead drowns the signal


@dataclass
class Fit:
    family: str
    ratio: float
    stderr: float
    overhead: float
    points: int

    @property
    def rel_error_pct(self) -> float:
        return 100.0 * self.stderr / self.ratio if self.ratio else float("inf")


def pairs(entries, count_tokens) -> list[tuple[str, int, int]]:
    """(family, o200k tokens of the results, observed growth minus output) per call pair."""
    out: list[tuple[str, int, int]] = []
    prev = None  # (key, stock, output, family)
    texts: list[str] = []
    for e in entries:
        if not isinstance(e, dict) or e.get("isSidechain") is True:
            continue
        if e.get("type") == "system" and e.get("subtype") == "compact_boundary":
            prev, texts = None, []
            continue
        msg = e.get("message")
        if not isinstance(msg, dict):
            continue
        if e.get("type") == "user" and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    c = block.get("content")
                    if isinstance(c, str):
                        texts.append(c)
                    elif isinstance(c, list):
                        texts += [b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text"]
            continue
        usage = msg.get("usage")
        if e.get("type") != "assistant" or not isinstance(usage, dict) or msg.get("model") == "<synthetic>":
            continue
        try:
            stock = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                          "cache_read_input_tokens"))
            output = int(usage.get("output_tokens") or 0)
        except (TypeError, ValueError):
            continue
        key = msg.get("id") or e.get("requestId")
        if prev is not None and key == prev[0]:  # a revision of the same response
            prev = (key, stock, max(prev[2], output), prev[3])
            continue
        if prev is not None and texts:
            n = sum(count_tokens(t) for t in texts)
            growth = stock - prev[1] - prev[2]
            if n >= MIN_RESULT_TOKENS and growth > 0:
                out.append((prev[3], n, growth))
        prev = (key, stock, output, family_of(str(msg.get("model") or "")) or "unknown")
        texts = []
    return out


def fit(points: list[tuple[str, int, int]]) -> list[Fit]:
    """One least-squares line per model family (at least 3 points)."""
    by_family: dict[str, list[tuple[int, int]]] = {}
    for fam, n, growth in points:
        by_family.setdefault(fam, []).append((n, growth))
    fits = []
    for fam, pts in sorted(by_family.items()):
        if len(pts) < 3:
            continue
        k = len(pts)
        mx = sum(n for n, _ in pts) / k
        my = sum(g for _, g in pts) / k
        sxx = sum((n - mx) ** 2 for n, _ in pts)
        if sxx <= 0:
            continue
        slope = sum((n - mx) * (g - my) for n, g in pts) / sxx
        intercept = my - slope * mx
        resid = sum((g - (intercept + slope * n)) ** 2 for n, g in pts)
        stderr = math.sqrt(resid / (k - 2) / sxx) if k > 2 else float("inf")
        fits.append(Fit(fam, slope, stderr, intercept, k))
    return fits
