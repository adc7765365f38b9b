"""Budgets, watched by the service: after spend changed, what was billed today and this month against the
budgets, in `GET /api/v1/status` (`budgets`) and a `budgets` event; a notice once per day or month and
threshold, remembered across restarts (`budget-notices.json` in the data dir).

A mixin of `Service` (service/daemon/runtime.py). The job runs only while something changed since its
last run (the checkpoint job's rule): an idle service does no work for it.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

log = logging.getLogger("ctxlamp.service")

BUDGET_EVERY_S = 60.0  # at most this often after a change (tests shorten it: CTXLAMP_BUDGET_EVERY_S)


def _configured(cfg: Any) -> bool:
    from service.report import budgets

    return budgets.configured(cfg)


class BudgetWatch:
    """Service methods: the budgets job, its state and its notices."""

    budgets: dict[str, Any] | None = None
    _budget_changes: int = -1
    _budget_lock = threading.Lock()

    def _budget_file(self) -> Any:
        return self.paths.data / "budget-notices.json"  # type: ignore[attr-defined]

    def _budget_sent(self) -> set[str]:
        try:
            keys = json.loads(self._budget_file().read_text(encoding="utf-8"))
            return {k for k in keys if isinstance(k, str)} if isinstance(keys, list) else set()
        except (OSError, ValueError):
            return set()

    def _schedule_budgets(self, scheduler: Any) -> None:
        every = float(os.environ.get("CTXLAMP_BUDGET_EVERY_S") or BUDGET_EVERY_S)
        scheduler.add_job(self.budget_check, "interval", seconds=every, id="budgets", max_instances=1,
                          coalesce=True)

    _budget_armed: bool = False

    def _arm_budgets(self) -> None:
        """Something changed: let the job run (it pauses itself once it finds nothing new)."""
        scheduler = getattr(self, "scheduler", None)
        if scheduler is None or self._budget_armed or not _configured(self.cfg):  # type: ignore[attr-defined]
            return
        self._budget_armed = True
        try:
            scheduler.resume_job("budgets")
        except LookupError:  # the job is not there (not scheduled yet): nothing to arm
            self._budget_armed = False

    def _disarm_budgets(self) -> None:
        scheduler = getattr(self, "scheduler", None)
        if scheduler is not None and self._budget_armed:
            self._budget_armed = False
            try:
                scheduler.pause_job("budgets")
            except LookupError:
                log.debug("budgets: no job to pause")

    def budget_check(self, force: bool = False) -> dict[str, Any] | None:
        """Compute the budgets when spend changed since the last time (or `force`); publish new notices."""
        from service.report import budgets

        cfg = self.cfg  # type: ignore[attr-defined]
        if not budgets.configured(cfg):
            self.budgets = None
            self._disarm_budgets()
            return None
        with self.registry.lock:  # type: ignore[attr-defined]
            changes = self.registry.changes  # type: ignore[attr-defined]
        if changes == self._budget_changes and not force and self.budgets is not None:
            self._disarm_budgets()  # nothing new since the last run: sleep until the next change
            return self.budgets
        with self._budget_lock:
            try:
                block = budgets.compute(cfg)
            except Exception:  # a report that fails must not stop the service; it is logged
                log.exception("budgets: the report failed")
                return self.budgets
            self._budget_changes = changes
            sent = self._budget_sent()
            notices, given = budgets.due(block, sent)
            keep = budgets.current_keys(block, sent | given)
            if keep != sent:
                from service.paths import write_private

                write_private(self._budget_file(), json.dumps(sorted(keep)).encode("utf-8"), durable=False)
            self.budgets = block
        self.hub.publish("budgets", {**block, "notices": notices})  # type: ignore[attr-defined]
        return block
