"""Every word the tray says about a session: the tooltip, the notices, and the advice the Session tab
shows with its explanation (pure Python, no Qt).

One place, so the lamp and the reminders speak with one voice: a notice says what
to do and what it saves in two lines, never contradicting the lamp's colour; the
why is one click away (the popup's "Why?" button, or the Session tab a tray
notice opens). When a notice is given is desktop/present/coalesce.py's rule.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime

from desktop.present import fmt
from service.client import words
from desktop.present.coalesce import RED
from desktop.present.lamp import STATE_WORDS, lamp_colour, lamp_state, session_name


@dataclass(frozen=True)
class Notice:
    title: str
    body: str  # two lines: what to do, what it saves
    why: str   # the explanation, one click away


# ---------- the tooltip ----------

def tooltip_text(snapshot: dict | None, now: float, down_reason: str | None = None,
                 idle_compaction: bool = True) -> str:
    """The tray tooltip. Computed when shown (the cache countdown is not ticked). `idle_compaction`: Claude
    Code's settings leave its idle compaction on (the status's `claude_code`)."""
    if not snapshot:
        return "\n".join(["ctxlamp — service down", down_reason or "The ctxlamp service is not running."])
    lamp = snapshot.get("lamp") or {}
    state = lamp_state(snapshot)
    lines = [f"ctxlamp — {STATE_WORDS.get(state, state)} ({lamp_colour(snapshot)})", session_name(snapshot)]
    x, xs = snapshot.get("x"), snapshot.get("xSweet")
    if lamp.get("reason") and xs is None:  # the engine's words only where the figures below are missing
        lines.append(str(lamp["reason"]))
    if xs is not None:
        lines.append(f"context {fmt.number(x)}x its useful part; sweet spot at {fmt.number(xs)}x")
        if snapshot.get("dhat") is not None:
            lines.append(position_words(snapshot))
    elif x is not None:
        lines.append(f"context {fmt.number(x)}x its useful part")
    lines.append(f"rent so far {fmt.usd(snapshot.get('bill_cycle_usd'))}{notice_given(snapshot)}"
                 f" · {words.per_hour(snapshot)}")
    move = words.advice_line(snapshot, now)  # the move, or after the notice its second line, as the snapshot stands
    if move:
        lines.append(move)
        reconcile = words.move_and_colour(lamp_colour(snapshot))  # one sentence for a move under white or green
        if reconcile:
            lines.append(reconcile)
    return "\n".join(lines + cache_lines(snapshot.get("cache") or {}, now, idle_compaction))


def cache_lines(cache: dict, now: float, idle_compaction: bool = True) -> list[str]:
    """The prompt cache in the tooltip: warm until when and what its expiry will cost, or, once cold, the
    rewrite beside the fresh start (docs/measurement.md 16); Claude Code's idle compaction when it is due."""
    exp = fmt.parse_time(cache.get("expires_at"))
    cold = cache.get("cold_rewrite_usd")
    if exp is None:
        return []
    if exp - now <= 0:
        return [line[0].lower() + line[1:] for line in words.cold_cache_lines(cache)]
    # a clock time stays true without ticking; the menu shows the live countdown when opened
    clock = datetime.fromtimestamp(exp).strftime("%H:%M:%S")
    lines = [f"cache warm until {clock}; after that your next message rewrites {fmt.usd(cold)}"]
    move = words.break_move_sentence(cache)  # said once the cache is cold (and in the notice before it expires)
    fresh = [line for line in words.cold_cache_lines(cache)[1:] if line != move]
    if fresh:
        lines.append(fresh[0][0].lower() + fresh[0][1:])
    idle_at = fmt.parse_time(cache.get("idle_compact_at"))
    if idle_at is not None and idle_at > now and idle_compaction:
        lines.append(words.idle_compaction_line(cache, datetime.fromtimestamp(idle_at).strftime("%H:%M")))
    if cold:  # the cache is per model: a switch (or fast mode on or off) misses it now
        lines.append(f"switching model now rewrites {fmt.usd(cold)}")
    return lines


def move_sentence(snapshot: dict | None) -> str:
    """The cheapest move and its saving in one line, once it pays twice (service/client/words.py)."""
    return words.move_sentence(snapshot)


def position_words(snapshot: dict) -> str:
    """Where the session stands against the sweet spot, in calls (the command line's words too)."""
    return words.position(snapshot)


def notice_given(snapshot: dict) -> str:
    """' (notice at call 32)' once this stretch's notice was given: money and notices, not the rent's laps."""
    first = (snapshot.get("restart_savings") or {}).get("first_reminder_call")
    return f" (notice at call {first})" if first is not None else ""


# ---------- the notices ----------

def notice_text(told: dict, snapshot: dict | None = None, several: bool = False) -> Notice:
    """The notice for a decision of desktop/present/coalesce.py: title, two lines, and the why."""
    reminder = told.get("reminder") or {}
    red = told.get("kind") == RED
    who = f" · {session_name(snapshot)}" if several and snapshot else ""
    title = f"ctxlamp{who}: {words.NOTICE_HEAD[red]}"
    body = f"{words.NOTICE_DO[red]}\n{saving_line(reminder, snapshot)}"
    return Notice(title, body, notice_why(red, reminder, snapshot))


def saving_line(reminder: dict, snapshot: dict | None) -> str:
    """What the move saves, as briefly as the figures allow: the priced moves once one pays twice, else the
    restart's estimate, else its payback (the terminal's notices say the same, service/client/words.py)."""
    return words.saving_line(reminder, snapshot)


def notice_why(red: bool, reminder: dict, snapshot: dict | None, notice: bool = True) -> str:
    """The explanation behind a notice: which signal spoke, and why it does not contradict the lamp."""
    colour = lamp_colour(snapshot) if snapshot else None
    rent = reminder.get("rent_usd", (snapshot or {}).get("bill_cycle_usd"))
    parts = []
    if red:
        parts.append("The lamp turns red when every further call costs more than restarting would on average: "
                     "the context is well past its sweet spot.")
    else:
        parts.append(f"The calls have paid {fmt.usd(rent)} to re-read dead weight (context a fresh session "
                     "would not need); the notice comes when that rent first reaches what rebuilding the useful "
                     "part once costs.")
        if colour in ("white", "green"):
            dhat = (snapshot or {}).get("dhat")
            if dhat is not None and float(dhat) <= 0:  # green runs past the sweet spot too (docs/glossary.md)
                parts.append(f"The lamp is {colour}: no hurry, the context is still around its sweet spot; a "
                             "restart at a natural break already pays.")
            else:
                when = f" in about {fmt.plural(math.ceil(float(dhat)), 'call')}" if dhat is not None else " later"
                parts.append(f"The lamp is {colour}: no hurry, the sweet spot comes{when}; a restart at a natural "
                             "break already pays.")
    if not notice:
        return " ".join(parts)
    estimate = reminder.get("restart_now")
    if isinstance(estimate, dict) and estimate.get("calls_ahead") is not None:
        parts.append("The saving counts the calls your sessions usually run after this advice, at what they "
                     "would re-read without the dead weight, less one rebuild.")
    parts.append("Later rent adds to the figures in the tooltip and the Session tab, without another notice; "
                 "the lamp's colour is shown, not announced.")
    return " ".join(parts)


# ---------- the Session tab ----------

def session_advice(snapshot: dict | None, now: float | None = None) -> tuple[str, str]:
    """(the advice now, its explanation) for the Session tab: the notice's words, said as the lamp stands, then
    the move the tooltip, the status line and `ctxlamp status` name with the same figures."""
    if not snapshot:
        return "", ""
    advice, why = _advice_as_the_lamp_stands(snapshot)
    now = time.time() if now is None else now
    move = words.advice_line(snapshot, now)
    if not move and words.cache_cold(snapshot, now):  # the tab shows no cache lines: the cache's move here (459)
        move = words.break_move_sentence(snapshot.get("cache"))
    if not move:
        return advice, why
    colour = lamp_colour(snapshot)
    reconcile = words.move_and_colour(colour) if f"The lamp is {colour}:" not in why else ""
    return f"{advice} {move}", f"{reconcile} {why}".strip()


def _advice_as_the_lamp_stands(snapshot: dict) -> tuple[str, str]:
    colour = lamp_colour(snapshot)
    laps = int(snapshot.get("laps") or 0)
    if colour == "red":
        return notice_text({"kind": RED}, snapshot).body.splitlines()[0], notice_why(True, {}, snapshot, False)
    if laps:
        first = ((snapshot.get("restart_savings") or {}).get("first_reminder_call"))
        at = f" (the notice came at call {first})" if first is not None else ""
        return (f"Restart at your next break{at}: rent on dead weight so far "
                f"{fmt.usd(snapshot.get('bill_cycle_usd'))}.",
                notice_why(False, {}, snapshot, False))
    if colour == "amber":
        return ("Past the sweet spot: a restart soon pays for itself.",
                "The lamp is amber: the average cost per call, counting one restart, is past its lowest. A notice "
                "comes when the rent on dead weight reaches a restart's cost.")
    if colour == "green":
        if move_sentence(snapshot):  # a move pays already: "No restart needed" would contradict it
            return f"Good: {position_words(snapshot)}.", ""  # the reconciling sentence explains it
        return (f"No restart needed: {position_words(snapshot)}.",
                "The lamp is green: the context carries little dead weight yet.")
    return ("Warming up: the advice starts once the session has grown.",
            "The lamp is white until the session is large enough to judge.")


def notices_line(snapshot: dict | None) -> tuple[str, str]:
    """The Session header's figure for the advice: when it was given, apart from the rent's laps."""
    laps = int((snapshot or {}).get("laps") or 0)
    tip = ("The tray gives one notice per stretch of work, the first time the rent on dead weight reaches a "
           "restart's cost; later rent updates the figures only. The lamp's colour is shown, not announced.")
    if not laps:
        return "none yet", tip
    first = ((snapshot or {}).get("restart_savings") or {}).get("first_reminder_call")
    at = f"at call {first}" if first is not None else "given"
    return f"{at}; rent so far {fmt.usd((snapshot or {}).get('bill_cycle_usd'))}", tip
