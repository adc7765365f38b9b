"""The status line's text, from plain facts (pure: no I/O; the clock is an argument).

Facts: `session` (the service's compact view of the session: lamp, dhat, bill_cycle_usd,
advice, cache) or None, `service` ("up", "down", "busy"), `limits` (window -> {used_percentage,
resets_at epoch s}), `turn` (the last turn's share of the 5-hour window) or None,
`cache_expires_at` (epoch s), `cache_warm` (Claude Code's own word), `recache_tokens` (what it says a
cold next message rewrites), `handoff` (a handoff from before the break exists) and `context_pct`. A
window's `runs_out_at` (epoch s, from the service) shows as "full 15:40" in place of its reset when the
pace fills it first. The template picks and orders the parts:
pieces separated by `|`, each holding `{part}` placeholders and literal text; a piece whose
parts are all empty is left out, the rest are joined with " · ".
"""

import time

from service.client.figures import tokens, usd

PARTS = ("lamp", "position", "advice", "rent", "limits", "turn", "cache", "context", "rewrite")
DEFAULT_FORMAT = "{lamp} {position} | {advice} | rent {rent} | {limits} | {turn} | {cache}"
MOVE_WORDS = {"compact": "/compact", "restart": "restart"}
GLYPH = {"green": "●", "amber": "●", "red": "●", "white": "○", "grey": "◌"}
_SGR = {"green": "32", "amber": "33", "red": "31", "white": "97", "grey": "90"}
SEP = " · "


def placeholders(template: str) -> list[str]:
    """The `{name}` placeholders of a template, in order; ValueError on an unclosed brace."""
    names, i = [], 0
    while True:
        start = template.find("{", i)
        if start < 0:
            break
        end = template.find("}", start)
        if end < 0:
            raise ValueError("unclosed { in the status-line format")
        names.append(template[start + 1:end])
        i = end + 1
    return names


def check_format(template: str) -> str:
    """The template, or ValueError naming what is wrong (the config's validator calls this)."""
    unknown = [n for n in placeholders(template) if n not in PARTS]
    if unknown:
        raise ValueError(f"unknown status-line part(s) {', '.join(map(repr, unknown))}; known: {', '.join(PARTS)}")
    return template


def _without_controls(text: str) -> str:
    """`text` without C0/C1 control characters (the config refuses them; an older file or answer may not)."""
    return "".join(ch for ch in text if not (ch < " " or "\x7f" <= ch <= "\x9f"))


def paint(text: str, colour: str | None, color: bool) -> str:
    return f"\033[{_SGR[colour]}m{text}\033[0m" if color and colour in _SGR and text else text


def _clock(epoch: float, now: float) -> str:
    """A reset time as the user reads it: 17:00 today, else the weekday too."""
    t = time.localtime(epoch)
    if epoch - now < 20 * 3600:
        return time.strftime("%H:%M", t)
    return time.strftime("%a %H:%M", t)


def _pct_colour(pct: float) -> str | None:
    return "red" if pct >= 95 else "amber" if pct >= 80 else None


def lamp_part(f: dict, color: bool) -> str:
    s = f.get("session")
    if s is None:
        words: dict[object, str] = {"down": "ctxlamp off", "busy": "ctxlamp busy"}
        word = words.get(f.get("service"), "ctxlamp: not measured yet")
        return paint(f"{GLYPH['grey']} {word}", "grey", color)
    lamp = s.get("lamp") or {}
    colour = lamp["colour"] if lamp.get("colour") in GLYPH else "white"
    return paint(f"{GLYPH[colour]} {colour}", colour, color)


def position_part(f: dict, color: bool) -> str:
    s = f.get("session") or {}
    state = (s.get("lamp") or {}).get("state")
    if state == "critical":
        return paint("restart pays", "red", color)
    dhat = s.get("dhat")
    if isinstance(dhat, (int, float)) and state in ("good", "warning"):
        n = int(-(-abs(dhat) // 1))  # whole calls, rounded up
        if dhat >= 0:
            return f"{n} call{'s' if n != 1 else ''} to sweet spot"
        return f"{n} call{'s' if n != 1 else ''} past sweet spot"
    words: dict[object, str] = {"warming": "warming up", "insufficient_data": "warming up", "no_transcript": "no transcript"}
    return words.get(state, "")


def advice_part(f: dict, color: bool) -> str:
    """The cheapest move and what it saves over the coming calls (docs/measurement.md 15); empty while going on
    is cheapest and until the move saves its own price again (`pays_twice`)."""
    advice = (f.get("session") or {}).get("advice")
    if not isinstance(advice, dict) or advice.get("move") not in MOVE_WORDS or advice.get("pays_twice") is not True:
        return ""
    saves, ahead = advice.get("saves_usd"), advice.get("horizon_calls")
    if not isinstance(saves, (int, float)) or not saves > 0 or not isinstance(ahead, (int, float)):
        return ""
    return f"{MOVE_WORDS[advice['move']]} saves ~{usd(saves)}/{max(1, round(ahead))} calls"


def rewrite_part(f: dict, color: bool) -> str:
    """What switching model (or fast mode) now costs: the whole prompt written to the cache again."""
    cold = ((f.get("session") or {}).get("cache") or {}).get("cold_rewrite_usd")
    return f"switch rewrites {usd(cold)}" if isinstance(cold, (int, float)) and cold > 0 else ""


def rent_part(f: dict, color: bool) -> str:
    rent = (f.get("session") or {}).get("bill_cycle_usd")
    return usd(rent) if isinstance(rent, (int, float)) and rent > 0 else ""


def limits_part(f: dict, color: bool, now: float) -> str:
    limits = f.get("limits") or {}
    out = []
    for name, label in (("five_hour", "5h"), ("seven_day", "week"), ("spend_limit", "spend")):
        w = limits.get(name)
        if not isinstance(w, dict) or not isinstance(w.get("used_percentage"), (int, float)):
            continue
        pct = float(w["used_percentage"])
        text = paint(f"{label} {pct:.0f}%", _pct_colour(pct), color)
        resets, full = w.get("resets_at"), w.get("runs_out_at")
        if isinstance(full, (int, float)) and full > now and (not isinstance(resets, (int, float)) or full < resets):
            text += " " + paint(f"full {_clock(full, now)}", "amber", color)  # at this pace, before the reset
        elif isinstance(resets, (int, float)) and resets > now:
            text += f" resets {_clock(resets, now)}"
        out.append(text)
    return SEP.join(out)


def turn_part(f: dict, color: bool) -> str:
    turn = f.get("turn")
    if not isinstance(turn, dict) or not isinstance(turn.get("delta_pct"), (int, float)):
        return ""
    bound = "≤" if turn.get("label") == "upper bound" else ""
    return f"last turn {bound}{turn['delta_pct']:.1f}% of 5h"


def _money(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9 \
        else None


def cold_words(f: dict) -> str:
    """A cold cache priced (docs/measurement.md 16): "cache cold: next msg rewrites $0.90 · fresh start $0.13"
    (the fresh start "restart w/ handoff" when a handoff from before the break exists), or, where the cache
    notice names a move (the engine's `break_move`), that move: "cache cold: next msg rewrites $0.90 · restart
    saves ~$1.01/30 calls" ("restart w/ handoff saves ..." with one). Without the service, Claude Code's own
    count of what the next message rewrites, else the bare fact."""
    cache = (f.get("session") or {}).get("cache") or {}
    rewrite, fresh = _money(cache.get("cold_rewrite_usd")), _money(cache.get("fresh_start_usd"))
    if rewrite is None:
        recache = f.get("recache_tokens")
        return f"cache cold: next msg rewrites {tokens(recache)} tokens" if isinstance(recache, int) and recache > 0 \
            else "cache cold"
    text = f"cache cold: next msg rewrites {usd(rewrite)}"
    move = _break_move(cache, f.get("handoff") is True)
    if move and len(text + move) <= 80:  # the move the notice names says more than the fresh start's price
        return text + move
    if fresh is not None and fresh < rewrite:
        text += f"{SEP}{'restart w/ handoff' if f.get('handoff') is True else 'fresh start'} {usd(fresh)}"
    return text


def _break_move(cache: dict, handoff: bool) -> str:
    """The cache notice's move and what it saves once the cache is cold, as the tray says it ("restart w/
    handoff" where the session left one before its break); empty without."""
    move, cold = cache.get("break_move"), cache.get("cold_advice")
    if move not in MOVE_WORDS or not isinstance(cold, dict):
        return ""
    keep_going, priced, ahead = (_money(cold.get(k)) for k in ("continue_usd", f"{move}_usd", "horizon_calls"))
    if keep_going is None or priced is None or ahead is None or not keep_going - priced > 0:
        return ""
    name = "restart w/ handoff" if handoff and move == "restart" else MOVE_WORDS[move]
    return f"{SEP}{name} saves ~{usd(keep_going - priced)}/{max(1, round(ahead))} calls"


def _cold(f: dict, now: float) -> bool:
    """The prompt cache has expired: Claude Code's word first, else its expiry."""
    expires = f.get("cache_expires_at")
    return f.get("cache_warm") is False or (isinstance(expires, (int, float)) and expires - now < 1)


def cache_part(f: dict, color: bool, now: float) -> str:
    expires = f.get("cache_expires_at")
    if _cold(f, now):
        return paint(cold_words(f), "amber", color)
    if not isinstance(expires, (int, float)):
        return ""
    left = int(expires - now)
    return f"cache {left // 60}:{left % 60:02d}"


def context_part(f: dict, color: bool) -> str:
    pct = f.get("context_pct")
    return f"ctx {pct:.0f}%" if isinstance(pct, (int, float)) else ""


def _says_break_move(f: dict, now: float) -> bool:
    """The cache is cold and its part names the cache notice's move: that move, priced for the cold cache, is
    the one said, so the advice's part (priced warm) stays out (decision 459)."""
    if not _cold(f, now):
        return False
    move = _break_move((f.get("session") or {}).get("cache") or {}, f.get("handoff") is True)
    return bool(move) and move in cold_words(f)


def parts(facts: dict, color: bool, now: float) -> dict[str, str]:
    return {"lamp": lamp_part(facts, color), "position": position_part(facts, color),
            "advice": "" if _says_break_move(facts, now) else advice_part(facts, color),
            "rewrite": rewrite_part(facts, color),
            "rent": rent_part(facts, color), "limits": limits_part(facts, color, now),
            "turn": turn_part(facts, color), "cache": cache_part(facts, color, now),
            "context": context_part(facts, color)}


def render(facts: dict, template: str = DEFAULT_FORMAT, color: bool = True, now: float | None = None) -> str:
    """One line: the template's pieces with their parts filled in; empty pieces left out."""
    now = time.time() if now is None else now
    template = _without_controls(template)  # the format's own text must not steer the terminal
    try:
        names = placeholders(template)
    except ValueError:
        template, names = DEFAULT_FORMAT, placeholders(DEFAULT_FORMAT)
    if any(n not in PARTS for n in names):
        template = DEFAULT_FORMAT
    values = parts(facts, color, now)
    pieces = []
    for piece in template.split("|"):
        used = placeholders(piece)
        if used and not any(values[n] for n in used):
            continue
        text = piece
        for n in used:
            text = text.replace("{" + n + "}", values[n], 1) if "{" + n + "}" in text else text
        text = " ".join(text.split())  # an empty part leaves no double space
        if text:
            pieces.append(text)
    return SEP.join(pieces)
