"""Budgets, watched by the service: after spend changed, what was billed today and this month against the
budgets, in `GET /api/v1/status` (`budgets`) and a `budgets` event; a notice once per day or month and
threshold, remembered across restarts (`budget-notices.json` in the data dir).

A part of `Service` (service/daemon/runtime.py: `service.budget_watch`). The job runs only while
something changed since its last run (the checkpoint job's rule): an idle service does no work for it.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from service.daemon.part import ServicePart

if TYPE_CHECKING:
    from service.daemon.runtime import Service

log = logging.getLogger("ctxlamp.service")

BUDGET_EVERY_S = 60.0  # at most this often after a change (tests shorten it: CTXLAMP_BUDGET_EVERY_S)


def _configured(cfg: Any) -> bool:
    from service.report import budgets

    return budgets.configured(cfg)


class BudgetWatch(ServicePart):
    """The budgets job, its state and its notices; `block` is the last figures (None: no budget set)."""

    def __init__(self, svc: Service) -> None:
        super().__init__(svc)
        self.block: dict[str, Any] | None = None
        self._changes = -1  # the registry's change count at the last computation
        self._lock = threading.Lock()
        self._armed = False

    def _budget_file(self) -> Any:
        return self._svc.paths.data / "budget-notices.json"

    def _budget_sent(self) -> set[str]:
        try:
            keys = json.loads(self._budget_file().read_text(encoding="utf-8"))
            return {k for k in keys if isinstance(k, str)} if isinstance(keys, list) else set()
        except (OSError, ValueError):
            return set()

    def schedule(self, scheduler: Any) -> None:
        every = float(os.environ.get("CTXLAMP_BUDGET_EVERY_S") or BUDGET_EVERY_S)
        scheduler.add_job(self.check, "interval", seconds=every, id="budgets", max_instances=1,
                          coalesce=True)

    def _scheduler(self) -> Any:
        return self._svc.jobs.scheduler

    def arm(self) -> None:
        """Something changed: let the job run (it pauses itself once it finds nothing new)."""
        scheduler = self._scheduler()
        if scheduler is None or self._armed or not _configured(self._svc.cfg):
            return
        self._armed = True
        try:
            scheduler.resume_job("budgets")
        except LookupError:  # the job is not there (not scheduled yet): nothing to arm
            self._armed = False

    def recompute(self) -> None:
        """The settings changed: work the budgets out again at the next run."""
        self._changes = -1
        self.arm()

    def _disarm(self) -> None:
        scheduler = self._scheduler()
        if scheduler is not None and self._armed:
            self._armed = False
            try:
                scheduler.pause_job("budgets")
            except LookupError:
                log.debug("budgets: no job to pause")

    def _compute(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """With sync on, every device's spend (the sync folder, UTC days: docs/sync.md); else this one's."""
        from service.report import budgets
        from service.sync.report import devices_budgets

        every = devices_budgets(cfg, self._svc.paths.config)
        return every if every is not None else budgets.compute(cfg)

    def check(self, force: bool = False) -> dict[str, Any] | None:
        """Compute the budgets when spend changed since the last time (or `force`); publish new notices."""
        from service.report import budgets

        cfg = self._svc.cfg
        if not budgets.configured(cfg):
            self.block = None
            self._disarm()
            return None
        registry = self._registry
        with registry.lock:
            changes = registry.changes
        if changes == self._changes and not force and self.block is not None:
            self._disarm()  # nothing new since the last run: sleep until the next change
            return self.block
        with self._lock:
            try:
                block = self._compute(cfg)
            except Exception:  # a report that fails must not stop the service; it is logged
                log.exception("budgets: the report failed")
                return self.block
            self._changes = changes
            sent = self._budget_sent()
            notices, given = budgets.due(block, sent)
            keep = budgets.current_keys(block, sent | given)
            if keep != sent:
                from service.client.privdir import write_private

                write_private(self._budget_file(), json.dumps(sorted(keep)).encode("utf-8"), durable=False)
            self.block = block
        self._svc.hub.publish("budgets", {**block, "notices": notices})
        return block
