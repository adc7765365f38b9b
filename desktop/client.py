"""A small synchronous client of the local API (stdlib only; loopback, short timeouts).

Every method returns decoded JSON or raises ApiError. The service may restart
at any time on a new port, so api.json is re-read whenever a request fails.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Sequence

from desktop.discovery import ApiInfo, read_api_info


class ApiError(RuntimeError):
    """The service did not answer, or answered with an error."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class ApiClient:
    def __init__(self, info: ApiInfo | None = None, timeout: float = 3.0):
        self._info = info
        self.timeout = timeout

    @property
    def info(self) -> ApiInfo | None:
        if self._info is None:
            self._info = read_api_info()
        return self._info

    def forget(self) -> None:
        """Drop the cached port/token (the service restarted)."""
        self._info = None

    def request(self, method: str, path: str, body: Any = None, query: dict | None = None,
                timeout: float | None = None) -> Any:
        info = self.info
        if info is None:
            raise ApiError("the service is not running (no api.json)")
        url = info.base_url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {info.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            try:
                text = json.loads(exc.read() or b"{}").get("error") or exc.reason
            except ValueError:
                text = exc.reason
            raise ApiError(f"{method} {path}: {exc.code} {text}", exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            self.forget()
            raise ApiError(f"{method} {path}: {exc}") from None
        try:
            return json.loads(raw or b"null")
        except ValueError:
            raise ApiError(f"{method} {path}: answer is not JSON") from None

    # --- the endpoints the desktop uses (docs/api.md) ---
    def health(self) -> dict:
        return self.request("GET", "/health")

    def alive(self) -> bool:
        try:
            return bool(self.health().get("ok"))
        except ApiError:
            return False

    def status(self) -> dict:
        return self.request("GET", "/status")

    def series(self, session_id: str) -> dict:
        return self.request("GET", f"/sessions/{urllib.parse.quote(session_id, safe='')}/series")

    def select(self, session_id: str, exclude: Sequence[str] = (), include: Sequence[str] = ()) -> dict:
        return self.request("POST", f"/sessions/{urllib.parse.quote(session_id, safe='')}/selection",
                            {"exclude": list(exclude), "include": list(include)})

    def segments(self, session: str | None = None, limit: int | None = 200) -> dict:
        return self.request("GET", "/segments", query={"session": session, "limit": limit})

    def channel(self, name: str, bucket: str = "day", since: str | None = None, until: str | None = None) -> dict:
        return self.request("GET", f"/channels/{name}", query={"bucket": bucket, "since": since, "until": until})

    def limits(self, session: str | None = None) -> dict:
        return self.request("GET", "/limits", query={"session": session})

    def config(self) -> dict:
        return self.request("GET", "/config")

    def save_config(self, changes: dict) -> dict:
        return self.request("POST", "/config", changes)

    def check_config(self, changes: dict) -> dict:
        """The service's own validation, nothing saved (400 -> ApiError with the reason)."""
        return self.request("POST", "/config", changes, query={"check": 1})

    def config_defaults(self) -> dict:
        return self.request("GET", "/config/defaults")

    def overview(self, days: int) -> dict:
        """Sums the report over the period: a first (cold) report over a big history takes seconds."""
        return self.request("GET", "/overview", query={"days": days}, timeout=max(self.timeout, 60.0))

    def team(self, since: str | None = None, until: str | None = None) -> dict:
        return self.request("GET", "/team", query={"since": since, "until": until})
