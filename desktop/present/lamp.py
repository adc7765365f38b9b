"""The lamp in words and colours: its fill, state, tooltip, the followed session, the reminder's message
(pure Python, no Qt).

The modules of desktop/present/ compute what the tray and each tab show from API
dicts; the widgets (desktop/tabs/, desktop/tray.py) call them and draw the result.
Every input is a dict as docs/api.md defines it (SNAPSHOT, SERIES, CHANNEL,
PROFILE); any field may be missing or null, and the functions must still return
something sensible.
"""
from __future__ import annotations

import math
from datetime import datetime
from pathlib import PurePath

from desktop.present import fmt

# Lamp colours: fill colours chosen to read on light and dark panels (the icon adds an outline).
LAMP_FILL = {
    "white": "#f5f5f0",
    "green": "#2fbf4a",
    "amber": "#ffb300",
    "red": "#e5322d",
    "grey": "#8c8c8c",
}
LAMP_COLOURS = tuple(LAMP_FILL)
# Band fills for the cost-curve chart (translucent versions of the lamp colours).
BAND_RGBA = {
    "white": (200, 200, 200, 55),
    "green": (47, 191, 74, 55),
    "amber": (255, 179, 0, 65),
    "red": (229, 50, 45, 60),
}
STATE_WORDS = {
    "no_transcript": "no transcript",
    "insufficient_data": "not enough data yet",
    "warming": "warming up",
    "good": "good",
    "warning": "past the sweet spot",
    "critical": "restart pays",
    "service_down": "service down",
}


# ---------- lamp and tooltip ----------

def lamp_colour(snapshot: dict | None) -> str:
    """The icon colour for a snapshot; grey when there is none (service down)."""
    if not snapshot:
        return "grey"
    colour = ((snapshot.get("lamp") or {}).get("colour") or "white").lower()
    return colour if colour in LAMP_FILL and colour != "grey" else "white"


def lamp_state(snapshot: dict | None) -> str:
    if not snapshot:
        return "service_down"
    return (snapshot.get("lamp") or {}).get("state") or "no_transcript"


def session_name(snapshot: dict) -> str:
    """A short human name: the project folder and the first characters of the session id."""
    sid = str(snapshot.get("session_id") or "?")
    project = snapshot.get("project") or ""
    folder = PurePath(project).name if project else ""
    return f"{folder} · {sid[:8]}" if folder else sid[:8]


def tooltip_text(snapshot: dict | None, now: float, down_reason: str | None = None) -> str:
    """The tray tooltip. Computed when shown (the cache countdown is not ticked)."""
    if not snapshot:
        lines = ["ctxlamp — service down"]
        lines.append(down_reason or "The ctxlamp service is not running.")
        return "\n".join(lines)
    lamp = snapshot.get("lamp") or {}
    state = lamp_state(snapshot)
    lines = [f"ctxlamp — {STATE_WORDS.get(state, state)} ({lamp_colour(snapshot)})",
             session_name(snapshot)]
    x, xs = snapshot.get("x"), snapshot.get("xSweet")
    if lamp.get("reason") and xs is None:  # the engine's words only where the figures below are missing
        lines.append(str(lamp["reason"]))
    if xs is not None:
        lines.append(f"context {fmt.number(x)}x its useful part; sweet spot at {fmt.number(xs)}x")
        dhat = snapshot.get("dhat")
        if dhat is not None:
            d = float(dhat)
            if d >= 0:
                lines.append(f"{math.ceil(d)} calls to the sweet spot")
            else:
                lines.append(f"{math.ceil(-d)} calls past the sweet spot")
    elif x is not None:
        lines.append(f"context {fmt.number(x)}x its useful part")
    rent, br = snapshot.get("bill_cycle_usd"), snapshot.get("br")
    lines.append(f"rent so far {fmt.usd(rent)} · burn {fmt.usd(br)}/h")
    advice = advice_sentence(snapshot)
    if advice:
        lines.append(advice)
    cache = snapshot.get("cache") or {}
    exp = fmt.parse_time(cache.get("expires_at"))
    cold = cache.get("cold_rewrite_usd")
    if exp is not None:
        left = exp - now
        if left > 0:
            # a clock time stays true without ticking; the menu shows the live countdown when opened
            clock = datetime.fromtimestamp(exp).strftime("%H:%M:%S")
            lines.append(f"cache warm until {clock}; after that the next turn re-writes {fmt.usd(cold)}")
            if cold:  # the cache is per model: a switch (or fast mode on or off) misses it now
                lines.append(f"switching model now re-writes {fmt.usd(cold)}")
        else:
            lines.append(f"cache expired: the next turn re-writes {fmt.usd(cold)}")
    return "\n".join(lines)


def pick_followed(sessions: dict[str, dict], service_followed: str | None, chosen: str | None) -> str | None:
    """Which session the lamp shows: the user's choice while live, else the service's, else the newest."""
    if chosen and chosen in sessions:
        return chosen
    if service_followed and service_followed in sessions:
        return service_followed
    if not sessions:
        return None
    return max(sessions, key=lambda sid: fmt.parse_time(sessions[sid].get("updated_at")) or 0.0)


def menu_sessions(sessions: dict[str, dict], followed: str | None) -> list[tuple[str, str, bool]]:
    """(session_id, label, checked) for the tray menu, newest first."""
    order = sorted(sessions, key=lambda sid: fmt.parse_time(sessions[sid].get("updated_at")) or 0.0, reverse=True)
    out = []
    for sid in order:
        snap = sessions[sid]
        out.append((sid, f"{session_name(snap)} — {lamp_colour(snap)}", sid == followed))
    return out


# ---------- reminder ----------

def reminder_message(reminder: dict, snapshot: dict | None = None) -> tuple[str, str]:
    """Title and body of the restart reminder, stamped with its lap.

    A reminder counts rent already paid; the lamp shows the position against the
    sweet spot. When the lamp is not amber or red yet, the body says why both hold.
    """
    lap = int(reminder.get("lap") or 1)
    worth = "a restart's" if lap == 1 else f"{lap} restarts'"
    title = f"ctxlamp: you have paid {worth} worth of rent"
    parts = []
    restart = reminder.get("restart_usd")
    rent = reminder.get("rent_usd")
    pp = reminder.get("payback_calls")
    if rent is not None:
        parts.append(f"Rent on dead weight so far: {fmt.usd(rent)}.")
    if restart is not None:
        parts.append(f"A restart costs {fmt.usd(restart)} to rebuild the useful context")
        if pp is not None:
            parts[-1] += f" and pays for itself after {max(1, math.ceil(float(pp)))} calls."
        else:
            parts[-1] += "."
    estimate = restart_now_note(reminder.get("restart_now"))
    if estimate:
        parts.append(estimate)
    advice = advice_sentence(snapshot)
    if advice:
        parts.append(advice)
    colour = lamp_colour(snapshot) if snapshot else None
    if colour in ("white", "green"):
        parts.append(early_reminder_note(snapshot))
    parts.append("Prepare a handoff, then start a fresh session.")
    return title, " ".join(parts)


MOVE_NOW = {"compact": "/compact now", "restart": "A restart now"}
MOVE_ALSO = {"compact": "/compact", "restart": "a restart"}


def advice_sentence(snapshot: dict | None) -> str:
    """The cheapest move and its saving in one line (docs/measurement.md 15), the other move's saving after it:
    "/compact now saves about $0.40 over the next 30 calls; a restart about $0.55." Empty while going on is
    cheapest, and until the move saves its own price again (`pays_twice`): a move that only breaks even over
    the coming calls lost more often than it saved (bench/advice.py)."""
    advice = (snapshot or {}).get("advice")
    if not isinstance(advice, dict) or advice.get("move") not in MOVE_NOW or advice.get("pays_twice") is not True:
        return ""
    try:
        ahead = max(1, round(float(advice["horizon_calls"])))
        keep_going = float(advice["continue_usd"])
        saves = {m: keep_going - float(advice[f"{m}_usd"]) for m in MOVE_NOW}
    except (KeyError, TypeError, ValueError):
        return ""
    move = advice["move"]
    if not saves[move] > 0:
        return ""
    text = f"{MOVE_NOW[move]} saves about {fmt.usd(saves[move])} over the next {fmt.plural(ahead, 'call')}"
    other = "restart" if move == "compact" else "compact"
    if saves[other] > 0:
        text += f"; {MOVE_ALSO[other]} about {fmt.usd(saves[other])}"
    return text + " (estimate)."


def restart_now_note(estimate: dict | None) -> str:
    """What a restart now would save over the calls this user's sessions usually run after a reminder."""
    if not isinstance(estimate, dict) or estimate.get("calls_ahead") is None or estimate.get("saving_usd") is None:
        return ""
    ahead = max(0, round(float(estimate["calls_ahead"])))
    saving = float(estimate["saving_usd"])
    runs = f"{fmt.plural(ahead, 'more call')}, as your sessions usually do after a reminder"
    if saving <= 0:
        return f"Estimate: over {runs}, a restart now would not earn its rebuild back."
    text = f"Estimate: if this session runs on for {runs}, a restart now saves about {fmt.usd(saving)}"
    payback = estimate.get("payback_calls")
    if payback is not None:
        text += f"; it pays for itself after {fmt.plural(max(1, math.ceil(float(payback))), 'call')}"
    return text + "."


def early_reminder_note(snapshot: dict | None) -> str:
    """Why a reminder can come while the lamp is still white or green."""
    dhat = (snapshot or {}).get("dhat")
    when = ""
    if dhat is not None and float(dhat) > 0:
        when = f" in about {math.ceil(float(dhat))} calls"
    return (f"The lamp is still {lamp_colour(snapshot)}: it judges the cost of the next calls against the sweet "
            f"spot (amber{when or ' later'}); this reminder counts the rent already paid on dead weight, which has "
            "reached a restart's price.")
