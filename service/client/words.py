"""The user-facing words of the command line (docs/glossary.md): the lamp's advice per state.

The engine's identifiers (`critical`, `xSweet`, `laps`, segment numbers, session ids) stay in
`--json` and the API; what a terminal prints says the glossary's words, the window's.
"""
from __future__ import annotations

import math
from pathlib import PurePath

# lamp.state -> what the lamp advises (the window's words)
STATE_WORDS = {
    "no_transcript": "no transcript",
    "insufficient_data": "warming up",
    "warming": "warming up",
    "good": "good",
    "warning": "past the sweet spot",
    "critical": "restart pays",
}
COLOURS = ("white", "green", "amber", "red")


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def colour_of(snapshot: dict) -> str:
    colour = str((snapshot.get("lamp") or {}).get("colour") or "white").lower()
    return colour if colour in COLOURS else "white"


def advice(snapshot: dict) -> str:
    state = str((snapshot.get("lamp") or {}).get("state") or "no_transcript")
    return STATE_WORDS.get(state, state)


def position(snapshot: dict, plural=plural) -> str:
    """Whole calls to or past the sweet spot (the window's and the tooltip's count); `plural` formats the
    count (the window passes its own, with thousands separators)."""
    dhat = snapshot.get("dhat")
    if dhat is None:
        return "no sweet spot yet"
    d = float(dhat)
    return (f"{plural(math.ceil(d), 'call')} to the sweet spot" if d >= 0
            else f"{plural(math.ceil(-d), 'call')} past the sweet spot")


def project_name(snapshot: dict) -> str:
    """A session as a user knows it: its project folder (the session id stays in --json)."""
    project = str(snapshot.get("project") or "")
    return PurePath(project).name or project or "(no project folder)"


def usd(v) -> str:
    if v is None:
        return "-"
    v = float(v)
    return f"${v:,.2f}" if abs(v) >= 1 else f"${v:.3f}" if abs(v) >= 0.01 else f"${v:.4f}"


def saving_line(reminder: dict, snapshot: dict | None = None, usd=usd, plural=plural) -> str:
    """What a restart now saves, as briefly as the figures allow: the estimate over the calls this user's
    sessions usually run after a reminder, else its payback, else the rent paid (a notice's second line,
    in the tray and the terminal alike; the window passes its own money and count formats)."""
    estimate = reminder.get("restart_now") or (snapshot or {}).get("restart_now")
    if isinstance(estimate, dict) and estimate.get("calls_ahead") is not None and estimate.get("saving_usd") is not None:
        ahead = plural(max(0, round(float(estimate["calls_ahead"]))), "more call")
        saving = float(estimate["saving_usd"])
        if saving > 0:
            return f"Saves about {usd(saving)} if the session runs {ahead} (estimate)."
        return f"Over {ahead} a restart would not earn its rebuild back (estimate)."
    restart = reminder.get("restart_usd")
    pp = reminder.get("payback_calls", (snapshot or {}).get("pp"))
    if restart is not None and pp is not None:
        return (f"A restart costs {usd(restart)} and pays for itself after "
                f"{plural(max(1, math.ceil(float(pp))), 'call')}.")
    if pp is not None:
        return f"A restart pays for itself after {plural(max(1, math.ceil(float(pp))), 'call')}."
    return f"Rent paid on dead weight so far: {usd(reminder.get('rent_usd', (snapshot or {}).get('bill_cycle_usd')))}."
