"""The Session tab's header in words: each figure a phrase with its unit and a one-sentence tooltip.

The engine's symbols (x, xSweet, bill cycle, laps) stay in the API; here they
become "context carried", "sweet spot", "rent" and the restart notice.
"""
from __future__ import annotations

from desktop.present import fmt
from desktop.present.advice import notices_line, position_words
from service.client.textsafe import html_text
from service.client.words import RATE_SPAN_S, compactions_sentence, rent_rate
from desktop.present.lamp import STATE_WORDS, lamp_colour, lamp_state, session_name

TIPS = {
    "x": "How many times bigger the context is than its useful part (what a fresh session would need to "
         "rebuild); 1x means no dead weight.",
    "sweet": "The size at which the average cost per call, counting one restart, is lowest; past it a restart "
             "starts paying for itself.",
    "rent": "What the calls of this session paid to re-read dead weight: context a fresh session would not need.",
    "burn": "Rent paid per hour over the last half hour of work.",
    "compactions": "Compactions of this session: the ones you asked for (/compact), the ones Claude Code made "
                   "near the window's end, and those it made while you were idle.",
    "context": "Tokens re-sent with every call now, and the useful part of them: what a restart would carry over, "
               "the files ticked in the Files tab.",
}


def header_title(snapshot: dict | None) -> str:
    if not snapshot:
        return "No live session."
    state = lamp_state(snapshot)
    return (f"<b>{html_text(session_name(snapshot))}</b> — {html_text(STATE_WORDS.get(state, state))} "
            f"({html_text(lamp_colour(snapshot))} lamp)")


def header_facts(snapshot: dict | None) -> list[tuple[str, str, str]]:
    """(caption, value, tooltip) for the header's figures."""
    if not snapshot:
        return []
    x, xs = snapshot.get("x"), snapshot.get("xSweet")
    size = f"{fmt.number(x)}x its useful part" if x is not None else fmt.DASH
    sweet = f"at {fmt.number(xs)}x, {position_words(snapshot)}" if xs is not None else "not known yet"
    return [
        ("Context", f"{fmt.tokens(snapshot.get('totalStock'))} tokens, "
                    f"{fmt.tokens(snapshot.get('B_default', snapshot.get('B')))} useful",
         TIPS["context"]),
        ("Size", size, TIPS["x"]),
        ("Sweet spot", sweet, TIPS["sweet"]),
        ("Rent on dead weight", fmt.usd(snapshot.get("bill_cycle_usd")), TIPS["rent"]),
        ("Restart notice", *notices_line(snapshot)),
        ("Rent per hour", fmt.usd(rent_rate(snapshot)) if rent_rate(snapshot) is not None else
         f"after {int(RATE_SPAN_S // 60)} min of work", TIPS["burn"]),
    ] + compaction_fact(snapshot.get("compactions"))


def compaction_fact(counts: dict | None) -> list[tuple[str, str, str]]:
    """The Compactions figure, for a session that had any (live from its snapshot, ended from the overview)."""
    text = compactions_sentence(counts)
    return [("Compactions", text.split(": ", 1)[-1].rstrip("."), TIPS["compactions"])] if text else []
