"""The restart cost curve: sweet spot, landmarks and the reference skeleton.

A restarted segment that grows by g tokens a call, after N calls, pays on
average A(N) = p_w*B0/N + p_r*B0 + p_w*g + p_r*g*(N-1)/2 per call for its
prompt (docs/measurement.md section 7). Everything here is a closed form of that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from service.engine.pickling import by_fields
from service.client.payloads import Skeleton

SKELETON_POINTS = 64


@dataclass(frozen=True)
class Curve:
    p_w: float
    p_r: float
    B0: float
    g: float

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)

    def A(self, n: float) -> float:
        return self.p_w * self.B0 / n + self.p_r * self.B0 + self.p_w * self.g + self.p_r * self.g * (n - 1) / 2

    @property
    def n_star(self) -> float:
        return math.sqrt(2 * self.B0 / ((self.p_r / self.p_w) * self.g))

    @property
    def a_star(self) -> float:
        return self.A(self.n_star)

    def landmark(self, eps: float) -> float:
        """u where A rises to (1+eps)*A* on the right of the sweet spot."""
        n_star, a_star = self.n_star, self.a_star
        a = self.p_r * self.g / 2
        b = self.p_r * self.B0 + self.p_w * self.g - self.p_r * self.g / 2 - (1 + eps) * a_star
        c = self.p_w * self.B0
        disc = max(0.0, b * b - 4 * a * c)
        return ((-b + math.sqrt(disc)) / (2 * a)) / n_star

    def skeleton(self, eps_amber: float, eps_crit: float, u_now: float, with_curve: bool = True) -> Skeleton:
        u_amber = self.landmark(eps_amber)
        u_crit = self.landmark(eps_crit)
        out: Skeleton = {"u_mirror": max(0.0, 2 - u_amber), "u_amber": u_amber, "u_crit": u_crit, "curve": None}
        if with_curve:
            out["curve"] = self.sampled(max(1.2 * u_crit, 1.1 * u_now))
        return out

    def sampled(self, u_max: float) -> list[list[float]]:
        """A(u*N*)/A* at SKELETON_POINTS points over 0 < u <= u_max (A written as c/N + k + r*N)."""
        n_star, a_star = self.n_star, self.a_star
        c = self.p_w * self.B0
        k = self.p_r * self.B0 + self.p_w * self.g - self.p_r * self.g / 2
        r = self.p_r * self.g / 2
        step = u_max / SKELETON_POINTS
        pts = []
        for j in range(1, SKELETON_POINTS + 1):
            n = j * step * n_star
            pts.append([j * step, (c / n + k + r * n) / a_star])
        return pts
