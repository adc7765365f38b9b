"""`ctxlamp team init | member add | push | report`: the team view on a PostgreSQL server (docs/team.md).

Exit codes: 0 done, 1 other failure, 2 usage, 3 the server is unreachable, 4 the server refused.
"""
from __future__ import annotations

import argparse
import sys

from service.cli.report import day_argument


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="team_command", metavar="WHAT", required=True)
    init = sub.add_parser("init", help="create or migrate the team schema (as the database's owner)")
    init.add_argument("--url", help="the owner's postgresql:// URL (default: [team] url)")
    member = sub.add_parser("member", help="manage members")
    msub = member.add_subparsers(dest="member_command", metavar="WHAT", required=True)
    add = msub.add_parser("add", help="create a member's role; prints its URL on the last line")
    add.add_argument("name", help="the member's name (e.g. alice@laptop)")
    add.add_argument("--url", help="the owner's postgresql:// URL (default: [team] url)")
    add.add_argument("--passfile", help="the password file that gets the member's password "
                                        "(default: PGPASSFILE, else pgpass in ctxlamp's config folder)")
    push = sub.add_parser("push", help="push this member's figures now")
    push.add_argument("--url", help="this member's postgresql:// URL (default: [team] url)")
    push.add_argument("--member", help="member name (default: [team] member, else user@host)")
    report = sub.add_parser("report", help="the team's figures")
    report.add_argument("--url", help="a member's postgresql:// URL (default: [team] url)")
    report.add_argument("--json", action="store_true", help="print JSON")
    report.add_argument("--since", type=day_argument, help="first day included (YYYY-MM-DD, UTC)")
    report.add_argument("--until", type=day_argument, help="last day included (YYYY-MM-DD, UTC)")


def _config() -> dict:
    from service import config
    from service.client.paths import app_paths

    return config.load(app_paths().config_file)


def remember_key(key: str) -> None:
    """Keep the team's project key in the local config, so rows can be staged while the server is away."""
    from service import config
    from service.client.paths import app_paths

    path = app_paths().config_file
    cfg = config.load(path)
    if not cfg["team"].get("key"):
        config.save(path, config.merge(cfg, {"team": {"key": key}}))


def run(args: argparse.Namespace) -> int:
    from service.team import passfile
    from service.team.server import TeamError
    from service.team.settings import resolve

    try:
        settings = resolve(_config(), getattr(args, "url", None), getattr(args, "member", None))
    except ValueError as exc:
        print(f"ctxlamp team: {exc}", file=sys.stderr)
        return 2
    if not settings.url:
        print("ctxlamp team: no team configured: set [team] url in config.toml or pass --url", file=sys.stderr)
        return 2
    what = args.team_command
    try:
        if what == "init":
            return _init(settings)
        if what == "member":
            return _member_add(settings, args.name, args.passfile)
        if what == "push":
            return _push(settings, args)
        return _report(settings, args)
    except TeamError as exc:
        print(f"ctxlamp team {what}: {safe_message(exc, settings.url)}", file=sys.stderr)
        return exc.exit_code
    except passfile.Unsafe as exc:
        print(f"ctxlamp team {what}: {safe_message(exc.strerror, settings.url)}", file=sys.stderr)
        return 1


def safe_message(text: object, url: str) -> str:
    """A message for the terminal: no password (service/redact.py), no control characters (a server's text
    may quote another member's names)."""
    from service.redact import redact
    from service.client.textsafe import printable

    return printable(redact(text, url), 2000)


def _init(settings) -> int:
    from service.team.schema import init
    from service.team.server import where

    version = init(settings.url)
    print(f"team schema at version {version} on {where(settings.url)}")
    return 0


def _member_add(settings, name: str, passfile: str | None = None) -> int:
    """The role, the password in a 0600 password file (never printed), and the URL without it on the last line."""
    from pathlib import Path

    from service.team.schema import add_member, check_member_name, role_name
    from service.team.server import default_passfile
    from service.client.textsafe import printable

    target = Path(passfile).expanduser() if passfile else default_passfile()
    url = add_member(settings.url, name, target)
    name = check_member_name(name)
    print(f"member {printable(name)!r}: role {role_name(name)} (reads the team's rows, writes only its own)")
    print(f"its password is in {target} (libpq's password file format, mode 0600): that member keeps its line in "
          "the pgpass file of ctxlamp's config folder (or the file PGPASSFILE names, which psql reads too)")
    print("its connection URL, without the password (put it in that member's [team] url):")
    print(url)
    return 0


def _push(settings, args) -> int:
    """Through the running service when there is one (in a running system only the service writes), else here."""
    result = _push_through_service(args)
    if result is None:
        result = _push_here(settings)
    message = safe_message(result["message"], settings.url)
    if result["exit_code"] == 0:
        print(message)
    else:
        print(f"ctxlamp team push: {message}", file=sys.stderr)
    return int(result["exit_code"])


def _push_through_service(args) -> dict | None:
    from service.client.api import ApiClient, ApiError

    try:
        client = ApiClient(timeout=600)
        status, body = client.exchange("POST", "/api/v1/team/push",
                                       {k: v for k, v in (("url", args.url), ("member", args.member)) if v})
    except ApiError:
        return None
    if status != 200 or not isinstance(body, dict) or "exit_code" not in body:
        return None  # an older service, or none configured there: push from here
    body["message"] += " (through the running service)"
    return body


def _push_here(settings) -> dict:
    from service.client.paths import app_paths
    from service.store import Store
    from service.team.push import failure, outcome, team_key
    from service.team.server import TeamError

    store = Store(app_paths().ensure().db)
    try:
        if not settings.key:
            try:
                key = team_key(settings)  # the server's, when it answers
            except TeamError as exc:
                return failure(exc, settings, store)
            remember_key(key)
            settings = settings.with_key(key)
        return outcome(settings, store)
    finally:
        store.close()


def _report(settings, args) -> int:
    from service.team.report import render_text, team_report

    if args.since and args.until and args.since > args.until:
        print("ctxlamp team report: --since is after --until", file=sys.stderr)
        return 2
    doc = team_report(settings.url, args.since, args.until)
    if args.json:  # ASCII only: another member's names arrive as \u escapes, never as raw control codes
        import json

        # allow_nan=False: never a bare NaN (not JSON); the reader refuses such figures before this
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False, default=str) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return 0
