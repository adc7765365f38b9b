"""`ctxlamp status`: every live session's lamp in the terminal, redrawn on each SSE event.

No timer: the view changes only when the service publishes something. The words are
docs/glossary.md's (the window's); `--json` prints GET /api/v1/status once, identifiers and all.
Notices follow the tray's rule: the first reminder of a stretch of work speaks, later reminders
only move the figures, and the lamp's colour is shown, not announced.
"""
from __future__ import annotations

import argparse
import json
import sys

COLOURS = {"white": "97", "green": "32", "amber": "33", "red": "31"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the status once as JSON (the API's "
                        "field names, docs/api.md) and exit")
    parser.add_argument("--once", action="store_true", help="print the table once and exit")


def _dot(colour: str, tty: bool) -> str:
    return f"\033[{COLOURS.get(colour, '90')}m●\033[0m" if tty else "●"


def _x(v) -> str:
    """Times the useful part, to two decimals as the tooltip and the window say it ("3.09x")."""
    return "-" if v is None else f"{float(v):.2f}x"


def ending_words(snapshot: dict) -> str:
    """What following the session's notices would have saved by now against the best in hindsight, as the
    report says it (docs/measurement.md 14); from a service without schedules, what restarting at its notice
    (its stretch's first reminder) would have saved, in the glossary's words."""
    from service.client.figures import usd
    from service.client.textsafe import printable as p
    from service.client.words import followed_sentence

    rs = snapshot.get("restart_savings") or {}
    if rs.get("first_reminder_call") is None:
        return "No notice yet: the rent paid on dead weight has not reached a restart's cost."
    schedule = rs.get("schedule")
    if isinstance(schedule, dict):  # the report's and the Overview's figure, for this session (decision 458)
        try:
            followed = followed_sentence({**schedule, "segments": 1})
        except (TypeError, ValueError):  # not figures: the older frame below
            followed = ""
        if followed:
            return followed
    call = p(rs["first_reminder_call"], 12)  # the service's figures are printed as text: filtered too
    try:
        saved = float(rs.get("first_reminder_usd") or 0.0)
    except (TypeError, ValueError):
        saved = 0.0
    text = (f"Restarting at the notice (after call {call}) with a handoff would have saved {usd(saved)} "
            "by now (an estimate)" if saved >= 0 else
            f"Restarting at the notice (after call {call}) would have cost {usd(-saved)} more than it "
            "saved so far (an estimate)")
    if rs.get("best_call") is not None and rs.get("best_call") != rs["first_reminder_call"]:
        try:
            best = usd(rs.get("best_usd"))
        except (TypeError, ValueError):
            best = "-"
        text += f"; the best single restart, after call {p(rs['best_call'], 12)}, {best}"
    return text + "."


WIDE = 150  # the table's width; a narrower terminal gets a block of lines per session


def cold_words(snapshot: dict, now: float, handoff: bool = False) -> list[str]:
    """A session whose prompt cache has expired: the rewrite beside the fresh start, lines of at most 80
    columns (service/client/words.py); nothing while the cache is warm."""
    from service.client.words import cache_cold, cold_cache_lines

    return cold_cache_lines(snapshot.get("cache"), handoff) if cache_cold(snapshot, now) else []


def render(status: dict, tty: bool, notices: list[str] | None = None, columns: int | None = None,
           now: float | None = None, handoff_ready: frozenset[str] = frozenset()) -> str:
    """The table as text (pure but for the clock when `now` is None: tests pass it); every text from outside
    passes `printable`. `columns`: the terminal's width (service/client/terminal.py), None for no limit;
    narrower than WIDE, each session is a few lines, wrapped between words. `handoff_ready`: the sessions
    that left a handoff before their break."""
    from service.client.terminal import fit

    lines = _lines(status, tty, notices, columns is not None and columns < WIDE, now, handoff_ready)
    return "\n".join(fit(lines, columns))


def _lines(status: dict, tty: bool, notices: list[str] | None, narrow: bool, now: float | None = None,
           handoff_ready: frozenset[str] = frozenset()) -> list[str]:
    import time

    from service.client.textsafe import printable as p
    from service.client.figures import plural
    from service.client.words import advice_line, session_name

    svc = status.get("service") or {}
    scan = svc.get("scan") or {}
    sessions = status.get("sessions") or []
    head = f"ctxlamp: {plural(len(sessions), 'live session')} (service pid {p(svc.get('pid', '?'), 20)})"
    if scan.get("state") == "catching_up":
        head += f" · reading recent sessions {scan.get('done', 0)}/{scan.get('total', 0)}"
    elif scan.get("state") == "scanning" and scan.get("done", 0) < scan.get("total", 0):
        head += f" · reading older sessions {scan.get('done', 0)}/{scan.get('total', 0)}"
    elif scan.get("state") == "scanning":  # the history is read: the report's cache is filled last
        head += " · preparing the report"
    db = svc.get("db") or {}
    if db and not db.get("ok", True):
        head += f" · database unavailable ({p(db.get('error'), 300)})"
    lines = [head]
    if not sessions:
        lines.append("No live session: a Claude Code session that is being written shows here.")
        return lines + list(notices or [])
    if narrow:
        for s in sessions:
            lines += _block(s, s.get("session_id") == status.get("followed"), tty)
    else:
        lines += _table(status, sessions, tty)
    followed = next((s for s in sessions if s.get("session_id") == status.get("followed")), sessions[0])
    lines.append("context: how many times bigger than its useful part · rent so far: paid on dead weight in this "
                 "stretch of work")
    now = time.time() if now is None else now
    move = advice_line(followed, now)  # the move the tooltip, the Session tab and the status line name, same figures
    if move:
        lines.append(f"{p(session_name(followed), 80)}: {move}")
    if (followed.get("restart_savings") or {}).get("first_reminder_call") is not None:
        lines.append(f"{p(session_name(followed), 80)}: {ending_words(followed)}")
    lines += cold_words(followed, now, followed.get("session_id") in handoff_ready)
    return lines + list(notices or [])


def _notice(s: dict) -> str:
    """When the stretch's one notice came, or "none yet"."""
    from service.client.textsafe import printable as p

    first = (s.get("restart_savings") or {}).get("first_reminder_call")
    return f"at call {p(first, 12)}" if first is not None else "none yet"


def _block(s: dict, followed: bool, tty: bool) -> list[str]:
    """One session in a few lines, for a narrow terminal: the same figures and words as the table's row."""
    from service.client.figures import usd
    from service.client.textsafe import printable as p
    from service.client.words import advice, colour_of, per_hour, position, session_name

    colour = colour_of(s)
    return [f"{'→' if followed else ' '} {_dot(colour, tty)} {colour} · {p(advice(s), 40)} · "
            f"{p(session_name(s), 80)}",
            f"    context {_x(s.get('x'))}, sweet spot {_x(s.get('xSweet'))} · {position(s)}",
            f"    rent so far {usd(s.get('bill_cycle_usd'))} · {per_hour(s)} · notice "
            f"{_notice(s)}"]


def _table(status: dict, sessions: list[dict], tty: bool) -> list[str]:
    from service.client.figures import usd
    from service.client.textsafe import printable as p
    from service.client.words import advice, colour_of, position, rent_rate, session_name

    lines = []
    lines.append(f"    {'lamp':6} {'advice':20} {'session':34} {'context':>8} {'sweet spot':>10}  "
                 f"{'position':28} {'rent so far':>11} {'per hour':>8}  notice")  # the tray's words
    for s in sessions:
        mark = "→" if s.get("session_id") == status.get("followed") else " "
        colour = colour_of(s)
        told = _notice(s)
        lines.append(
            f"{mark} {_dot(colour, tty)} {colour:6} {p(advice(s), 20):20} {p(session_name(s), 80):34} "
            f"{_x(s.get('x')):>8} {_x(s.get('xSweet')):>10}  {position(s):28} "
            f"{usd(s.get('bill_cycle_usd')):>11} {usd(rent_rate(s)):>8}  {told}")
    return lines


def handoff_ready(client, status: dict) -> frozenset[str]:
    """The followed session, when its cache is cold and it left a handoff before the break (one request)."""
    import time

    from service.client.api import ApiError
    from service.client.breaks import handoff_before_break

    sid = status.get("followed")
    snap = next((s for s in status.get("sessions") or [] if s.get("session_id") == sid), None)
    if snap is None or not cold_words(snap, time.time()) or not snap.get("project"):
        return frozenset()
    try:
        rows = client.request("GET", "/api/v1/handoffs",
                              query={"project": snap["project"], "undelivered": 1}).get("handoffs")
    except (ApiError, AttributeError):
        return frozenset()
    return frozenset({str(sid)}) if handoff_before_break(rows, sid, snap.get("updated_at")) else frozenset()


def notice_for(event: str, data: dict, told: set, colours: dict) -> str | None:
    """The terminal's notice, by the tray's rule and in its words: the first reminder of a stretch of work
    speaks (worded for red while the lamp is red), later reminders only move the figures, the colour is
    never announced. None: nothing to say."""
    from service.client.textsafe import printable as p
    from service.client.words import NOTICE_DO, NOTICE_HEAD, colour_of, saving_line, session_name

    sid = data.get("session_id")
    who = f"Notice · {p(session_name(data), 80)}"
    if event == "reminder":
        key = (sid, data.get("segment"), "reminder")
        if key in told:
            return None
        told.add(key)
        red = colours.get(sid) == "red"
        return f"{who}: {NOTICE_HEAD[red]}. {NOTICE_DO[red]} {saving_line(data, data)}"  # the tray's move
    colours[sid] = colour_of(data)  # the colour a later reminder is worded for
    return None


def _start_failed() -> str | None:
    """Why the user's service (else the demo's) is not running, when its last start failed."""
    from service.client import start_failure
    from service.client.paths import app_paths
    from service.client.running import demo_paths

    why = start_failure.not_running(app_paths()) or start_failure.not_running(demo_paths())
    return why[:-1] if why and why.endswith(".") else why


def run(args: argparse.Namespace) -> int:
    from service.client.api import ApiClient, ApiError
    from service.client.running import service_api_file, where_to_look
    from service.client.textsafe import printable
    from service.client.terminal import width
    from service.client.words import colour_of

    try:
        client = ApiClient(api_file=service_api_file())  # the user's service, else the demo's
        status = client.status()
    except ApiError as exc:
        print(f"ctxlamp: {printable(_start_failed() or where_to_look(), 2000) if exc.down else printable(exc, 500)}.",
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    tty = sys.stdout.isatty()
    columns = width()
    if args.once:
        print(render(status, tty, columns=columns, handoff_ready=handoff_ready(client, status)))
        return 0
    sessions = {s["session_id"]: s for s in status["sessions"]}
    state = {"followed": status.get("followed"), "service": status.get("service")}
    told: set = set()
    colours = {sid: colour_of(s) for sid, s in sessions.items()}
    notices: list[str] = []
    try:
        for event, data in client.events():
            if event == "snapshot":
                sessions[data["session_id"]] = data
            elif event == "followed":  # the service's own choice, as the tray shows it (decision 496)
                state["followed"] = data.get("session_id")
            elif event == "rotated":
                sessions.pop(data.get("from"), None)
            elif event == "service":
                state["service"] = data
            elif event != "reminder":
                continue
            said = None
            if event in ("snapshot", "reminder"):
                said = notice_for(event, {**sessions.get(data.get("session_id"), {}), **data}, told, colours)
                if said:
                    notices = [*notices, said][-3:]
            ordered = sorted(sessions.values(), key=lambda s: s.get("updated_at") or "", reverse=True)
            if tty:  # the screen is redrawn: the last notices stay under the table
                sys.stdout.write("\033[H\033[2J")
                print(render({"sessions": ordered, **state}, tty, notices, columns), flush=True)
            else:  # a log: each notice once, where it came
                print(render({"sessions": ordered, **state}, tty, [said] if said else None, columns), flush=True)
    except ApiError as exc:
        print(f"ctxlamp: lost the service ({printable(exc, 500)})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    print("ctxlamp: the service stopped.", file=sys.stderr)
    return 0
