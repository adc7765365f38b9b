"""A small client of the local API for the CLI (`ctxlamp status`), tests and benches.

Finds the service through api.json: the user's, else the demo's (service/running.py); stdlib only.
"""
from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any, Iterator

from service.running import service_api_file


class NoService(RuntimeError):
    """No api.json, or nothing answers at its port."""


def discovery(path: Path | None = None) -> dict:
    path = path or service_api_file()  # the user's service, else the demo's (service/running.py)
    try:
        info = json.loads(path.read_text())
        return {"port": int(info["port"]), "token": str(info["token"]), **info}
    except (OSError, ValueError, KeyError, TypeError):
        raise NoService(f"no service found ({path} is missing)") from None


class ApiClient:
    def __init__(self, info: dict | None = None, timeout: float = 10.0) -> None:
        self.info = info or discovery()
        self.timeout = timeout

    def _conn(self, timeout: float | None) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.info["port"], timeout=timeout)

    def request(self, method: str, path: str, body: Any = None, headers: dict | None = None) -> tuple[int, Any]:
        conn = self._conn(self.timeout)
        data = None if body is None else json.dumps(body).encode()
        hdrs = {"Authorization": f"Bearer {self.info['token']}", "Content-Type": "application/json"}
        hdrs.update(headers or {})
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
        except OSError as exc:
            raise NoService(f"the service does not answer on port {self.info['port']}: {exc}") from None
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, raw.decode("utf-8", "replace")

    def get(self, path: str) -> Any:
        status, obj = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {obj}")
        return obj

    def post(self, path: str, body: Any) -> Any:
        status, obj = self.request("POST", path, body)
        if status != 200:
            raise RuntimeError(f"POST {path}: {status} {obj}")
        return obj

    def events(self) -> Iterator[tuple[str, Any]]:
        """(event, data) pairs from /api/v1/events until the stream ends."""
        conn = self._conn(None)
        try:
            conn.request("GET", "/api/v1/events", headers={"Authorization": f"Bearer {self.info['token']}",
                                                           "Accept": "text/event-stream"})
            resp = conn.getresponse()
        except OSError as exc:
            raise NoService(str(exc)) from None
        if resp.status != 200:
            raise RuntimeError(f"events: {resp.status}")
        yield from sse_pairs(resp.fp)


def sse_pairs(fp) -> Iterator[tuple[str, Any]]:
    """(event, data) pairs of a server-sent event stream read from `fp`, until it ends."""
    event, data = "message", list[str]()
    while True:
        line = fp.readline()
        if not line:
            return
        line = line.rstrip(b"\r\n").decode("utf-8", "replace")
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
