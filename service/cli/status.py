"""`ctxlamp status`: every live session in the terminal, redrawn on each SSE event.

No timer: the view changes only when the service publishes something.
`--json` prints GET /api/v1/status once.
"""
from __future__ import annotations

import argparse
import json
import sys

COLOURS = {"white": "97", "green": "32", "amber": "33", "red": "31"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the status once as JSON and exit")
    parser.add_argument("--once", action="store_true", help="print the table once and exit")


def _num(v, fmt: str = "{:.2f}", none: str = "-") -> str:
    return none if v is None else fmt.format(v)


def _dot(colour: str, tty: bool) -> str:
    return f"\033[{COLOURS.get(colour, '90')}m●\033[0m" if tty else f"({colour})"


def render(status: dict, tty: bool) -> str:
    """The table as text (pure: tests call it); every text from outside passes `printable`."""
    from service.client.textsafe import printable as p

    svc = status.get("service") or {}
    scan = svc.get("scan") or {}
    lines = []
    head = f"ctxlamp service pid {p(svc.get('pid', '?'), 20)} · observer {p(svc.get('observer'), 40)}"
    if scan.get("state") == "catching_up":
        head += f" · reading recent sessions {scan.get('done', 0)}/{scan.get('total', 0)}"
    elif scan.get("state") == "scanning" and scan.get("done", 0) < scan.get("total", 0):
        head += f" · scanning history {scan.get('done', 0)}/{scan.get('total', 0)}"
    elif scan.get("state") == "scanning":  # the history is read: the report's cache is filled last
        head += " · preparing the report"
    db = svc.get("db") or {}
    if db and not db.get("ok", True):
        head += f" · database unavailable ({p(db.get('error'), 300)})"
    lines.append(head)
    sessions = status.get("sessions") or []
    if not sessions:
        lines.append("no live sessions (a Claude Code transcript that grows becomes one)")
        return "\n".join(lines)
    lines.append(f"  {'':1} {'session':10} {'lamp':17} {'x/xSweet':>13} {'to sweet':>9} {'rent $':>9} "
                 f"{'burn $/h':>9} {'laps':>4}  last reminder  project")
    for s in sessions:
        lamp = s.get("lamp") or {}
        mark = "→" if s.get("session_id") == status.get("followed") else " "
        x, xs = s.get("x"), s.get("xSweet")
        pos = f"{_num(x)}/{_num(xs)}"
        rem = s.get("reminder") or {}
        last = f"lap {rem.get('lap')} @call {rem.get('call')}" if rem else "-"
        lines.append(
            f"{mark} {_dot(p(lamp.get('colour', ''), 10), tty)} {p(s.get('session_id'), 80)[:10]:10} "
            f"{p(lamp.get('state', '?'), 17):17} {pos:>13} {_num(s.get('dhat'), '{:.1f}'):>9} "
            f"{_num(s.get('bill_cycle_usd'), '{:.4f}'):>9} {_num(s.get('br'), '{:.3f}'):>9} "
            f"{p(s.get('laps', 0), 6):>4}  {last:13}  {p(s.get('project') or '', 80)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from service.client.api import ApiClient, ApiError

    try:
        client = ApiClient()
        status = client.status()
    except ApiError as exc:
        print(f"ctxlamp: no service is running ({exc}); start it with `ctxlamp serve`.", file=sys.stderr)
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
            ordered = sorted(sessions.values(), key=lambda s: s.get("updated_at") or "", reverse=True)
            text = render({"sessions": ordered, **state}, tty)
            if event == "reminder":
                text += f"\nreminder: session {data['session_id'][:10]} lap {data['lap']} — a restart has paid off"
            if tty:
                sys.stdout.write("\033[H\033[2J")
            print(text, flush=True)
    except ApiError as exc:
        print(f"ctxlamp: lost the service ({exc})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    print("ctxlamp: the service stopped.", file=sys.stderr)
    return 0
