"""The service: wires watcher, live sessions, store, checkpoints, scheduler and API.

Its live sessions (following.py) and its background jobs, checkpoints and the
history scan (jobs.py), are mixins of `Service`, kept in their own modules.

One main loop owns every engine. The watcher, the API and the signal handlers
only put work on its queue (a SimpleQueue: safe to put from a signal handler)
and the loop blocks on it, so an idle service sleeps in one `get()`. API
threads read snapshots under the registry lock and send mutations (selection,
rotation, config) to the loop, waiting for the answer.

Degradation (docs/measurement.md section 12): the store fails open;
an engine error that is not malformed input is a defect: measurement stops,
the error goes to stderr and the log, nothing of the open segments is
archived, no checkpoint is written, and `run()` returns 1.
"""
from __future__ import annotations

import logging
import logging.handlers
import os
import queue
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import Future
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from service import __version__
from service import config as config_mod
from service.api.sse import Hub
from service.daemon.budget_watch import BudgetWatch
from service.daemon.following import Defect, Following
from service.daemon.jobs import Jobs
from service.daemon.persist import Persistence
from service.ingest.live import LiveSession, Registry
from service.ingest.transcript_file import SkipNotes
from service.paths import Paths, claude_projects

log = logging.getLogger("ctxlamp.service")

MAIN_CALL_TIMEOUT_S = 15
SLICE_PAUSE_S = 0.002  # between two slices of a big read, so a waiting API thread gets the registry lock


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def setup_logging(paths: Paths) -> None:
    try:
        handler: logging.Handler = logging.handlers.RotatingFileHandler(paths.log_file, maxBytes=1 << 20,
                                                                        backupCount=3, encoding="utf-8")
    except OSError as exc:  # a read-only or full data folder must not stop measurement: log to stderr
        print(f"ctxlamp: cannot write the log {paths.log_file} ({exc}); logging to stderr", file=sys.stderr,
              flush=True)
        handler = logging.StreamHandler(sys.stderr)
    try:
        os.chmod(paths.log_file, 0o600)
    except OSError:
        pass
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("ctxlamp")
    root.setLevel(logging.INFO)
    if not any(isinstance(h, logging.handlers.RotatingFileHandler) for h in root.handlers):
        root.addHandler(handler)


def engine_config(cfg: dict):
    from service.engine import EngineConfig

    eng = cfg["engine"]
    return EngineConfig(g_floor=float(eng["g_floor"]), eps_amber=float(eng["eps_amber"]),
                        eps_crit=float(eng["eps_crit"]), ratios=dict(cfg["tokenizer"]["ratio"]),
                        exclude_globs=tuple(cfg["selection"]["exclude"]))


class Service(Following, Jobs, BudgetWatch):
    """The service process: one main loop owning every engine (module docstring)."""

    def __init__(self, paths: Paths, cfg: dict, *, projects: Path | None = None,
                 force_polling: bool = False) -> None:
        self.paths = paths
        self.cfg = cfg
        self.projects = projects or claude_projects()
        self.force_polling = force_polling
        self.started_at = iso_now()
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.hub = Hub()
        self.scan = {"state": "idle", "done": 0, "total": 0}
        self._catch_up: dict[str, Path] = {}           # recent sessions still to read at startup, oldest first
        self._history_todo: list[Path] = []
        self._quiet_reminders = False                  # reading what happened while the service was away
        self._catch_up_pause = float(os.environ.get("CTXLAMP_CATCH_UP_PAUSE_S") or 0)  # tests slow it down
        self._ckpt_states: dict[str, dict] = {}        # the loaded checkpoint, for sessions not read yet
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self._pending_follow: dict[str, str] = {}     # session id the hook named -> project folder
        self._published: set[tuple[str, int, int]] = set()
        self._ckpt_laps: dict[str, tuple[int, int]] = {}  # session id -> (segment, laps) at the last checkpoint
        self._ckpt_excluded: dict[str, list[str]] = {}
        self._ckpt_changes = 0
        self._ckpt_armed = False
        self._ckpt_lock = threading.Lock()
        self.checkpoint_info: dict[str, Any] = {"loaded": None, "rejected": []}
        self.reminder_log: list[dict] = []             # published reminders (when the store is down)
        self._outbox: list[dict] = []                  # reminders waiting for their session's snapshot
        self.stopping = threading.Event()
        self._stop_asked = False                        # set by request_stop: the loop ends before other work
        self.skipped = SkipNotes(log)                   # transcripts left unread and why (SERVICE.skipped_files)
        self._reading_on: dict[str, bool] = {}          # path -> quiet: sessions still being read, in slices
        self._sliced = False                           # a read stopped at its slice: let API threads in first
        self.ready = threading.Event()
        self.defect: str | None = None
        self.watcher = None
        self.api = None
        self.scheduler = None
        self.team = None  # service.team.job.TeamPusher when a team is configured
        self.persist: Persistence | None = None
        self.engine_cfg = None
        self.prices = None
        self.registry: Registry | None = None
        self.turn_sink = None
        from service.statusline.book import Book

        self.readings = Book(paths.data / "statusline.json")  # what Claude Code's status line reported

    # ---- setup --------------------------------------------------------------------
    def _make_engine(self, path: Path):
        from service.measure.engines import new_engine

        # series rows, not a whole snapshot per call: the service snapshots once per batch
        return new_engine(str(path), self.prices, self.engine_cfg, full_events=False)

    def _build(self) -> None:
        from service.measure.engines import load_prices

        self.prices = load_prices(self.paths.prices_override)
        self.engine_cfg = engine_config(self.cfg)
        self.registry = Registry(self.projects, self._make_engine)
        self.registry.max_line = config_mod.max_line_bytes(self.cfg)
        self.persist = Persistence.open(self.paths, self.cfg)
        self.registry.entry_sink = self._with_turn_records(self.persist.entry_sink)
        from service.measure.engines import shared_counter

        shared_counter().count("warm up")  # load o200k now, not in the middle of the first live append

    def _with_turn_records(self, other):
        """Turn records (history search) read the same entries as the other sinks (service/history/sink.py)."""
        if self.persist.store is None:
            return other
        from service.history.sink import TurnSink

        store_prompts = bool((self.cfg.get("history") or {}).get("store_prompts", True))
        turns = TurnSink(self.persist.store.add_turn_record, store_prompts=store_prompts, prices=self.prices)
        self.turn_sink = turns
        if other is None:
            return turns

        def both(session, entry):
            turns(session, entry)
            other(session, entry)
        return both

    # ---- the queue ------------------------------------------------------------------
    def on_file_event(self, path: Path, created: bool) -> None:
        """Watcher thread: note the path; the loop reads it (coalesced per path)."""
        key = str(path)
        with self._pending_lock:
            if key in self._pending and not created:
                return
            self._pending.add(key)
        self.queue.put(("change", path, created))

    def call_in_loop(self, fn: Callable[[], Any], timeout: float = MAIN_CALL_TIMEOUT_S) -> Any:
        """Run `fn` on the main loop (it owns the engines) and return its result."""
        fut: Future = Future()
        self.queue.put(("task", fn, fut))
        return fut.result(timeout=timeout)

    def request_stop(self, reason: str = "shutdown") -> None:
        self._stop_asked = True  # ahead of any reading still queued: a stop never waits behind a big file
        self.queue.put(("stop", reason, None))

    def _stop_on_signals(self) -> None:
        """SIGTERM and SIGINT stop the service gracefully.

        A Python signal handler runs in the main thread between two bytecodes, maybe
        while that thread holds the queue's lock inside `get`; putting the stop
        request from the handler would then wait for that lock forever. So the
        handler does nothing, the interpreter's C handler writes the signal's number
        to a pipe, and a thread reading that pipe asks for the stop.
        """
        if os.name == "nt":  # set_wakeup_fd wants a socket there, and SIGTERM is no console event
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.request_stop("shutdown"))
            return
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        wanted = {int(signal.SIGTERM), int(signal.SIGINT)}

        def wait_for_signal() -> None:
            while not wanted.intersection(os.read(read_end, 64)):
                pass
            self.request_stop("shutdown")

        threading.Thread(target=wait_for_signal, name="signals", daemon=True).start()
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        for sig in wanted:
            signal.signal(sig, lambda *_: None)

    # ---- main ---------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until SIGTERM/SIGINT or a defect. Returns the exit code."""
        from service.api.server import ApiServer
        from service.ingest.watch import Watcher

        setup_logging(self.paths)
        log.info("service starting, pid %s, watching %s", os.getpid(), self.projects)
        self._stop_on_signals()
        try:
            self._build()
        except (OSError, ValueError) as exc:  # e.g. an unreadable prices override: say which, do not start
            log.error("cannot start: %s", exc)
            print(f"ctxlamp: cannot start the service: {exc}", file=sys.stderr, flush=True)
            return 2
        self._load_checkpoint()
        self.watcher = Watcher(self.projects, self.on_file_event, force_polling=self.force_polling)
        self.watcher.start()
        try:
            live, old = self._discover()
            self._history_todo = self._plan_scan(old)
            # the API opens first; recent sessions are read by the loop, between requests and changes
            self._catch_up = {str(p): p for p in live}
            if live:
                self.scan = {"state": "catching_up", "done": 0, "total": len(live)}
            self.api = ApiServer(self)
            self.api.start()
            self.ready.set()
            log.info("serving on 127.0.0.1:%s, %d recent sessions to read", self.api.port, len(live))
            self._start_scheduler()
            if not live:
                self._start_scan(self._history_todo)
            self._loop()
        except Defect as exc:
            return self._die(exc)
        except Exception as exc:  # an engine error escaping startup replay is a defect too
            return self._die(exc)
        self._shutdown()
        return 0

    def _loop(self) -> None:
        while True:
            if self._stop_asked:
                return
            if self._catch_up:  # requests and live changes first; the startup reading fills the gaps
                try:
                    kind, a, b = self.queue.get(timeout=self._catch_up_pause) if self._catch_up_pause \
                        else self.queue.get_nowait()
                except queue.Empty:
                    with self.registry.lock:
                        self._catch_up_where(None, limit=1)
                    self._pause_after_slice()
                    continue
            else:
                kind, a, b = self.queue.get()
            if kind == "stop":
                return
            if kind == "change":
                with self._pending_lock:
                    self._pending.discard(str(a))
                with self.registry.lock:
                    self._on_change(a, b)
                self._pause_after_slice()
            elif kind == "task":
                fut: Future = b
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    with self.registry.lock:
                        fut.set_result(a())
                except (ValueError, KeyError, LookupError, config_mod.ConfigError) as exc:
                    fut.set_exception(exc)  # the caller's mistake: a 4xx, nothing stops
                except Exception as exc:
                    fut.set_exception(exc)
                    if isinstance(exc, Defect):
                        raise
                    raise Defect(f"{type(exc).__name__}: {exc}") from exc
            elif kind == "defect":
                raise Defect(a)

    def _pause_after_slice(self) -> None:
        """The registry lock is not fair: after a slice of a big read, without a pause this thread takes it
        again at once and a waiting /status waits for the whole file."""
        if self._sliced:
            self._sliced = False
            time.sleep(SLICE_PAUSE_S)

    def update_config(self, changes: dict) -> dict:
        new = config_mod.merge(self.cfg, changes)
        config_mod.save(self.paths.config_file, new)
        self.cfg = new
        fresh = engine_config(new)
        for name in ("g_floor", "eps_amber", "eps_crit", "ratios", "exclude_globs"):
            setattr(self.engine_cfg, name, getattr(fresh, name))  # shared by every engine: a revaluation
        for sess in self.registry.sessions.values():
            sess.refresh()
            self._publish_snapshot(sess)
        self.persist.configure(new)
        if self.turn_sink is not None:
            self.turn_sink.configure(store_prompts=bool(new["history"]["store_prompts"]))
        if "budgets" in changes or "report" in changes:  # issue 26: the budgets are worked out again
            self._budget_changes = -1
            self._arm_budgets()
        return new

    # ---- outputs ---------------------------------------------------------------------------
    def _publish_snapshot(self, sess: LiveSession) -> None:
        if self.ready.is_set() and sess.snapshot is not None:
            self.hub.publish("snapshot", sess.snapshot)
        self._flush_reminders()

    def _flush_reminders(self) -> None:
        """Reminders go out after the snapshot of their session, so a client knows the session."""
        outbox, self._outbox = self._outbox, []
        for reminder in outbox:
            self.hub.publish("reminder", reminder)

    def service_block(self) -> dict:
        w = self.watcher
        return {"version": __version__, "started_at": self.started_at, "pid": os.getpid(),
                "scan": dict(self.scan), "db": self.persist.health() if self.persist else {"ok": False},
                "observer": w.kind if w else None, "observer_reason": w.reason if w else None,
                "checkpoint": dict(self.checkpoint_info), "skipped_files": self.skipped.rows()}

    def status(self) -> dict:
        with self.registry.lock:
            snaps = self.registry.snapshots()
            followed = self.registry.followed
            by_project = {}
            for path in self.registry.followed_by_project.values():
                sess = self.registry.sessions.get(path)
                if sess is not None and sess.snapshot is not None:
                    by_project[sess.snapshot.get("project") or sess.project_dir] = sess.session_id
            return {"sessions": snaps, "followed": followed.session_id if followed else None,
                    "followed_by_project": by_project, "service": self.service_block(),
                    "limits": self.readings.limits(), "budgets": self.budgets}

    # ---- endings -------------------------------------------------------------------------------
    def _close_io(self) -> None:
        self.stopping.set()
        if self.watcher:
            self.watcher.stop()
        if self.scheduler:
            try:
                self.scheduler.shutdown(wait=False)
            except Exception:
                pass
        self.hub.close_all()
        if self.api:
            self.api.stop()

    def _shutdown(self) -> None:
        """Graceful: archive open segments ("shutdown"), final checkpoint, api.json gone."""
        log.info("shutting down")
        self.stopping.set()  # the history scan stops at its next slice
        self.readings.save()
        if self.api:
            self.api.remove_discovery()
        # checkpoint_now takes the checkpoint lock, then the registry's, as the scheduler's job does;
        # calling it with the registry's lock held would deadlock against a job already running
        self.checkpoint_now(force=True)
        with self.registry.lock:
            for sess in list(self.registry.sessions.values()):
                try:
                    self._handle_events(sess, sess.finish("shutdown"))
                    if self.turn_sink is not None:
                        self.turn_sink.finish(sess)
                except Exception:
                    log.exception("archiving %s at shutdown failed", sess.session_id)
        self._close_io()
        if self.persist:
            self.persist.close()
        log.info("stopped")

    def _die(self, exc: BaseException) -> int:
        detail = "".join(traceback.format_exception(exc))
        self.defect = str(exc)
        log.error("defect: measurement stopped: %s\n%s", exc, detail)
        print(f"ctxlamp: measurement stopped (defect): {exc}\n{detail}", file=sys.stderr, flush=True)
        if self.api:
            self.api.remove_discovery()
        self._close_io()
        if self.persist:
            self.persist.close()
        return 1
