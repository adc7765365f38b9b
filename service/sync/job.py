"""The service's side of sync: on its schedule (`[sync] every`) and soon after each checkpoint, this
device's file written and the others' read; the last outcome kept for GET /api/v1/sync.

It computes with one worker under the report lock (the service has threads and the report's caches
are files), with the rent and restart savings of its own profiles. With sync off, a run costs one
look at the config; with no live session changed since the last write, one reading of the folder. After a checkpoint it runs at most once a minute: the figures change call by
call, the other devices need them only as often as their sync tool carries them.
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger("ctxlamp.sync")
FIRST_SYNC_AFTER_S = 30.0
AFTER_CHECKPOINT_GAP_S = 60.0
REWRITE_S = 3600.0  # an idle device rewrites its file this often all the same (its "last seen")


class SyncJob:
    def __init__(self, config: Callable[[], dict], store: Any, config_dir: Path,
                 synced: Callable[[], None] | None = None, changes: Callable[[], int] | None = None):
        self.config = config
        self.store = store
        self.config_dir = config_dir
        self.synced = synced  # called after each sync that wrote (the budgets are worked out again)
        self.changes = changes  # the live sessions' change count: unchanged, the file is not computed again
        self.last: dict = {}
        self.scheduler: Any = None
        self._lock = threading.Lock()
        self._last_run = 0.0
        self._written: tuple[Any, ...] | None = None  # (changes, folder) of the last write
        self._written_at = 0.0

    @classmethod
    def schedule(cls, scheduler: Any, config: Callable[[], dict], store: Any, config_dir: Path,
                 synced: Callable[[], None] | None = None, changes: Callable[[], int] | None = None) -> "SyncJob":
        """Add the sync job (it runs whatever the config says then; with sync off it does nothing)."""
        from service.sync.settings import resolve

        job = cls(config, store, config_dir, synced, changes)
        job.scheduler = scheduler
        every = resolve(config()).every_s
        first = datetime.now(timezone.utc) + timedelta(seconds=min(every, FIRST_SYNC_AFTER_S))
        scheduler.add_job(job.run, "interval", seconds=every, id="sync", max_instances=1, coalesce=True,
                          next_run_time=first)
        return job

    def after_checkpoint(self) -> None:
        """A checkpoint was written: sync soon, when sync is on and the last sync is a minute old."""
        import time

        if time.monotonic() - self._last_run >= AFTER_CHECKPOINT_GAP_S:
            self.soon()

    def settings_changed(self) -> None:
        """`[sync]` changed: the job at its new pace, and a sync at once (a folder just set, a new name)."""
        from service.sync.settings import resolve

        if self.scheduler is None:
            return
        try:
            self.scheduler.reschedule_job("sync", trigger="interval", seconds=resolve(self.config()).every_s)
        except Exception:  # the scheduler is shutting down
            log.debug("could not reschedule the sync job", exc_info=True)
        self._written = None
        self.soon()

    def soon(self) -> None:
        """Sync now on the scheduler's thread (sync turned on, a checkpoint), when sync is on."""
        from service.sync.settings import resolve

        if self.scheduler is None or not resolve(self.config()).on:
            return
        try:
            self.scheduler.modify_job("sync", next_run_time=datetime.now(timezone.utc))
        except Exception:  # the scheduler is shutting down
            log.debug("could not move the sync job", exc_info=True)

    def run(self, force: bool = False) -> dict:
        """One sync when sync is on (its outcome is kept and returned). Unless `force`d, a device whose
        sessions did not change since its last write only reads the others' files (an hour at the most)."""
        import time

        from service.report.cached import SCAN_LOCK
        from service.sync.run import SyncError, sync_now
        from service.sync.settings import resolve

        cfg = self.config()
        settings = resolve(cfg)
        if not settings.on:
            self.last = {}
            return self.last
        at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        state = (self.changes() if self.changes is not None else None, settings.folder)
        if not force and state == self._written and time.monotonic() - self._written_at < REWRITE_S \
                and state[0] is not None:
            return self._read_only(at, cfg)
        with self._lock, SCAN_LOCK:  # one scan at a time: the report's caches are files
            self._last_run = time.monotonic()
            try:
                outcome = sync_now(cfg, self.config_dir, store=self.store, workers=1)
                self._written, self._written_at = state, time.monotonic()
                result = {"ok": True, "message": f"wrote {outcome.written.name if outcome.written else 'nothing'}; "
                          f"read {len(outcome.reading.devices)} device file(s)",
                          "skipped": [{"file": f, "reason": r} for f, r in outcome.reading.skipped]}
            except SyncError as exc:
                result = {"ok": False, "message": str(exc), "skipped": []}
            except Exception as exc:  # a scheduled job must not die; say what happened
                log.exception("sync failed")
                result = {"ok": False, "message": f"{type(exc).__name__}: {exc}", "skipped": []}
        if not result["ok"]:
            log.warning("sync: %s", result["message"])
        elif self.synced is not None:
            self.synced()
        self.last = {"at": at, **result}
        return self.last

    def _read_only(self, at: str, cfg: dict) -> dict:
        """Nothing new here: the other devices' files read (they may have changed), this one's left."""
        from service.sync import folder as shared
        from service.sync.run import SyncError, checked_folder
        from service.sync.sealed import load_passphrase
        from service.sync.settings import resolve

        try:
            reading = shared.read(checked_folder(resolve(cfg)), load_passphrase(self.config_dir))
        except SyncError as exc:
            self.last = {"at": at, "ok": False, "message": str(exc), "skipped": []}
            return self.last
        if self.synced is not None:
            self.synced()
        self.last = {"at": at, "ok": True, "message": f"read {len(reading.devices)} device file(s); this one's "
                     "unchanged", "skipped": [{"file": f, "reason": r} for f, r in reading.skipped]}
        return self.last


def sync_view(cfg: dict, job: SyncJob | None, config_dir: Path, since: str | None = None,
              until: str | None = None) -> dict:
    """GET /api/v1/sync: whether sync is on, this device, every device's figures over the period (UTC days),
    the files left out, and the last sync."""
    from service.sync.report import devices_only
    from service.sync.run import device_of
    from service.sync.settings import resolve

    settings = resolve(cfg)
    device = device_of(cfg, config_dir)
    listing = devices_only(cfg, config_dir, since, until) if settings.on else {"devices": [], "skipped": []}
    return {"on": settings.on, "folder": settings.folder, "device": {"id": device.id, "name": device.name},
            **listing, "last": job.last if job is not None else {}}
