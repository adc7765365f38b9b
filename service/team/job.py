"""The service's side of the team view: a scheduled push, and the team report for the desktop's Team tab.

The push runs on the service's APScheduler every `[team] push_every` when a
team is configured at start (a team configured later is picked up at the next
start); it computes with one worker under the report lock (the service has
threads and the report's caches are files) and writes the outbox through the
service's own store.
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable

from service.redact import redact
from service.team.settings import TeamSettings, configured, resolve

if TYPE_CHECKING:
    from service.store import Store

log = logging.getLogger("ctxlamp.team")
FIRST_PUSH_AFTER_S = 30.0


class TeamPusher:
    def __init__(self, config: Callable[[], dict], store: Any):
        self.config = config
        self.store = store
        self.last: dict = {}
        self._lock = threading.Lock()

    @classmethod
    def schedule(cls, scheduler, config: Callable[[], dict], store: Any) -> "TeamPusher | None":
        """Add the push job when a team is configured (None otherwise)."""
        cfg = config()
        if not configured(cfg) or store is None:
            return None
        pusher = cls(config, store)
        every = max(1.0, resolve(cfg).push_every_s)
        first = datetime.now(timezone.utc) + timedelta(seconds=min(every, FIRST_PUSH_AFTER_S))
        scheduler.add_job(pusher.push_now, "interval", seconds=every, id="team-push", max_instances=1,
                          coalesce=True, next_run_time=first)
        return pusher

    def push_now(self, settings: TeamSettings | None = None) -> dict:
        """One push (the configured team, or `settings`); its outcome is kept for GET /api/v1/team."""
        from service.report.cached import SCAN_LOCK
        from service.team.push import outcome

        if settings is None:
            cfg = self.config()
            if not configured(cfg):
                return self.last
            settings = resolve(cfg)
        at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        with self._lock, SCAN_LOCK:  # one scan at a time: the report's caches are files
            try:
                result = outcome(settings, self.store, workers=1)
            except Exception as exc:  # a scheduled job must not die; say what happened
                log.exception("team push failed")  # the log's formatter redacts (service/redact.py)
                result = {"ok": False, "exit_code": 1, "sent": 0, "waiting": None, "rows": None,
                          "message": f"{type(exc).__name__}: {exc}"}
        result["message"] = redact(result["message"], settings.url)
        if not result["ok"]:
            log.warning("team push: %s", result["message"])
        self.last = {"at": at, **result}
        return self.last


def push_for(cfg: dict, pusher: TeamPusher | None, store: Store | None, url: str | None = None,
             member: str | None = None) -> dict:
    """POST /api/v1/team/push (`ctxlamp team push` while the service runs): push now, as the command asks.

    `pusher` is the service's scheduled one (None without a team); `store` its local database.
    LookupError when no team is configured and no URL is given.
    """
    if not url and not configured(cfg):
        raise LookupError("no team configured ([team] url in config.toml, or --url)")
    if store is None:
        return {"ok": False, "exit_code": 1, "sent": 0, "waiting": None, "rows": None,
                "message": "the service has no local database to keep the outbox in"}
    pusher = pusher or TeamPusher(lambda: cfg, store)
    return pusher.push_now(resolve(cfg, url, member))


def team_view(cfg: dict, pusher: TeamPusher | None, since: str | None = None, until: str | None = None) -> dict:
    """GET /api/v1/team: the team report, this member's name and the last scheduled push.

    LookupError when no team is configured; TeamError when the server cannot answer.
    """
    from service.team.report import team_report

    if not configured(cfg):
        raise LookupError("no team configured ([team] url in config.toml)")
    settings = resolve(cfg)
    doc = team_report(settings.url, since, until)
    doc["member"] = settings.member
    doc["last_push"] = pusher.last if pusher is not None else None
    return doc
