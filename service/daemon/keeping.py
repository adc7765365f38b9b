"""The service's kept copies of transcripts (service/ingest/kept.py): all of them once the first pass is
done and the service idle, then each transcript that changed once it has been quiet for a while.

A part of `Service` (service/daemon/runtime.py: `service.keeper`). Its job runs only while a changed
transcript waits to be copied (the checkpoint job's rule): an idle service does no work for it.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from service.daemon.part import ServicePart

if TYPE_CHECKING:
    from service.daemon.runtime import Service

log = logging.getLogger("ctxlamp.service")

KEEP_EVERY_S = 300.0  # after a change, look this often (tests shorten it: CTXLAMP_KEEP_EVERY_S)


class TranscriptKeeper(ServicePart):
    def __init__(self, service: Service) -> None:
        super().__init__(service)
        self._armed = False
        self._lock = threading.Lock()
        self.block: dict[str, Any] = {"on": False, "files": 0, "bytes": 0}  # GET /api/v1/status: service.kept

    def on(self) -> bool:
        from service.config import keeps_copies

        return keeps_copies(self._svc.cfg)

    def folder(self):
        from service.ingest.kept import folder_of

        return folder_of(self._svc.paths.data)

    def schedule(self, scheduler: Any) -> None:
        every = float(os.environ.get("CTXLAMP_KEEP_EVERY_S") or KEEP_EVERY_S)
        scheduler.add_job(self._job, "interval", seconds=every, id="keep", max_instances=1, coalesce=True)
        scheduler.pause_job("keep")

    def arm(self) -> None:
        """A transcript changed: let the job run until every changed one is copied."""
        scheduler = self._svc.jobs.scheduler
        if scheduler is None or self._armed or not self.on():
            return
        self._armed = True
        try:
            scheduler.resume_job("keep")
        except LookupError:
            self._armed = False

    def _job(self) -> None:
        quiet = float(os.environ.get("CTXLAMP_KEEP_QUIET_S") or 0) or None
        if not self.run(quiet_s=quiet):
            self._armed = False
            scheduler = self._svc.jobs.scheduler
            try:
                if scheduler is not None:
                    scheduler.pause_job("keep")
            except LookupError:
                pass

    def run(self, quiet_s: float | None = None) -> int:
        """Copy what changed (transcripts quiet for `quiet_s`, kept.QUIET_S by default); how many still wait."""
        from service.ingest import kept
        from service.report import scan

        if not self.on():
            self.block = {"on": False, **self._size()}
            return 0
        with self._lock:
            began = time.monotonic()
            try:
                paths = [tf.path for tf in scan.discover(self._svc.projects)]
                copied, written, waiting = kept.keep(paths, self._svc.projects, self.folder(),
                                                     quiet_s=kept.QUIET_S if quiet_s is None else quiet_s)
            except OSError as exc:
                log.warning("keeping copies of the transcripts failed: %s", exc)
                return 0
            if copied:
                log.info("kept copies of %d transcripts (%.1f MB) in %.1f s", copied, written / 1e6,
                         time.monotonic() - began)
            self.block = {"on": True, **self._size()}
            return waiting

    def _size(self) -> dict[str, int]:
        from service.ingest.kept import kept_size

        files, size = kept_size(self.folder())
        return {"files": files, "bytes": size}
