"""Where the window gets its data: the live API, or the bundled demo files.

Both answer the same calls with the dicts docs/api.md defines, so the window
and `ctxlamp screenshot --demo` run the same code.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from service.client.api import ApiClient, ApiError

CHANNELS = ("edit", "pinch", "retrieval")


class DataError(RuntimeError):
    pass


class ApiSource:
    """The live service (every call may raise DataError when it is down)."""

    live = True

    def __init__(self, client: ApiClient | None = None):
        self.client = client or ApiClient(timeout=3.0)  # the window waits on it: fail fast, retry later

    def _call(self, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except ApiError as exc:
            raise DataError(str(exc)) from None

    def status(self) -> dict:
        return self._call(self.client.status)

    def series(self, session_id: str) -> dict:
        return self._call(self.client.series, session_id)

    def segments(self) -> dict:
        return self._call(self.client.segments)

    def channel(self, name: str, bucket: str = "day") -> dict:
        return self._call(self.client.channel, name, bucket)

    def select(self, session_id: str, exclude=(), include=()) -> dict:
        return self._call(self.client.select, session_id, list(exclude), list(include))

    def limits(self, session_id: str | None = None) -> dict:
        return self._call(self.client.limits, session_id)

    def config(self) -> dict:
        return self._call(self.client.config)

    def save_config(self, changes: dict) -> dict:
        return self._call(self.client.save_config, changes)

    def check_config(self, changes: dict) -> dict:
        return self._call(self.client.check_config, changes)

    def config_defaults(self) -> dict:
        return self._call(self.client.config_defaults)

    def overview(self, days: int, devices: str | None = None) -> dict:
        return self._call(self.client.overview, days, devices)

    def team(self) -> dict:
        return self._call(self.client.team)

    def sync(self, since: str | None = None) -> dict:
        return self._call(self.client.sync, since)

    def sync_now(self) -> dict:
        return self._call(self.client.sync_now)


def demo_dir() -> Path:
    import resources

    return Path(resources.__file__).resolve().parent / "demo"


class DemoSource:
    """The bundled demo (resources/demo/*.json, made by make_demo.py). Nothing is written."""

    live = False

    def __init__(self, folder: Path | None = None):
        folder = folder or demo_dir()
        try:
            def load(name: str) -> dict:
                return json.loads((folder / name).read_text(encoding="utf-8"))

            self._status = load("status.json")
            self._series = load("series.json")
            self._segments = load("segments.json")
            self._channels = load("channels.json")
            self._config = load("config.json")
            self._overview = load("overview.json") if (folder / "overview.json").exists() else {}
        except (OSError, ValueError) as exc:
            raise DataError(f"demo data unreadable in {folder}: {exc}") from None

    def status(self) -> dict:
        return copy.deepcopy(self._status)

    def series(self, session_id: str) -> dict:
        if session_id not in self._series:
            raise DataError(f"no session {session_id}")
        return copy.deepcopy(self._series[session_id])

    def segments(self) -> dict:
        return copy.deepcopy(self._segments)

    def channel(self, name: str, bucket: str = "day") -> dict:
        return copy.deepcopy(self._channels[name])

    def select(self, session_id: str, exclude=(), include=()) -> dict:
        """The demo cannot revalue; it records the ticks and returns the snapshot unchanged."""
        for p in self._series.get(session_id, {}).get("paths", []):
            if p["path"] in exclude:
                p["selected"], p["why"] = False, "excluded"
            elif p["path"] in include:
                p["selected"], p["why"] = True, None
        for s in self._status["sessions"]:
            if s["session_id"] == session_id:
                return copy.deepcopy(s)
        raise DataError(f"no session {session_id}")

    def config(self) -> dict:
        return copy.deepcopy(self._config)

    def save_config(self, changes: dict) -> dict:
        raise DataError("the demo does not save settings")

    def check_config(self, changes: dict) -> dict:
        """The demo has no service to ask: every typed value is accepted (nothing is saved anyway)."""
        return copy.deepcopy(self._config)

    def config_defaults(self) -> dict:
        return copy.deepcopy(self._config)

    def overview(self, days: int, devices: str | None = None) -> dict:
        if str(days) not in self._overview:
            raise DataError(f"the demo has no {days}-day overview")
        return copy.deepcopy(self._overview[str(days)])

    def team(self) -> dict:
        raise DataError("the demo has no team")

    def sync(self, since: str | None = None) -> dict:
        return {"on": False, "devices": [], "skipped": []}

    def sync_now(self) -> dict:
        raise DataError("the demo does not sync")
