"""When a restart reminder may speak (pure; times are explicit seconds).

The engine raises a reminder at every lap; past the sweet spot laps come every
few calls. The desktop speaks at most once per `min_gap` per session: a lap that
arrives sooner is held, a newer lap replaces the held one, and the held one is
shown when the gap has passed. Nothing is shown while snoozed or paused; what
arrives then is dropped (the lamp carries the continuous signal, and the next
lap after the snooze speaks again).
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MIN_GAP_S = 600.0
DEFAULT_SNOOZE_S = 1800.0


@dataclass
class _SessionState:
    last_shown_at: float | None = None
    last_lap: tuple[int, int] = (-1, -1)  # (segment, lap) of the newest reminder seen
    pending: dict | None = None
    snoozed_until: float = 0.0


@dataclass
class ReminderCoalescer:
    min_gap_s: float = DEFAULT_MIN_GAP_S
    paused: bool = False
    _sessions: dict[str, _SessionState] = field(default_factory=dict)

    def _state(self, session_id: str) -> _SessionState:
        return self._sessions.setdefault(session_id, _SessionState())

    def offer(self, reminder: dict, now: float) -> dict | None:
        """A reminder arrived: returns it if it should pop now, else None (held or dropped)."""
        sid = str(reminder.get("session_id") or "")
        st = self._state(sid)
        stamp = (int(reminder.get("segment") or 0), int(reminder.get("lap") or 0))
        if stamp <= st.last_lap:
            return None  # a repeat (e.g. after reconnecting to the stream) or an older lap
        st.last_lap = stamp
        if self.paused or now < st.snoozed_until:
            st.pending = None
            return None
        if st.last_shown_at is None or now >= st.last_shown_at + self.min_gap_s:
            st.pending = None
            st.last_shown_at = now
            return reminder
        st.pending = reminder  # the newest lap replaces an older held one
        return None

    def next_due(self) -> float | None:
        """When a held reminder becomes due (for one single-shot timer), or None."""
        dues = [st.last_shown_at + self.min_gap_s for st in self._sessions.values()
                if st.pending is not None and st.last_shown_at is not None]
        return min(dues) if dues else None

    def due(self, now: float) -> list[dict]:
        """Held reminders whose gap has passed: show these now."""
        out = []
        for st in self._sessions.values():
            if st.pending is None or st.last_shown_at is None:
                continue
            if self.paused or now < st.snoozed_until:
                st.pending = None
                continue
            if now >= st.last_shown_at + self.min_gap_s:  # the same sum as next_due(): no float gap
                out.append(st.pending)
                st.pending = None
                st.last_shown_at = now
        return out

    def snooze(self, session_id: str, now: float, duration_s: float = DEFAULT_SNOOZE_S) -> None:
        st = self._state(session_id)
        st.snoozed_until = now + duration_s
        st.pending = None

    def snoozed(self, session_id: str, now: float) -> bool:
        return now < self._state(session_id).snoozed_until

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        if paused:
            for st in self._sessions.values():
                st.pending = None
