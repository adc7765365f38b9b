"""When the tray speaks: the rent ledger's reminder is the one rule that raises a notice naming a move
(pure; times are explicit seconds).

The engine raises a reminder at every rent lap, and past the sweet spot laps come
every few calls. A user is told one piece of advice, per stretch of work (a segment)
and session:

- the first reminder of a stretch is a notice ("restart at your next break", or
  "restart pays now" when the lamp is already red);
- later laps of that stretch update the figures and the tooltip, never a notice;
- the lamp's colour is shown, not announced: turning red raises no notice;
- at most one notice per `min_gap` per session: a notice that comes sooner is held
  and shown when the gap has passed.

Nothing is shown while snoozed or paused; what arrives then is dropped (the lamp
carries the continuous signal). docs/architecture.md ("What the tray says") gives
the same rules for users.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MIN_GAP_S = 600.0
DEFAULT_SNOOZE_S = 1800.0
RENT = "rent"  # the rent paid on dead weight reached a restart's cost: restart at the next break
RED = "red"    # the lamp's red colour, which a notice raised while red is worded for ("restart pays now")


@dataclass
class _SessionState:
    segment: int = -1
    last_lap: tuple[int, int] = (-1, -1)  # (segment, lap) of the newest reminder seen
    told: set[str] = field(default_factory=set)  # the kinds of notice decided in this stretch
    last_shown_at: float | None = None
    pending: dict | None = None
    snoozed_until: float = 0.0


def notice(kind: str, session_id: str, segment: int, reminder: dict | None) -> dict:
    """One notice: its kind (RED: raised while the lamp was red, worded so), its session and stretch, and the
    reminder that raised it."""
    return {"kind": kind, "session_id": session_id, "segment": segment, "reminder": reminder,
            "lap": int((reminder or {}).get("lap") or 0)}


@dataclass
class ReminderCoalescer:
    min_gap_s: float = DEFAULT_MIN_GAP_S
    paused: bool = False
    _sessions: dict[str, _SessionState] = field(default_factory=dict)

    def _state(self, session_id: str) -> _SessionState:
        return self._sessions.setdefault(session_id, _SessionState())

    @staticmethod
    def _enter(st: _SessionState, segment: int) -> None:
        if segment > st.segment:  # a new stretch of work: its advice is given afresh
            st.segment, st.told, st.pending = segment, set(), None

    def offer(self, reminder: dict, now: float, colour: str | None = None) -> dict | None:
        """A reminder arrived (the lamp showing `colour`): the notice to show now, else None."""
        sid = str(reminder.get("session_id") or "")
        st = self._state(sid)
        segment = int(reminder.get("segment") or 0)
        stamp = (segment, int(reminder.get("lap") or 0))
        if stamp <= st.last_lap:
            return None  # a repeat (e.g. after reconnecting to the stream) or an older lap
        st.last_lap = stamp
        if segment < st.segment:
            return None
        self._enter(st, segment)
        if st.told:
            return None  # a later lap of the stretch: the figures and the tooltip say it
        return self._speak(st, notice(RED if colour == RED else RENT, sid, segment, reminder), now)

    def observe(self, session_id: str, segment: int, colour: str, now: float, quiet: bool = False) -> None:
        """A snapshot: a new stretch starts its advice afresh. The colour is shown, never announced."""
        st = self._state(session_id)
        if segment >= st.segment:
            self._enter(st, segment)

    def _speak(self, st: _SessionState, told: dict, now: float) -> dict | None:
        st.told.add(RENT)
        if self.paused or now < st.snoozed_until:
            st.pending = None
            return None
        if st.last_shown_at is None or now >= st.last_shown_at + self.min_gap_s:
            st.pending = None
            st.last_shown_at = now
            return told
        st.pending = told
        return None

    def next_due(self) -> float | None:
        """When a held notice becomes due (for one single-shot timer), or None."""
        dues = [st.last_shown_at + self.min_gap_s for st in self._sessions.values()
                if st.pending is not None and st.last_shown_at is not None]
        return min(dues) if dues else None

    def due(self, now: float) -> list[dict]:
        """Held notices whose gap has passed: show these now."""
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
