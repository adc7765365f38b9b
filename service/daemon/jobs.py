"""The service's background jobs: checkpoints (an apscheduler job armed by changes) and the history scan.

A part of `Service` (service/daemon/runtime.py: `service.jobs`).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.daemon import checkpoint
from service.ingest.transcript_file import Skipped, check
from service.daemon.part import ServicePart

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

    from service.daemon.runtime import Service

log = logging.getLogger("ctxlamp.service")

CHECKPOINT_EVERY_S = 30


class Jobs(ServicePart):
    """The service's jobs: load and write checkpoints, arm the job only while something changed, scan history."""

    def __init__(self, service: Service) -> None:
        super().__init__(service)
        self.scheduler: BackgroundScheduler | None = None
        self.checkpoint_info: dict[str, Any] = {"loaded": None, "rejected": []}
        self.ckpt_states: dict[str, dict] = {}         # the loaded checkpoint, for sessions not read yet
        self.ckpt_laps: dict[str, tuple[int, int]] = {}  # session id -> (segment, laps) at the last checkpoint
        self.ckpt_excluded: dict[str, list[str]] = {}
        self.ckpt_lock = threading.Lock()
        self._ckpt_changes = 0
        self._ckpt_armed = False
        self._fork_server: Any = None  # the first pass's, started ahead on a first start (prestart_first_pass)
        self._fork_server_lock = threading.Lock()
        # the recent sessions were read (Following._caught_up_if_done): the history's writes and progress wait
        # for it, so the store holds what it held when the two ran one after the other (decision 457)
        self.caught_up = threading.Event()
        self.caught_up.set()  # cleared while recent sessions are read at a start
        self.scan_started = False

    def load_checkpoint(self) -> None:
        doc, rejected = checkpoint.load_latest(self._svc.paths.checkpoints)
        self.checkpoint_info = {"loaded": doc.get("n") if doc else None, "rejected": rejected}
        if rejected:
            log.warning("checkpoints rejected (checksum): %s", ", ".join(rejected))
        if not doc:
            return
        self.ckpt_states = dict(doc["sessions"])
        for sid, state in doc["sessions"].items():
            try:
                self.ckpt_laps[sid] = (int(state.get("segment") or 0), int(state.get("laps") or 0))
            except (TypeError, ValueError):
                continue
            if state.get("excluded"):
                self.ckpt_excluded[str(state.get("transcript"))] = list(state["excluded"])

    # ---- checkpoints -------------------------------------------------------------------------
    def start_scheduler(self) -> None:
        """The checkpoint, team push and budget jobs; once, after the startup reading (until then no job
        is armed: a change arms the checkpoint when the scheduler starts)."""
        if self.scheduler is not None:
            return
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(daemon=True)
        every = float(os.environ.get("CTXLAMP_CHECKPOINT_EVERY_S") or CHECKPOINT_EVERY_S)  # tests shorten it
        self.scheduler.add_job(self.checkpoint_now, "interval", seconds=every, id="checkpoint",
                               max_instances=1, coalesce=True)
        from service.team.job import TeamPusher  # the team push, when a team is configured (docs/team.md)

        self._svc.team = TeamPusher.schedule(self.scheduler, lambda: self._svc.cfg, self._persist.store if self._svc.persist else None)
        from service.sync.job import SyncJob  # the sync folder's job (docs/sync.md); idle while sync is off

        self._svc.sync = SyncJob.schedule(self.scheduler, lambda: self._svc.cfg,
                                          self._persist.store if self._svc.persist else None, self._svc.paths.config,
                                          self._svc.budget_watch.recompute,  # budgets count every device
                                          lambda: self._registry.changes)
        budgets = self._svc.budget_watch
        budgets.schedule(self.scheduler)  # the budgets, after spend changed
        self._svc.keeper.schedule(self.scheduler)  # the transcripts' kept copies, after they changed
        self.scheduler.start(paused=False)
        self.scheduler.pause_job("checkpoint")  # armed by the first change: no idle wakeups
        self.scheduler.pause_job("budgets")
        budgets.arm()  # a first look at the budgets (when any is set); then after changes only
        self.arm_checkpoint()

    def arm_checkpoint(self) -> None:
        self._svc.budget_watch.arm()
        self._svc.keeper.arm()
        if self.scheduler is None or self._ckpt_armed:
            return
        if self._registry.changes == self._ckpt_changes:
            return
        self._ckpt_armed = True
        try:
            self.scheduler.resume_job("checkpoint")
        except Exception:
            log.exception("could not arm the checkpoint job")

    def checkpoint_now(self, force: bool = False) -> Path | None:
        """Write a checkpoint if anything changed since the last one (or `force`)."""
        with self.ckpt_lock:
            with self._registry.lock:
                changes = self._registry.changes
                if changes == self._ckpt_changes and not force:
                    self._disarm()
                    return None
                states = {}
                for path in self._svc.following.not_started():  # not read yet: keep what the last checkpoint knew
                    if path.stem in self.ckpt_states:
                        states[path.stem] = self.ckpt_states[path.stem]
                for sess in self._registry.sessions.values():
                    state = sess.ledger_state()
                    state["excluded"] = sorted(sess.excluded)
                    states[sess.session_id] = state
            try:
                path = checkpoint.write(self._svc.paths.checkpoints, states)
            except (OSError, ValueError) as exc:
                log.error("checkpoint failed: %s", exc)
                return None
            self._ckpt_changes = changes
            with self._registry.lock:
                if self._registry.changes == changes:
                    self._disarm()
            if self._svc.sync is not None:
                self._svc.sync.after_checkpoint()
            if self._svc.kept_counts is not None:
                self._svc.kept_counts.save()  # what the next start reads again, counted already
            return path

    def _disarm(self) -> None:
        if self.scheduler is not None and self._ckpt_armed:
            self._ckpt_armed = False
            try:
                self.scheduler.pause_job("checkpoint")
            except Exception:
                pass

    # ---- history scan ------------------------------------------------------------------------
    def prestart_first_pass(self, started: Any = None) -> None:
        """On a first start (no report cache yet: every transcript is to be read), hold the first pass's fork
        server: `started` by `ctxlamp serve` before the service's imports (service/daemon/ahead.py), else
        started now, before the service builds itself, so its imports are done when the pass begins."""
        from service.daemon import ahead

        if not ahead.first_start(self._svc.paths.data):
            if started is not None:
                from service.report import forked

                forked.dismiss(started)
            return
        if started is not None:
            self._fork_server = started
            return
        try:
            self._fork_server = ahead.start_fork_server()
        except OSError as exc:  # the pass starts its own, or reads serially, as without it
            log.warning("the first pass's workers could not be started ahead: %s", exc)

    def _take_fork_server(self) -> Any:
        with self._fork_server_lock:
            server, self._fork_server = self._fork_server, None
        return server

    def dismiss_fork_server(self) -> None:
        server = self._take_fork_server()
        if server is not None:
            from service.report import forked

            forked.dismiss(server)

    def plan_scan(self, old: list[Path]) -> list[Path]:
        """What the background scan will read; SERVICE.scan says so from the first status on."""
        todo = old if old and self._persist.wants_scan() else []
        self._svc.scan = {"state": "scanning", "done": 0, "total": len(todo)}
        return todo

    def workers_ready(self) -> bool:
        """A fork server was started ahead: the first pass reads in worker processes, beside the recent
        sessions the service's loop reads, so it may start before they are read (decision 457)."""
        with self._fork_server_lock:
            return self._fork_server is not None

    def start_scan(self, todo: list[Path]) -> None:
        """The history scan of `todo`, then the report's summary prepared, on a thread of its own."""
        if self.scan_started:
            return
        self.scan_started = True
        if not self.caught_up.is_set():
            log.info("history scan started beside the recent sessions (its writes wait for them)")
        threading.Thread(target=self._scan, args=(todo,), name="history-scan", daemon=True).start()

    def _wait_caught_up(self) -> bool:
        """Block until the recent sessions were read; False when the service stops first."""
        while not self.caught_up.wait(0.2):
            if self._svc.stopping.is_set():
                return False
        return True

    def _scan(self, todo: list[Path]) -> None:
        # idle once the history and the report's scan cache are complete (the Overview and any report
        # are then whole); the summary is prepared after that, and a report asked meanwhile waits for it
        prepare = self._first_pass(todo)
        if not self._wait_caught_up():
            return
        self._svc.scan["state"] = "idle"
        if self._svc.ready.is_set():
            self._svc.hub.publish("service", self._svc.service_block())
        # the History now holds the old sessions' segments (written after the recent sessions were read, when
        # the basis was last learnt): the priced moves take their horizon from them, and the live sessions are
        # published again if it moved (on the loop, which owns the engines)
        self._svc.queue.put(("task", self._svc.following.learn_advice_basis, Future()))
        if prepare:
            self._prepare_report()
        if not self._svc.stopping.is_set():
            self._svc.keeper.run(quiet_s=0)  # every transcript read, once the service is idle

    def _first_pass(self, todo: list[Path]) -> bool:
        """The old transcripts into the history, and every transcript into the report's scan cache, from one
        read of each file in the report's workers (service/daemon/first_pass.py). False when stopping."""
        from service import config as config_mod
        from service.daemon import first_pass
        from service.report import scan

        svc = self._svc
        history: set[str] = set()
        known = self._persist.history_states() if todo else {}
        already = 0  # unreadable, or read before as they are now: counted done once caught up
        for path in todo:
            try:
                st = check(path)
            except Skipped as exc:
                if not exc.gone:
                    svc.skipped.note(path, exc.reason)
                already += 1
                continue
            if self._persist.history_current(known.get(str(path)), st):
                already += 1
            else:
                history.add(str(path))

        def progress(files: int) -> None:
            """`files` more done, with those done before the pass, once the recent sessions were read."""
            nonlocal already
            if self._wait_caught_up():
                svc.scan["done"] += already + files
                already = 0

        def recorded(batch: list[first_pass.Recorded]) -> None:
            if not self._wait_caught_up():  # written after the recent sessions, as when read after them
                return
            self._persist.record_history([(path, read) for path, read, _ in batch if read is not None])
            for path, read, why in batch:
                if read is None and why is not None:
                    svc.skipped.note(Path(path), why)
            progress(len(batch))

        max_line = config_mod.max_line_bytes(svc.cfg)
        began, cpu = time.monotonic(), time.process_time()
        try:
            cache = scan.ScanCache(svc.paths.data / "cache" / "report-scan.json", max_line)
            planned = first_pass.plan(scan.discover(svc.projects, svc.keeper.folder()), cache, history)
            server = self._take_fork_server()
            done = first_pass.run(planned, cache, max_line=max_line, prices=svc.prices, engine_cfg=svc.engine_cfg,
                                  store_prompts=bool(svc.cfg["history"]["store_prompts"]), on_history=recorded,
                                  should_stop=svc.stopping.is_set, server=server)
            if done:
                cache.save()
        except Exception:
            log.exception("the first pass over the history failed (the report will read the transcripts)")
            return not svc.stopping.is_set()
        progress(0)
        log.info("history read in %.1f s: %d files, %.0f MB (the service's CPU meanwhile: %.1f s)",
                 time.monotonic() - began, len(planned.jobs), planned.bytes / 1e6, time.process_time() - cpu)
        return done

    def _prepare_report(self) -> None:
        """Sum the report over the cache the first pass filled (and read any transcript it could not), as
        the first report a user asks for would: that report then reuses the summary (decisions 202, 315)."""
        if self._svc.stopping.is_set():
            return
        from service.config import report_timezone
        from service.days import UnknownZone, Zone
        from service.report import cached

        asked = report_timezone(self._svc.cfg)
        try:
            try:
                zone = Zone.named(asked)
            except UnknownZone:  # the API answers 400 for it; the machine's zone is prepared instead
                zone = Zone.named("")
            began, cpu = time.monotonic(), time.process_time()
            cached.report(None, None, zone, restart_savings=False)
            log.info("report prepared in %.1f s (the service's CPU meanwhile: %.1f s)", time.monotonic() - began,
                     time.process_time() - cpu)
        except Exception:
            log.exception("preparing the report failed (the first report will read the transcripts)")
