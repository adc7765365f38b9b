"""The one client of the local API: the desktop, the CLI, the hook, the MCP server, tests and benches.

Standard library only (http.client). The service announces its port and token in api.json
(`where.api_file`); it may restart at any time on a new port, so a client that was not handed a
fixed `ApiInfo` reads api.json again after a request fails. Every failure is an `ApiError`: `status`
is the HTTP status when the service answered, None when nothing answered (`down` is then true).

Before the token or any data goes out, the listener proves on the same connection that it is this
user's own service (`service/client/proof.py`); one that cannot is treated as no service, and the
api.json that named it is removed (`forget_stale`).
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from service.client import proof
from service.client.sse import sse_pairs

PREFIX = "/api/v1"


@dataclass(frozen=True)
class ApiInfo:
    """What the service announced in api.json."""

    port: int
    token: str
    pid: int | None = None
    version: str | None = None
    proof_key: str | None = None  # without it the service cannot be told from another listener: refused

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> "ApiInfo":
        """From api.json's fields (ValueError, KeyError or TypeError when they are not a service's)."""
        pid, version, key = data.get("pid"), data.get("version"), data.get("proof_key")
        return cls(port=int(data["port"]), token=str(data["token"]),
                   pid=pid if isinstance(pid, int) else None,
                   version=version if isinstance(version, str) else None,
                   proof_key=key if isinstance(key, str) else None)


def read_api_info(path: Path | str | None = None) -> ApiInfo | None:
    """The service's port and token, or None when no service has announced itself there."""
    if path is None:
        from service.client.where import api_file

        path = api_file()
    try:
        return ApiInfo.of(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def forget_stale(api_file: Path, token: str) -> bool:
    """Remove `api_file` when a service that is gone left it (killed, crashed, a power cut), and its port
    refused the connection or answered without this user's proof. Only while it still names `token`: a
    new service writes a new token, and its file is put back if it arrived meanwhile. Whether it was removed."""
    held = api_file.with_name(f".{api_file.name}.{os.getpid()}.stale")
    try:
        os.replace(api_file, held)  # taken whole: a service starting now writes its own afresh
    except OSError:
        return False
    try:
        same = json.loads(held.read_text(encoding="utf-8")).get("token") == token
    except (OSError, ValueError, AttributeError):
        same = False
    try:
        if same:
            held.unlink()
        else:
            os.replace(held, api_file)  # a new service's file: back where its clients look
    except OSError:
        return False
    return same


class ApiError(RuntimeError):
    """The service did not answer (`status` None), or answered with an error (`status`, `detail`)."""

    def __init__(self, message: str, status: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail

    foreign = False  # something listened but did not prove itself this user's service

    @property
    def down(self) -> bool:
        """No service answered (none announced, or nothing listens at its port)."""
        return self.status is None


class NotOurService(ApiError):
    """The listener at the announced port did not prove it is this user's service: never trusted."""

    foreign = True


class ApiClient:
    """Requests to the running service. `info`: a fixed service (an ApiInfo, or api.json's fields);
    else api.json at `api_file` (default: this user's), read when first needed and again after a failure.
    Paths are the API's own, from /api/v1 (e.g. "/api/v1/status?x=1")."""

    def __init__(self, info: ApiInfo | Mapping[str, Any] | None = None, timeout: float = 10.0,
                 api_file: Path | str | None = None) -> None:
        self._fixed = info is not None
        self._info = info if info is None or isinstance(info, ApiInfo) else ApiInfo.of(info)
        self._api_file = api_file
        self.timeout = timeout

    @property
    def info(self) -> ApiInfo | None:
        if self._info is None:
            self._info = read_api_info(self._api_file)
        return self._info

    def forget(self) -> None:
        """Drop the port and token read from api.json (the service restarted)."""
        if not self._fixed:
            self._info = None

    def _connect(self, timeout: float | None) -> tuple[ApiInfo, http.client.HTTPConnection]:
        info = self.info
        if info is None:
            from service.client.where import api_file

            raise ApiError(f"nothing announced in {self._api_file or api_file()}")
        conn = http.client.HTTPConnection("127.0.0.1", info.port, timeout=timeout)
        try:
            self._prove(info, conn)
        except BaseException:
            conn.close()
            raise
        return info, conn

    def _prove(self, info: ApiInfo, conn: http.client.HTTPConnection) -> None:
        """Ask the listener for its proof on `conn` before anything else goes out (module docstring)."""
        nonce = proof.new_nonce()
        try:
            conn.request("GET", f"{proof.PATH}?nonce={nonce}", headers={"Accept": "application/json"})
            resp = conn.getresponse()
            raw = resp.read(4096)
            whole = resp.isclosed()
        except ConnectionRefusedError:
            self._stale(info)
            raise ApiError(f"nothing listens on port {info.port}: the service that announced it is gone") from None
        except (OSError, http.client.HTTPException) as exc:
            self.forget()
            raise ApiError(f"the ctxlamp service did not answer on port {info.port} "
                           f"({exc.__class__.__name__})") from None
        try:
            said = json.loads(raw).get("proof") if resp.status == 200 and whole else None
        except (ValueError, AttributeError):
            said = None
        if not proof.holds(info.proof_key, nonce, info.port, said):
            self._stale(info)
            raise NotOurService(f"the listener on port {info.port} is not this user's ctxlamp service "
                                "(it could not prove it); nothing was sent to it")

    def _stale(self, info: ApiInfo) -> None:
        """The announced service is gone: forget it, and remove its api.json while it names the token we read."""
        self.forget()
        if not self._fixed:
            from service.client.where import api_file

            forget_stale(Path(self._api_file or api_file()), info.token)

    def exchange(self, method: str, path: str, body: Any = None, query: Mapping[str, Any] | None = None,
                 timeout: float | None = None) -> tuple[int, Any]:
        """(HTTP status, decoded answer) of `method path`; ApiError only when no service answered."""
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                path += ("&" if "?" in path else "?") + urllib.parse.urlencode(q)
        data = None if body is None else json.dumps(body).encode("utf-8")
        info, conn = self._connect(timeout if timeout is not None else self.timeout)
        headers = {"Authorization": f"Bearer {info.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self.forget()
            raise ApiError(f"the ctxlamp service did not answer on port {info.port} "
                           f"({exc.__class__.__name__})") from None
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, raw.decode("utf-8", "replace")

    def request(self, method: str, path: str, body: Any = None, query: Mapping[str, Any] | None = None,
                timeout: float | None = None) -> Any:
        """The decoded answer of `method path`; ApiError when none came or the service refused."""
        status, obj = self.exchange(method, path, body, query, timeout)
        if status >= 400:
            detail = obj.get("error") if isinstance(obj, dict) else obj
            raise ApiError(f"{method} {path.split('?')[0]}: {status} {detail}", status, detail)
        return obj

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def events(self, on_open: Callable[[socket.socket], None] | None = None) -> Iterator[tuple[str, Any]]:
        """(event, data) pairs from the event stream until it ends (ApiError when it cannot start).

        `on_open` gets the stream's socket once the service accepted it: a reader on another thread
        shuts that socket down to stop (http.client lets go of it once a streamed answer starts)."""
        info, conn = self._connect(self.timeout)  # connected, and the listener proved itself
        try:
            sock = conn.sock
            conn.request("GET", PREFIX + "/events", headers={"Authorization": f"Bearer {info.token}",
                                                             "Accept": "text/event-stream",
                                                             "Cache-Control": "no-cache"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise ApiError(f"the event stream answered {resp.status}", resp.status)
            sock.settimeout(None)  # block until the service speaks: no idle wake-ups
            if on_open is not None:
                on_open(sock)
            yield from sse_pairs(resp.fp)
        except (OSError, http.client.HTTPException) as exc:
            self.forget()
            raise ApiError(f"the event stream from port {info.port} broke ({exc.__class__.__name__})") from None
        finally:
            conn.close()

    # --- named routes (docs/api.md) ---
    def health(self) -> dict:
        return self.request("GET", PREFIX + "/health")

    def alive(self) -> bool:
        try:
            return bool(self.health().get("ok"))
        except ApiError:
            return False

    def status(self) -> dict:
        return self.request("GET", PREFIX + "/status")

    def series(self, session_id: str) -> dict:
        return self.request("GET", PREFIX + f"/sessions/{urllib.parse.quote(session_id, safe='')}/series")

    def select(self, session_id: str, exclude: Sequence[str] = (), include: Sequence[str] = ()) -> dict:
        return self.request("POST", PREFIX + f"/sessions/{urllib.parse.quote(session_id, safe='')}/selection",
                            {"exclude": list(exclude), "include": list(include)})

    def segments(self, session: str | None = None, limit: int | None = 200) -> dict:
        return self.request("GET", PREFIX + "/segments", query={"session": session, "limit": limit})

    def channel(self, name: str, bucket: str = "day", since: str | None = None, until: str | None = None) -> dict:
        return self.request("GET", PREFIX + f"/channels/{name}", query={"bucket": bucket, "since": since, "until": until})

    def limits(self, session: str | None = None) -> dict:
        return self.request("GET", PREFIX + "/limits", query={"session": session})

    def config(self) -> dict:
        return self.request("GET", PREFIX + "/config")

    def save_config(self, changes: dict) -> dict:
        return self.request("POST", PREFIX + "/config", changes)

    def check_config(self, changes: dict) -> dict:
        """The service's own validation, nothing saved (400 -> ApiError with the reason)."""
        return self.request("POST", PREFIX + "/config", changes, query={"check": 1})

    def config_defaults(self) -> dict:
        return self.request("GET", PREFIX + "/config/defaults")

    def overview(self, days: int, devices: str | None = None) -> dict:
        """Sums the report over the period: a first (cold) report over a big history takes seconds.
        `devices="all"`: every device of the sync folder, in UTC days."""
        return self.request("GET", PREFIX + "/overview", query={"days": days, "devices": devices},
                            timeout=max(self.timeout, 60.0))

    def get_report(self, since: str | None = None, until: str | None = None, timezone: str | None = None) -> dict:
        return self.request("GET", PREFIX + "/report", query={"since": since or None, "until": until or None,
                                                              "timezone": timezone or None})

    def team(self, since: str | None = None, until: str | None = None) -> dict:
        return self.request("GET", PREFIX + "/team", query={"since": since, "until": until})

    def sync(self, since: str | None = None, until: str | None = None) -> dict:
        """The sync folder's devices and their figures over the period (UTC days), this device, the last sync."""
        return self.request("GET", PREFIX + "/sync", query={"since": since, "until": until})

    def sync_now(self) -> dict:
        """Write this device's figures and read the others' now (a full scan: it may take seconds)."""
        return self.request("POST", PREFIX + "/sync/now", {}, timeout=max(self.timeout, 120.0))
