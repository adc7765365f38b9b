"""The lamp in words and colours: its fill, its state, the followed session (pure Python, no Qt; what the
tray says about it is desktop/present/advice.py).

The modules of desktop/present/ compute what the tray and each tab show from API
dicts; the widgets (desktop/tabs/, desktop/tray.py) call them and draw the result.
Every input is a dict as docs/api.md defines it (SNAPSHOT, SERIES, CHANNEL,
PROFILE); any field may be missing or null, and the functions must still return
something sensible.
"""
from __future__ import annotations


from desktop.present import fmt
from service.client import words
# how a session is named, in the window as in the terminal (re-exported: the tabs name sessions through here)
from service.client.words import project_name, session_label, session_name  # noqa: F401

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
# The glossary's words for each state (the terminal's table), and the one only a window can be in.
STATE_WORDS = {**words.STATE_WORDS, "service_down": "service down"}


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
