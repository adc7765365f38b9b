"""How often the tray restarts a dying service (pure; times are explicit seconds).

At most `max_restarts` restarts in any `window_s`, each after a growing delay;
past that it gives up and the tray says so (grey lamp, "service down").
"""
from __future__ import annotations

from dataclasses import dataclass, field

BACKOFF_S = (1.0, 5.0, 20.0)


@dataclass
class RestartPolicy:
    max_restarts: int = 3
    window_s: float = 600.0
    backoff_s: tuple[float, ...] = BACKOFF_S
    _restarts: list[float] = field(default_factory=list)

    def on_exit(self, now: float) -> float | None:
        """The service died at `now`: seconds to wait before restarting it, or None to give up."""
        recent = [t for t in self._restarts if now - t < self.window_s]
        self._restarts = recent
        if len(recent) >= self.max_restarts:
            return None
        delay = self.backoff_s[min(len(recent), len(self.backoff_s) - 1)]
        self._restarts.append(now + delay)
        return delay

    def reset(self) -> None:
        self._restarts.clear()
