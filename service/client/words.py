"""The user-facing words of the command line (docs/glossary.md): the lamp's advice per state.

The engine's identifiers (`critical`, `xSweet`, `laps`, segment numbers, session ids) stay in
`--json` and the API; what a terminal prints says the glossary's words, the window's.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import PurePath, PureWindowsPath

from service.client.figures import DASH, count, percent, plural, size, tokens, usd

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


def colour_of(snapshot: dict) -> str:
    colour = str((snapshot.get("lamp") or {}).get("colour") or "white").lower()
    return colour if colour in COLOURS else "white"


def advice(snapshot: dict) -> str:
    state = str((snapshot.get("lamp") or {}).get("state") or "no_transcript")
    return STATE_WORDS.get(state, state)


def position(snapshot: dict) -> str:
    """Whole calls to or past the sweet spot (the window's, the tooltip's and the terminal's count)."""
    dhat = snapshot.get("dhat")
    if dhat is None:
        return "no sweet spot yet"
    d = float(dhat)
    return (f"{plural(math.ceil(d), 'call')} to the sweet spot" if d >= 0
            else f"{plural(math.ceil(-d), 'call')} past the sweet spot")


def parse_time(value) -> float | None:
    """ISO-8601 (with Z or offset) or epoch seconds -> epoch seconds; None if unreadable."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()


def when(value, now: float | None = None, short: bool = False) -> str:
    """A moment in local time: "today 14:05", "Mon 30 Nov 14:05" this year (`short`: "30 Nov 14:05", for
    a table's column), else with the year."""
    t = parse_time(value)
    if t is None:
        return DASH
    local = datetime.fromtimestamp(t)
    today = datetime.fromtimestamp(now) if now is not None else datetime.now()
    if local.date() == today.date():
        return f"today {local:%H:%M}"
    if local.year == today.year:
        return f"{local.day} {local:%b %H:%M}" if short else f"{local:%a} {local.day} {local:%b %H:%M}"
    return f"{local.day} {local:%b %Y %H:%M}"


# Rent per hour is the rent of the last half hour of work scaled to an hour; over a shorter span the scaling
# says more about the span than the session (a minute of demo read "$128 per hour"), so it waits for this much.
RATE_SPAN_S = 600.0


def rent_rate(snapshot: dict) -> float | None:
    """Rent per hour (`br`) once the session has RATE_SPAN_S of calls behind it, else None."""
    br = snapshot.get("br")
    began, last = parse_time(snapshot.get("started_at")), parse_time(snapshot.get("updated_at"))
    if br is None or began is None or last is None or last - began < RATE_SPAN_S:
        return None
    return float(br)


def per_hour(snapshot: dict) -> str:
    """"$0.45 per hour", or when it is too early to say so."""
    from service.client.figures import usd

    rate = rent_rate(snapshot)
    return f"{usd(rate)} per hour" if rate is not None else f"per hour: after {int(RATE_SPAN_S // 60)} minutes of work"


FAST_SUFFIX = "-fast"  # the report books a model's fast-mode calls as "<model>-fast" (docs/api.md)


# Names two releases share ("Sonnet 3.5" was released in June and again in October 2024): a dated id of
# one of them is told apart by its release month. tests/unit/report/test_model_names.py holds every
# model of resources/prices.json to a name of its own.
SHARED_NAMES = frozenset({"Sonnet 3.5"})
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _is_date(part: str) -> bool:
    return len(part) == 8 and part.isdigit() and 1 <= int(part[4:6]) <= 12


def model_name(model: str | None) -> str:
    """"claude-sonnet-4-5" -> "Sonnet 4.5", "claude-3-7-sonnet-20250219" -> "Sonnet 3.7", a fast call's
    "claude-opus-5-5-fast" -> "Opus 5.5 (fast)", "claude-3-5-sonnet-20240620" -> "Sonnet 3.5 (Jun 2024)"
    (SHARED_NAMES); a dated id and its plain one are one name, an unknown shape stays as it is (the id
    itself stays in --json and the API)."""
    if not model or model == "(none)":
        return "unknown model"
    model = str(model)
    fast = ""
    if model.endswith(FAST_SUFFIX) and len(model) > len(FAST_SUFFIX):  # the API's label of fast calls
        model, fast = model[:-len(FAST_SUFFIX)], " (fast)"
    parts = model.split("-")
    if parts[0] != "claude" or len(parts) < 2:
        return model + fast
    rest = parts[1:]
    date = rest.pop() if len(rest) > 1 and _is_date(rest[-1]) else None
    latest = len(rest) > 1 and rest[-1] == "latest"
    lead = 0
    while lead < len(rest) and rest[lead].isdigit() and len(rest[lead]) <= 2:
        lead += 1  # the older ids put the version first: claude-3-5-haiku
    if lead == len(rest):
        return model + fast
    family = rest[lead]
    version = rest[:lead] or [p for p in rest[lead + 1:] if p.isdigit() and len(p) <= 2]
    if len(version) == 2 and version[1] == "0":  # claude-opus-4-0 is claude-opus-4
        version = version[:1]
    name = f"{family.capitalize()} {'.'.join(version)}".strip()
    if name in SHARED_NAMES:
        if date is not None:
            name += f" ({_MONTHS[int(date[4:6]) - 1]} {date[:4]})"
        elif latest:
            name += " (latest)"
    return name + fast


def unrecorded_output(estimate_usd) -> str:
    """The estimate of what placeholder outputs really wrote, worded apart from the measured figures (the
    report's text and the Overview)."""
    return f"about {usd(estimate_usd)} of output Claude Code did not record"


def kept_copies(block: dict) -> str:
    """The service's kept copies of transcripts (GET /api/v1/status: service.kept_transcripts), in words."""
    files, nbytes = int(block.get("files") or 0), int(block.get("bytes") or 0)
    held = f"{plural(files, 'file')}, {size(nbytes)}"
    if not block.get("on"):
        return f"off ({held} kept before); turned on by transcripts.keep_copies with history.store_prompts"
    return f"{held}: read once Claude Code deletes a transcript"


def project_name(project: str | None) -> str:
    """The project folder's name ("webshop" for /home/dev/webshop, and for C:\\Users\\dev\\webshop: a
    transcript written on Windows and read here, in a sync folder or a copied history, names it so too)."""
    if not project:
        return "unknown project"
    text = str(project)
    path = PureWindowsPath(text) if "\\" in text and "/" not in text else PurePath(text)
    return path.name or text


def session_label(project: str | None, started_at: str | None, now: float | None = None) -> str:
    """A session as docs/glossary.md names it, in the window and the terminal alike: its project folder and
    when it started ("webshop · started today 09:12"); the session id stays in --json and the API."""
    folder = project_name(project)
    return f"{folder} · started {when(started_at, now)}" if started_at else folder


def session_name(snapshot: dict, now: float | None = None) -> str:
    """A live session's name (session_label), from its snapshot."""
    return session_label(snapshot.get("project"), snapshot.get("started_at"), now)


# A notice's head and what to do: the tray's and the terminal's alike (red: the lamp turned red)
NOTICE_HEAD = {False: "restart at your next break", True: "restart pays now"}
NOTICE_DO = {False: "Rent on dead weight has reached a restart's cost: prepare a handoff.",
             True: "The lamp is red: prepare a handoff, then start a fresh session."}


MOVE_NOW = {"compact": "/compact now", "restart": "A restart now"}
# said under a move while the lamp is white or green: the colour and the move answer two questions. Green runs on
# both sides of the sweet spot (docs/glossary.md), so the sentence says "around", true on either side of it.
MOVE_WHILE_GREEN = ("The lamp is green because the context is still around its sweet spot; the move pays "
                    "because the calls already re-read enough dead weight.")
MOVE_WHILE_WHITE = ("The lamp is white because the session is still too young to judge; the move pays "
                    "because the calls already re-read enough dead weight.")
MOVE_ALSO = {"compact": "/compact", "restart": "a restart"}
# the cache notice's move: made at the break, before the next message rewrites the prompt
MOVE_AT_BREAK = {"compact": "/compact", "restart": "A restart"}


def move_and_colour(colour: str) -> str:
    """The one sentence that reconciles a move with a white or green lamp (empty for amber and red)."""
    return {"white": MOVE_WHILE_WHITE, "green": MOVE_WHILE_GREEN}.get(colour, "")


def _priced_move(advice: object, names: dict[str, str], pays_twice: bool, move: object = None,
                 other: bool = True) -> str:
    """The advice's cheapest move (or `move`) and its saving, with `other` the other move's after it; empty
    while going on is cheapest (or, with `pays_twice`, until the move saves its own price again)."""
    if not isinstance(advice, dict):
        return ""
    move = advice.get("move") if move is None else move
    if move not in MOVE_NOW or (pays_twice and advice.get("pays_twice") is not True):
        return ""
    try:
        ahead = max(1, round(float(advice["horizon_calls"])))
        keep_going = float(advice["continue_usd"])
        saves = {m: keep_going - float(advice[f"{m}_usd"]) for m in MOVE_NOW}
    except (KeyError, TypeError, ValueError, OverflowError):
        return ""
    if not saves[move] > 0:
        return ""
    text = f"{names[move]} saves about {usd(saves[move])} over the next {plural(ahead, 'call')}"
    second = "restart" if move == "compact" else "compact"
    if other and saves[second] > 0:
        text += f"; {MOVE_ALSO[second]} about {usd(saves[second])}"
    return text + " (estimate)."


def move_sentence(snapshot: dict | None) -> str:
    """The cheapest move and its saving in one line (docs/measurement.md 15), the other move's saving after it:
    "/compact now saves about $0.40 over the next 30 calls; a restart about $0.55 (estimate)." Empty while
    going on is cheapest, and until the move saves its own price again (`pays_twice`): a move that only
    breaks even over the coming calls lost more often than it saved (bench/advice.py)."""
    return _priced_move((snapshot or {}).get("advice"), MOVE_NOW, pays_twice=True)


def break_move_sentence(cache: dict | None) -> str:
    """The move the cache notice names (docs/measurement.md 16), the engine's `break_move`: a restart where the
    advice for a cold cache (the next message writes again all it carries) names one, priced by that advice.
    "A restart saves about $1.10 over the next 30 calls (estimate)." (within 80 columns) Empty where it names
    none."""
    if not isinstance(cache, dict) or cache.get("break_move") not in MOVE_AT_BREAK:
        return ""
    return _priced_move(cache.get("cold_advice"), MOVE_AT_BREAK, pays_twice=False, move=cache["break_move"],
                        other=False)


def restart_cost(snapshot: dict | None) -> float | None:
    """What a restart's rebuild costs now: the useful part written at the price the cold prompt would be
    (the reminder's `restart_usd`, from the snapshot it was raised with); None without a priced cache."""
    snap = snapshot or {}
    stock, cold = snap.get("totalStock") or 0, _amount((snap.get("cache") or {}).get("cold_rewrite_usd"))
    useful = _amount(snap.get("B_default"))
    return cold * useful / stock if cold is not None and useful is not None and stock else None


def cache_cold(snapshot: dict | None, now: float) -> bool:
    """The session's prompt cache has expired by `now`: its next message writes the whole prompt again."""
    expires = parse_time(((snapshot or {}).get("cache") or {}).get("expires_at"))
    return expires is not None and expires <= now


def advice_line(snapshot: dict | None, now: float | None = None) -> str:
    """The move and what it saves, as the tooltip, the Session tab and `ctxlamp status` say it as the session
    stands: the priced moves once one pays twice; after the stretch's notice, the notice's second line priced
    from this snapshot (so the figures the notice gave stay in sight, moving as the rent does); else nothing.
    Once the cache is cold (by `now`) and the cache notice names a move, that move, priced for the cold
    cache, is the one said (in the cache's lines): nothing here, so one move has one figure (decision 459)."""
    if now is not None and cache_cold(snapshot, now) and break_move_sentence((snapshot or {}).get("cache")):
        return ""
    move = move_sentence(snapshot)
    if move or ((snapshot or {}).get("restart_savings") or {}).get("first_reminder_call") is None:
        return move
    return saving_line({}, snapshot)


def saving_line(reminder: dict, snapshot: dict | None = None) -> str:
    """What changing course now saves, as briefly as the figures allow: the priced moves once one pays twice,
    else a restart's estimate over the calls this user's sessions usually run after a reminder, else its
    payback, else the rent paid (a notice's second line, in the tray and the terminal alike)."""
    move = move_sentence(snapshot)
    if move:
        return move
    estimate = reminder.get("restart_now") or (snapshot or {}).get("restart_now")
    if isinstance(estimate, dict) and estimate.get("calls_ahead") is not None and estimate.get("saving_usd") is not None:
        ahead = plural(max(0, round(float(estimate["calls_ahead"]))), "more call")
        saving = float(estimate["saving_usd"])
        if saving > 0:
            return f"Saves about {usd(saving)} if the session runs {ahead} (estimate)."
        return f"Over {ahead} a restart would not earn its rebuild back (estimate)."
    restart = reminder["restart_usd"] if reminder.get("restart_usd") is not None else restart_cost(snapshot)
    pp = reminder.get("payback_calls", (snapshot or {}).get("pp"))
    if restart is not None and pp is not None:
        return (f"A restart costs {usd(restart)} and pays for itself after "
                f"{plural(max(1, math.ceil(float(pp))), 'call')}.")
    if pp is not None:
        return f"A restart pays for itself after {plural(max(1, math.ceil(float(pp))), 'call')}."
    return f"Rent paid on dead weight so far: {usd(reminder.get('rent_usd', (snapshot or {}).get('bill_cycle_usd')))}."


def channel_sentences(ch: dict) -> list[tuple[str, str]]:
    """(channel title, one sentence) for edits, trimming and search, from the report's channel blocks: the
    window's Overview and the command line's report say the same."""
    out = []
    e = ch.get("edit") or {}
    if e:
        text = (f"{plural(e.get('str_replace_calls') or 0, 'replace edit')} paid "
                f"{tokens(e.get('str_replace_old_string_tokens') or 0)} output tokens "
                f"({usd(e.get('str_replace_old_string_usd') or 0)}) re-quoting the old text")
        misses = (e.get("str_replace_misses") or {}).get("total") or 0
        if misses:
            text += f"; {plural(misses, 'edit')} missed {'its' if misses == 1 else 'their'} text"
        if e.get("anchored_calls"):
            text += (f"; {plural(e['anchored_calls'], 'anchored edit')} avoided "
                     f"{tokens(e.get('anchored_avoided_output_tokens') or 0)} output tokens")
        out.append(("Edits", text + "."))
    p = ch.get("pinch") or {}
    if p:
        text = (f"Context trimming saved {tokens(p.get('tokens_saved_total') or 0)} tokens "
                f"({usd(p.get('saved_usd') or 0)}) on {count(p.get('pinched_requests') or 0)} of "
                f"{plural(p.get('requests') or 0, 'request')} ({percent(p.get('share_pinched') or 0)}).")
        out.append(("Trimming", text))
    r = ch.get("retrieval") or {}
    if r:
        text = (f"{plural(r.get('calls') or 0, 'search call')} served {size(r.get('bytes_served') or 0)} "
                f"and spared an estimated {size(r.get('bytes_saved') or 0)} of whole-file reads.")
        out.append(("Search", text))
    return out


# ---- Claude Code's own moves: its compactions, the cold cache (issue 47) ----------------------------

# a sync device on an older ctxlamp (its files are format 1): it counts, without what its files did not hold yet
OLDER_DEVICE = "Its ctxlamp is older: its compactions and schedules are not in the sums until it is updated."


COMPACTED_BY = {"manual": "by you", "auto": "automatic", "idle": "while you were idle"}


def compactions_sentence(counts: dict | None, cost_usd: float | None = None) -> str:
    """ "3 compactions: 1 by you, 2 while you were idle; about $0.42 (estimate)." (empty when none): the report,
    the Overview and the Session tab say a session's or a period's compactions so."""
    counts = counts if isinstance(counts, dict) else {}
    by = [(k, int(n)) for k in COMPACTED_BY if isinstance(n := counts.get(k), int) and not isinstance(n, bool)
          and n > 0]
    if not by:
        return ""
    text = f"{plural(sum(n for _, n in by), 'compaction')}: " + ", ".join(f"{n} {COMPACTED_BY[k]}" for k, n in by)
    if isinstance(cost_usd, (int, float)) and not isinstance(cost_usd, bool) and cost_usd > 0:
        text += f"; about {usd(cost_usd)} (estimate)"
    return text + "."


def _amount(value) -> float | None:
    """A non-negative finite figure, else None (snapshots and hook inputs are outside text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < 1e12 else None


def cold_cache_lines(cache: dict | None, handoff: bool = False) -> list[str]:
    """What a cold prompt cache costs (docs/measurement.md section 16): going on rewrites the whole prompt at
    the write price; a fresh session writes only the useful part; then the move the advice names for a cold
    cache (`break_move_sentence`), when it names one. A fresh session with a handoff is said only when one
    from before the break exists; without one both prices stand, and when a handoff pays is said. `cache`:
    a snapshot's `cache` (cold_rewrite_*, fresh_start_*, cold_advice)."""
    cache = cache if isinstance(cache, dict) else {}
    rewrite, rewrite_tokens = _amount(cache.get("cold_rewrite_usd")), _amount(cache.get("cold_rewrite_tokens"))
    fresh, fresh_tokens = _amount(cache.get("fresh_start_usd")), _amount(cache.get("fresh_start_tokens"))
    if rewrite is None:
        return ["Cache cold: your next message rewrites the whole prompt."]
    what = f"{tokens(rewrite_tokens)} tokens " if rewrite_tokens is not None else ""
    lines = [f"Cache cold: your next message rewrites {what}({usd(rewrite)})."]
    move = break_move_sentence(cache)
    if fresh is None or fresh >= rewrite:
        return lines + ([move] if move else [])
    size_ = f"{tokens(fresh_tokens)} " if fresh_tokens is not None else ""
    if handoff:
        lines.append(f"A fresh session with your handoff writes {size_}({usd(fresh)}).")
    else:
        lines.append(f"Fresh start: {size_}({usd(fresh)}); a handoff is cheapest made before a break.")
    return lines + ([move] if move else [])


def idle_compaction_line(cache: dict | None, clock: str) -> str:
    """On a 1-hour cache with a long prompt: Claude Code compacts it at 0.9 of the TTL after the last call
    (unless its `idleCompaction` setting is false), priced against a handoff before the break; empty otherwise.
    `clock`: when, as the caller shows times."""
    cache = cache if isinstance(cache, dict) else {}
    compact, fresh = _amount(cache.get("idle_compact_usd")), _amount(cache.get("fresh_start_usd"))
    if compact is None or not cache.get("idle_compact_at"):
        return ""
    text = f"Claude Code compacts it idle at {clock} ({usd(compact)})"
    if fresh is not None:
        text += f"; a handoff before the break: {usd(fresh)}"
    return text + "."


# what Claude Code names a cache miss's cause, in the glossary's words
MISS_CAUSES = {"ttl_expired_5m": "after a break past 5 minutes", "ttl_expired_1h": "after a break past an hour",
               "model_changed": "model switch", "fast_mode_changed": "fast mode switch",
               "tools_changed": "tools changed", "system_prompt_changed": "system prompt changed",
               "effort_changed": "effort changed", "messages_rewritten": "earlier messages rewritten"}


def misses_sentence(block: dict | None) -> str:
    """ "3 cache misses: 2 after a break past 5 minutes, 1 model switch; they rewrote $1.20." from what Claude
    Code's status line counted (empty without a miss); an unknown cause is "other"."""
    block = block if isinstance(block, dict) else {}
    misses = block.get("misses")
    if not isinstance(misses, int) or isinstance(misses, bool) or misses <= 0:
        return ""
    by: dict[str, int] = {}
    causes = block.get("miss_causes") or block.get("by_cause") or {}
    for cause, n in (causes.items() if isinstance(causes, dict) else ()):
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            word = MISS_CAUSES.get(cause, "other")
            by[word] = by.get(word, 0) + n
    text = plural(misses, "cache miss", "cache misses")
    if by:
        text += ": " + ", ".join(f"{n} {word}" for word, n in sorted(by.items(), key=lambda kv: -kv[1]))
    rewrote = _amount(block.get("rewrote_usd"))
    if rewrote is not None and rewrote > 0:
        text += f"; {'it' if misses == 1 else 'they'} rewrote {usd(rewrote)}"
    return text + "."


def followed_sentence(schedule: dict | None) -> str:
    """What following every notice would have saved against the best schedule in hindsight (docs/measurement.md
    14): the text report's and the Overview's lead. Empty when no schedule was measured."""
    if not schedule or not schedule.get("segments"):
        return ""
    best, followed = schedule.get("best_usd") or 0.0, schedule.get("followed_usd") or 0.0
    if best <= 0:
        return "No restart or /compact would have saved anything in hindsight (estimate)."
    return (f"Following every notice would have saved {usd(followed)}, {percent(followed / best, 0)} of the "
            f"best in hindsight (estimate).")


def schedule_detail(schedule: dict | None) -> str:
    """The best schedule and the moves behind both figures, in one line."""
    if not schedule or not (schedule.get("best_usd") or 0) > 0:
        return ""
    moves = plural(int(schedule.get("restarts_followed") or 0), "restart")
    if schedule.get("compactions_followed"):
        moves += f" and {plural(int(schedule['compactions_followed']), '/compact')}"
    return (f"The best in hindsight: {usd(schedule.get('best_usd'))} ({usd(schedule.get('best_restarts_only_usd'))} "
            f"with restarts alone); following the notices meant {moves}.")
