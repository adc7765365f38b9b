"""The local API: HTTP/1.1 on 127.0.0.1, bearer token, JSON, SSE (docs/api.md).

The standard library's request handler behind a door of our own
(`service/api/guard.py`): connections are read without a thread until a whole
request has arrived within one deadline, capped, and a worker answers it; no
dependency, a few hundred lines we fully control.

Order of checks: Host (403, DNS rebinding) -> browser (403: an `Origin` or
`Sec-Fetch-Site` header, a web page's request) -> token (401) -> body size
(413) -> route (404/405) -> JSON body (400, also when nested too deeply). The
door blocks in select() without a poll interval while nothing waits.
"""
from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import socket
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from service import __version__
from service.api.guard import BufferedHandler, GuardedServer, raise_descriptor_limit
from service.config import ConfigError
from service.client import proof
from service.client.privdir import write_private
from service.redact import redact, redact_settings, restore_masked
from service.api.reads import ServiceView, Unavailable

if TYPE_CHECKING:
    from service.days import Zone

log = logging.getLogger("ctxlamp.api")

MAX_BODY = 1 << 20
SOCKET_TIMEOUT_S = 10
MAX_SSE_CLIENTS = 32  # event streams at once (the tray holds one; a few tools may add theirs)
_LOOPBACK = re.compile(r"^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d{1,5})?$", re.IGNORECASE)


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


Route = tuple[str, re.Pattern, Callable[..., Any]]


def _json_default(obj):
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, datetime):
        return obj.isoformat()
    if hasattr(obj, "__dict__"):
        return obj.__dict__
    return str(obj)


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, default=_json_default, separators=(",", ":")).encode("utf-8")


def _period(query: dict) -> tuple[str | None, str | None]:
    """?since= and ?until= as given, each checked: a date or time within range, else a 400."""
    from service.report.cached import check_period

    since, until = query.get("since") or None, query.get("until") or None
    check_period(since, until)
    return since, until


def _int(query: dict, name: str, default: int | None = None) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError:
        raise HttpError(400, f"{name} must be an integer") from None


class ApiServer:
    def __init__(self, service: ServiceView) -> None:
        self.service = service
        self.token = secrets.token_urlsafe(32)
        self.proof_key = proof.new_key()  # the key a client checks this service's proof with (api.json only)
        self.port = 0
        self.httpd: GuardedServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.streams: dict[Any, socket.socket] = {}  # open event streams (hub client -> its socket)
        self.routes = self._routes()

    # ---- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        before, after = raise_descriptor_limit()
        if after > before:
            log.info("descriptor limit raised from %d to %d", before, after)
        handler = type("Handler", (_Handler,), {"api": self})
        self.httpd = GuardedServer(("127.0.0.1", 0), handler, MAX_BODY, quick=self.quick_proof)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self._serve, name="api", daemon=True)
        self._thread.start()
        info = {"port": self.port, "token": self.token, "proof_key": self.proof_key, "pid": os.getpid(),
                "version": __version__, "started_at": self.service.started_at}
        write_private(self.service.paths.api_file, json.dumps(info).encode("utf-8"))

    def _serve(self) -> None:
        assert self.httpd is not None
        self.httpd.serve_forever()  # blocks in select() while nothing waits: no idle wakeups

    def stop(self) -> None:
        if self.httpd is None:
            return
        self._stopping = True
        self.httpd.shutdown()
        if self._thread:
            self._thread.join(timeout=5)
        self.httpd.server_close()
        self.httpd = None

    def remove_discovery(self) -> None:
        """Remove api.json if it is still ours (a newer service may have replaced it)."""
        path = self.service.paths.api_file
        try:
            info = json.loads(path.read_text())
            if info.get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError):
            pass

    def end_dead_streams(self) -> int:
        """End the event streams whose peer has closed (an idle stream learns it only at its next
        write); how many. Called when the streams are at their cap, so nothing wakes while idle."""
        import select

        ended = 0
        for client, sock in list(self.streams.items()):
            try:
                readable = select.select([sock], [], [], 0)[0]
                gone = bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
            except (OSError, ValueError):
                gone = True
            if gone:
                self.streams.pop(client, None)
                self.service.hub.end(client)
                ended += 1
        return ended

    def quick_proof(self, request: bytes) -> bytes | None:
        """The whole answer to a plain proof request, for the door to send without a worker (the status
        line asks one before each request: docs/decisions.md 402); None for anything else or anything
        unusual, which the handler answers as every request (`_Handler._prove`, the same proof)."""
        head, _, body = request.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if body or len(parts) != 3 or parts[0] != b"GET" or parts[2] != b"HTTP/1.1":
            return None
        target = urlsplit(parts[1].decode("latin-1"))
        nonce = (parse_qs(target.query).get("nonce") or [""])[-1]
        if target.path != proof.PATH or not proof.valid_nonce(nonce):
            return None
        fields = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or name.strip().lower() in fields:
                return None
            fields[name.strip().lower()] = value.strip().decode("latin-1")
        if not _LOOPBACK.match(fields.get(b"host", "")) or fields.keys() & {b"origin", b"sec-fetch-site",
                                                                             b"content-length", b"transfer-encoding"}:
            return None
        data = dumps({"proof": proof.answer(self.proof_key, nonce, self.port)})
        return (b"HTTP/1.1 200 OK\r\nServer: ctxlamp/%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                b"Cache-Control: no-store\r\n\r\n%s" % (__version__.encode(), len(data), data))

    def authorized(self, header: str | None) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self.token.encode())

    # ---- routes ---------------------------------------------------------------------
    def _routes(self) -> list[Route]:
        r: list[tuple[str, str, Callable[..., Any]]] = [
            ("GET", r"/api/v1/health", self.get_health),
            ("GET", r"/api/v1/status", self.get_status),
            ("GET", r"/api/v1/sessions/(?P<sid>[^/]+)/series", self.get_series),
            ("POST", r"/api/v1/sessions/(?P<sid>[^/]+)/selection", self.post_selection),
            ("GET", r"/api/v1/segments", self.get_segments),
            ("GET", r"/api/v1/reminders", self.get_reminders),
            ("GET", r"/api/v1/channels/(?P<channel>edit|pinch|retrieval)", self.get_channel),
            ("GET", r"/api/v1/spend", self.get_spend),
            ("GET", r"/api/v1/report", self.get_report),
            ("GET", r"/api/v1/overview", self.get_overview),

            ("GET", r"/api/v1/team", self.get_team),
            ("POST", r"/api/v1/team/push", self.post_team_push),
            ("GET", r"/api/v1/sync", self.get_sync),
            ("POST", r"/api/v1/sync/now", self.post_sync_now),
            ("POST", r"/api/v1/rotate", self.post_rotate),
            ("POST", r"/api/v1/handoffs", self.post_handoff),
            ("GET", r"/api/v1/handoffs", self.get_handoffs),
            ("POST", r"/api/v1/handoffs/(?P<token>[^/]+)/load", self.post_handoff_load),
            ("GET", r"/api/v1/history/page", self.get_history_page),
            ("GET", r"/api/v1/history/search", self.get_history_search),
            ("GET", r"/api/v1/history/locate", self.get_history_locate),
            ("GET", r"/api/v1/config", self.get_config),
            ("POST", r"/api/v1/config", self.post_config),
            ("GET", r"/api/v1/config/defaults", self.get_config_defaults),
            ("GET", r"/api/v1/openapi.json", self.get_openapi),
            ("POST", r"/api/v1/statusline", self.post_statusline),
            ("GET", r"/api/v1/limits", self.get_limits),
        ]
        return [(m, re.compile(p + "$"), fn) for m, p, fn in r]

    def get_health(self, q, body):
        s = self.service
        return {"ok": s.defect is None, "version": __version__, "pid": os.getpid(), "started_at": s.started_at}

    def get_status(self, q, body):
        return self.service.status()

    def get_series(self, q, body, sid):
        series = self.service.series(sid)
        if series is None:
            raise HttpError(404, f"no live session {sid}")
        return series

    def post_selection(self, q, body, sid):
        exclude, include = body.get("exclude", []), body.get("include", [])
        if not all(isinstance(v, list) and all(isinstance(p, str) for p in v) for v in (exclude, include)):
            raise HttpError(400, "exclude and include must be lists of paths")
        try:
            return self.service.call_in_loop(lambda: self.service.set_selection(sid, exclude, include))
        except KeyError:
            raise HttpError(404, f"no live session {sid}") from None

    def get_segments(self, q, body):
        limit = _int(q, "limit", 100)
        rows = self.service.reads.segments(session_id=q.get("session") or None, limit=limit)
        return {"segments": list(rows)}

    def get_reminders(self, q, body):
        """The database's reminders, plus any this process published that it could not store yet."""
        session, since = q.get("session") or None, _period(q)[0]
        try:
            rows = list(self.service.reads.reminders(session_id=session, since=since))
        except Unavailable:
            rows = []
        have = {(r["session_id"], r["segment"], r["lap"]) for r in rows}
        for r in list(self.service.reminder_log):
            if (r["session_id"], r["segment"], r["lap"]) in have:
                continue
            if (not session or r["session_id"] == session) and (not since or (r["at"] or "") >= since):
                rows.append({k: r[k] for k in ("session_id", "segment", "lap", "call", "at")})
        rows.sort(key=lambda r: (r.get("at") or "", r["session_id"], r["segment"], r["lap"]))
        return {"reminders": rows}

    def get_channel(self, q, body, channel):
        from service.api import channels

        bucket = q.get("bucket") or "day"
        if bucket not in ("hour", "day"):
            raise HttpError(400, "bucket must be hour or day")
        return channels.channel(channel, *_period(q), bucket)

    def get_spend(self, q, body):
        from service.api import channels

        return channels.spend(*_period(q), self._zone(q))

    def get_report(self, q, body):
        from service.report import cached
        from service.limits.serve import book_misses, book_unwritten

        since, until = _period(q)
        doc = cached.report(since, until, self._zone(q), record=(self._segments(), self.service.status()["sessions"]))
        return book_misses(book_unwritten(doc, self.service.readings, not since and not until), self.service)

    def _segments(self) -> list[dict]:
        """Every archived segment profile (none while the store is unavailable)."""
        try:
            return list(self.service.reads.segments(limit=100_000))
        except Unavailable:
            return []

    def _zone(self, q) -> Zone:
        """The zone days are cut in: ?timezone=, else [report] timezone, else the machine's."""
        from service.config import report_timezone
        from service.days import UnknownZone, Zone

        asked = q.get("timezone") or report_timezone(self.service.cfg)
        try:
            return Zone.named(asked)
        except UnknownZone as exc:
            raise HttpError(400, str(exc)) from None

    def get_overview(self, q, body):
        from service.api import overview

        if q.get("devices") == "all":  # every device of the sync folder, in UTC days (docs/sync.md)
            from service.days import ZONE_UTC
            from service.sync.report import devices_overview

            doc = overview.overview(_int(q, "days", 7), self._segments(), self.service.status()["sessions"],
                                    zone=ZONE_UTC)
            period = doc["period"]
            return devices_overview(doc, self.service.cfg, self.service.paths.config, period["since"],
                                    period["until"])
        return overview.overview(_int(q, "days", 7), self._segments(), self.service.status()["sessions"],
                                 zone=self._zone(q))

    def get_team(self, q, body):
        from service.team.job import team_view
        from service.team.server import TeamError

        try:
            return team_view(self.service.cfg, self.service.team, *_period(q))
        except LookupError as exc:
            raise HttpError(404, str(exc)) from None
        except TeamError as exc:  # already redacted where it was made; every error is redacted once more
            raise HttpError(503, str(exc)) from None

    def post_team_push(self, q, body):
        from service.team.job import push_for

        url, member = body.get("url"), body.get("member")
        if not all(v is None or isinstance(v, str) for v in (url, member)):
            raise HttpError(400, "url and member must be strings")
        try:
            return push_for(self.service.cfg, self.service.team, self.service.store, url, member)
        except LookupError as exc:
            raise HttpError(404, str(exc)) from None

    def get_sync(self, q, body):
        from service.sync.job import sync_view

        return sync_view(self.service.cfg, self.service.sync, self.service.paths.config, *_period(q))

    def post_sync_now(self, q, body):
        from service.sync.job import sync_view

        job = self.service.sync
        if job is None:
            raise HttpError(503, "the service is still reading its history; try again in a moment")
        last = job.run(force=True)
        if not last:
            raise HttpError(409, "sync is off (ctxlamp sync --folder DIR, or Settings, turns it on)")
        if not last.get("ok"):
            raise HttpError(409, str(last.get("message")))
        return sync_view(self.service.cfg, job, self.service.paths.config)

    def post_rotate(self, q, body):
        sid = body.get("session_id")
        if not isinstance(sid, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,200}", sid):
            raise HttpError(400, "session_id is required")
        tp, cwd = body.get("transcript_path"), body.get("cwd")
        return self.service.call_in_loop(lambda: self.service.rotate(
            sid, tp if isinstance(tp, str) else None, cwd if isinstance(cwd, str) else None))

    def post_handoff(self, q, body):
        for key in ("task", "body", "project"):
            if not isinstance(body.get(key), str) or not body[key].strip():
                raise HttpError(400, f"{key} is required")
        paths = body.get("paths") or []
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise HttpError(400, "paths must be a list of strings")
        sid = body.get("session_id")
        return self.service.reads.save_handoff(task=body["task"], body=body["body"], paths=paths,
                                               project=body["project"],
                                               from_session=sid if isinstance(sid, str) else None)

    def get_handoffs(self, q, body):
        undelivered = q.get("undelivered") in ("1", "true", "yes")
        rows = self.service.reads.handoffs(project=q.get("project") or None, undelivered=undelivered)
        return {"handoffs": list(rows)}

    def post_handoff_load(self, q, body, token):
        sid = body.get("session_id")
        if not isinstance(sid, str) or not sid:
            raise HttpError(400, "session_id is required")
        try:
            found = self.service.reads.load_handoff(token, sid)
        except KeyError:
            found = None
        if found is None:  # the store answers None for an unknown or malformed token
            raise HttpError(404, f"no handoff {token}")
        return found

    def _sid(self, q) -> str:
        sid = q.get("session_id")
        if not sid:
            raise HttpError(400, "session_id is required")
        return sid

    # history: the caller names its session; service/history/answers.py resolves the lineage and says what next
    def get_history_page(self, q, body):
        from service.history import answers as history

        return history.page(self.service.reads, self._sid(q), _int(q, "page", 1))

    def get_history_search(self, q, body):
        from service.history import answers as history

        if not q.get("q"):
            raise HttpError(400, "q is required")
        return history.search(self.service.reads, self._sid(q), q["q"])

    def get_history_locate(self, q, body):
        from service.history import answers as history

        if not q.get("path"):
            raise HttpError(400, "path is required")
        return history.locate(self.service.reads, self._sid(q), q["path"])

    # Settings are answered redacted (a URL's password never leaves the service) and a masked password
    # sent back keeps the stored one.
    def get_config(self, q, body):
        return redact_settings(self.service.cfg)

    def post_config(self, q, body):
        changes = restore_masked(body, self.service.cfg)
        try:
            if q.get("check") in ("1", "true"):  # validate only: the settings tab checks as the user types
                from service.config import merge

                return redact_settings(merge(self.service.cfg, changes))
            return redact_settings(self.service.call_in_loop(lambda: self.service.update_config(changes)))
        except ConfigError as exc:
            raise HttpError(400, str(exc)) from None

    def secrets_of(self) -> list[str]:
        """The configured URLs whose passwords no answer may carry."""
        cfg = self.service.cfg
        return [str((cfg.get(part) or {}).get("url") or "") for part in ("database", "team")]

    def get_config_defaults(self, q, body):
        from service.config import DEFAULTS

        return DEFAULTS

    def get_openapi(self, q, body):
        from service.api.openapi import document

        return document(self.port)

    def post_statusline(self, q, body):
        from service.limits.serve import answer

        return answer(self.service, body)

    def get_limits(self, q, body):
        from service.limits.serve import limits_view

        return limits_view(self.service, q.get("session") or None)

    def dispatch(self, method: str, path: str, query: dict, body: dict) -> Any:
        allowed = False
        for m, pattern, fn in self.routes:
            match = pattern.match(path)
            if not match:
                continue
            allowed = True
            if m == method:
                return fn(query, body, **{k: unquote(v) for k, v in match.groupdict().items()})
        if allowed:
            raise HttpError(405, f"{method} not allowed on {path}")
        raise HttpError(404, f"no route {path}")


class _Handler(BufferedHandler):
    """One request, read whole by the door (TCP_NODELAY set there: answers go out at once)."""

    api: ApiServer
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S
    server_version = f"ctxlamp/{__version__}"
    sys_version = ""

    def log_message(self, fmt, *args):  # the log file, not stderr
        log.debug("%s " + fmt, self.address_string(), *args)

    def _send(self, status: int, obj: Any, extra: dict | None = None) -> None:
        data = dumps(obj)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: int, message: str, extra: dict | None = None) -> None:
        self._send(status, {"error": redact(message, *self.api.secrets_of())}, extra)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What the standard library answers itself (a request line over 64 KiB: 414, a malformed
        request: 400, headers it cannot parse: 431) in the API's form, JSON, not its HTML page."""
        self.close_connection = True
        short = self.responses.get(code, ("error",))[0]
        self._error(code, (message or short)[:200])

    def _prove(self, raw_query: str) -> None:
        """This service's proof for the client's nonce (service/client/proof.py); the connection stays
        open for the request the client sends once it has checked the proof."""
        nonce = (parse_qs(raw_query).get("nonce") or [""])[-1]
        if not proof.valid_nonce(nonce):
            self.close_connection = True
            return self._error(400, "nonce must be 32 to 128 lower-case hex characters")
        self._send(200, {"proof": proof.answer(self.api.proof_key, nonce, self.api.port)})

    def _handle(self) -> None:
        api = self.api
        host = self.headers.get("Host", "")
        if not _LOOPBACK.match(host.strip()):
            self.close_connection = True
            return self._error(403, "Host must be 127.0.0.1, localhost or [::1]")
        if self.headers.get("Origin") is not None or self.headers.get("Sec-Fetch-Site") is not None:
            self.close_connection = True  # a web page's request: no page may read or steer the service
            return self._error(403, "requests from a browser page are refused")
        parts = urlsplit(self.path)
        if parts.path == proof.PATH and self.command == "GET":
            return self._prove(parts.query)  # before the token: the client has not sent it yet
        if not api.authorized(self.headers.get("Authorization")):
            self.close_connection = True
            return self._error(401, "missing or wrong bearer token (see api.json)", {"WWW-Authenticate": "Bearer"})
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        body: dict = {}
        if self.command in ("POST", "PUT", "PATCH", "DELETE"):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self.close_connection = True
                return self._error(411, "send a Content-Length")
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self.close_connection = True
                return self._error(400, "bad Content-Length")
            if length > MAX_BODY:
                self.close_connection = True
                return self._error(413, f"body over {MAX_BODY} bytes")
            raw = self.rfile.read(length) if length > 0 else b""
            if raw.strip():
                try:
                    body = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    return self._error(400, "body is not JSON")
                except RecursionError:
                    return self._error(400, "body is nested too deeply")
                if not isinstance(body, dict):
                    return self._error(400, "body must be a JSON object")
        if parts.path == "/api/v1/events" and self.command == "GET":
            return self._events()
        try:
            result = api.dispatch(self.command, parts.path, query, body)
        except HttpError as exc:
            return self._error(exc.status, exc.message)
        except Unavailable as exc:
            return self._error(503, f"database unavailable: {exc}")
        except TimeoutError:
            return self._error(503, "the service is busy; try again")
        except (LookupError, ValueError) as exc:
            return self._error(404 if isinstance(exc, LookupError) else 400, str(exc))
        except Exception as exc:  # a bug in a route: say so, keep serving
            log.exception("route %s %s failed", self.command, parts.path)
            return self._error(500, f"{type(exc).__name__}: {exc}")
        self._send(200, result)

    def _events(self) -> None:
        """SSE: the current state first, then whatever the hub publishes."""
        from service.api.sse import encode

        svc = self.api.service
        self.close_connection = True
        client = svc.hub.subscribe_within(MAX_SSE_CLIENTS)
        if client is None and self.api.end_dead_streams():
            client = svc.hub.subscribe_within(MAX_SSE_CLIENTS)
        if client is None:
            return self._error(503, f"{MAX_SSE_CLIENTS} event streams are open already; try again later")
        self.api.streams[client] = self.connection
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Connection", "close")
            self.send_header("X-Accel-Buffering", "no")
            self.end_headers()
            status = svc.status()
            self.wfile.write(encode("service", status["service"]))
            for snap in status["sessions"]:
                self.wfile.write(encode("snapshot", snap))
            self.wfile.write(encode("limits", status["limits"]))
            self.wfile.write(b": following " + str(status["followed"]).encode() + b"\n\n")
            self.wfile.flush()
            while True:
                msg = client.next()
                if msg is None:
                    break
                self.wfile.write(msg)
                self.wfile.flush()
        except (OSError, ValueError):
            pass  # the client went away
        finally:
            svc.hub.unsubscribe(client)
            self.api.streams.pop(client, None)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    def __getattr__(self, name: str):
        """Any other method (TRACE, OPTIONS, QUERY, ...) goes through the same checks -- Host, token, then
        405 on a known path -- instead of the base class's unauthenticated 501 page."""
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

