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
    return "-" if v is None else f"{float(v):.1f}x"


def ending_words(snapshot: dict) -> str:
    """What restarting at the session's first reminder would have saved by now (docs/measurement.md 14)."""
    from service.client.figures import usd

    rs = snapshot.get("restart_savings") or {}
    call = rs.get("first_reminder_call")
    if call is None:
        return "No reminder yet: the rent paid on dead weight has not reached a restart's cost."
    saved = float(rs.get("first_reminder_usd") or 0.0)
    text = (f"Restarting at the first reminder (after call {call}) with a handoff would have saved {usd(saved)} "
            "by now (an estimate)" if saved >= 0 else
            f"Restarting at the first reminder (after call {call}) would have cost {usd(-saved)} more than it "
            "saved so far (an estimate)")
    if rs.get("best_call") is not None and rs.get("best_call") != call:
        text += f"; the best single restart, after call {rs['best_call']}, {usd(rs.get('best_usd'))}"
    return text + "."


def render(status: dict, tty: bool, notices: list[str] | None = None) -> str:
    """The table as text (pure: tests call it); every text from outside passes `printable`."""
    from service.client.textsafe import printable as p
    from service.client.figures import plural, usd
    from service.client.words import advice, colour_of, position, session_name

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
        return "\n".join(lines + list(notices or []))
    lines.append(f"    {'lamp':6} {'advice':20} {'session':34} {'context':>8} {'sweet spot':>10}  "
                 f"{'position':28} {'rent so far':>11} {'per hour':>8}  notice")  # the tray's words
    for s in sessions:
        mark = "→" if s.get("session_id") == status.get("followed") else " "
        colour = colour_of(s)
        first = (s.get("restart_savings") or {}).get("first_reminder_call")
        told = f"at call {p(first, 12)}" if first is not None else "none yet"  # the stretch's one notice
        lines.append(
            f"{mark} {_dot(colour, tty)} {colour:6} {p(advice(s), 20):20} {p(session_name(s), 80):34} "
            f"{_x(s.get('x')):>8} {_x(s.get('xSweet')):>10}  {position(s):28} "
            f"{usd(s.get('bill_cycle_usd')):>11} {usd(s.get('br')):>8}  {told}")
    followed = next((s for s in sessions if s.get("session_id") == status.get("followed")), sessions[0])
    lines.append("context: how many times bigger than its useful part · rent so far: paid on dead weight in this "
                 "stretch of work")
    if (followed.get("restart_savings") or {}).get("first_reminder_call") is not None:
        lines.append(f"{p(session_name(followed), 80)}: {ending_words(followed)}")
    return "\n".join(lines + list(notices or []))


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


def run(args: argparse.Namespace) -> int:
    from service.client.api import ApiClient, ApiError
    from service.client.running import service_api_file, where_to_look
    from service.client.words import colour_of

    try:
        client = ApiClient(api_file=service_api_file())  # the user's service, else the demo's
        status = client.status()
    except ApiError as exc:
        print(f"ctxlamp: {where_to_look() if exc.down else exc}.", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    tty = sys.stdout.isatty()
    if args.once:
        print(render(status, tty))
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
                newest = max(sessions.values(), key=lambda s: s.get("updated_at") or "")
                state["followed"] = newest["session_id"]  # the service follows the most recently active
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
                print(render({"sessions": ordered, **state}, tty, notices), flush=True)
            else:  # a log: each notice once, where it came
                print(render({"sessions": ordered, **state}, tty) + (f"\n{said}" if said else ""), flush=True)
    except ApiError as exc:
        print(f"ctxlamp: lost the service ({exc})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    print("ctxlamp: the service stopped.", file=sys.stderr)
    return 0
