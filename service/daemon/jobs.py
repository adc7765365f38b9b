"""The service's background jobs: checkpoints (an apscheduler job armed by changes) and the history scan.

A mixin of `Service` (service/daemon/runtime.py).
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from service.daemon import checkpoint
from service.ingest.live import classify
from service.ingest.transcript_file import Skipped

log = logging.getLogger("ctxlamp.service")

CHECKPOINT_EVERY_S = 30


class Jobs:
    """Service methods: load and write checkpoints, arm the job only while something changed, scan history."""

    def _load_checkpoint(self) -> None:
        doc, rejected = checkpoint.load_latest(self.paths.checkpoints)
        self.checkpoint_info = {"loaded": doc.get("n") if doc else None, "rejected": rejected}
        if rejected:
            log.warning("checkpoints rejected (checksum): %s", ", ".join(rejected))
        if not doc:
            return
        self._ckpt_states = dict(doc["sessions"])
        for sid, state in doc["sessions"].items():
            try:
                self._ckpt_laps[sid] = (int(state.get("segment") or 0), int(state.get("laps") or 0))
            except (TypeError, ValueError):
                continue
            if state.get("excluded"):
                self._ckpt_excluded[str(state.get("transcript"))] = list(state["excluded"])

    # ---- checkpoints -------------------------------------------------------------------------
    def _start_scheduler(self) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(daemon=True)
        every = float(os.environ.get("CTXLAMP_CHECKPOINT_EVERY_S") or CHECKPOINT_EVERY_S)  # tests shorten it
        self.scheduler.add_job(self.checkpoint_now, "interval", seconds=every, id="checkpoint",
                               max_instances=1, coalesce=True)
        from service.team.job import TeamPusher  # the team push, when a team is configured (docs/team.md)

        self.team = TeamPusher.schedule(self.scheduler, lambda: self.cfg, self.persist.store if self.persist else None)
        self._schedule_budgets(self.scheduler)  # issue 26: budgets, after spend changed
        self.scheduler.start(paused=False)
        self.scheduler.pause_job("checkpoint")  # armed by the first change: no idle wakeups
        self.scheduler.pause_job("budgets")
        self._arm_budgets()  # a first look at the budgets (when any is set); then after changes only
        self._arm_checkpoint()

    def _arm_checkpoint(self) -> None:
        self._arm_budgets()
        if self.scheduler is None or self._ckpt_armed:
            return
        if self.registry.changes == self._ckpt_changes:
            return
        self._ckpt_armed = True
        try:
            self.scheduler.resume_job("checkpoint")
        except Exception:
            log.exception("could not arm the checkpoint job")

    def checkpoint_now(self, force: bool = False) -> Path | None:
        """Write a checkpoint if anything changed since the last one (or `force`)."""
        with self._ckpt_lock:
            with self.registry.lock:
                changes = self.registry.changes
                if changes == self._ckpt_changes and not force:
                    self._disarm()
                    return None
                states = {}
                for path in self._catch_up.values():  # not read yet: keep what the last checkpoint knew
                    if path.stem in self._ckpt_states:
                        states[path.stem] = self._ckpt_states[path.stem]
                for sess in self.registry.sessions.values():
                    state = sess.ledger_state()
                    state["excluded"] = sorted(sess.excluded)
                    states[sess.session_id] = state
            try:
                path = checkpoint.write(self.paths.checkpoints, states)
            except (OSError, ValueError) as exc:
                log.error("checkpoint failed: %s", exc)
                return None
            self._ckpt_changes = changes
            with self.registry.lock:
                if self.registry.changes == changes:
                    self._disarm()
            return path

    def _disarm(self) -> None:
        if self.scheduler is not None and self._ckpt_armed:
            self._ckpt_armed = False
            try:
                self.scheduler.pause_job("checkpoint")
            except Exception:
                pass

    # ---- history scan ------------------------------------------------------------------------
    def _plan_scan(self, old: list[Path]) -> list[Path]:
        """What the background scan will read; SERVICE.scan says so from the first status on."""
        if not old or not self.persist.wants_scan():
            return []
        self.scan = {"state": "scanning", "done": 0, "total": len(old)}
        return old

    def _start_scan(self, todo: list[Path]) -> None:
        if todo:
            threading.Thread(target=self._scan, args=(todo,), name="history-scan", daemon=True).start()

    def _scan(self, todo: list[Path]) -> None:
        for path in todo:
            if self.stopping.is_set():
                return
            try:
                self.persist.scan_file(path, classify(path, self.projects), self.prices, self.engine_cfg,
                                       store_prompts=bool(self.cfg["history"]["store_prompts"]),
                                       max_line=self.registry.max_line, should_stop=self.stopping.is_set)
            except Skipped as exc:
                if not exc.gone:
                    self.skipped.note(path, exc.reason)
            except Exception:
                log.exception("history scan of %s failed (skipped)", path)
            self.scan["done"] += 1
        self.scan["state"] = "idle"
        if self.ready.is_set():
            self.hub.publish("service", self.service_block())
