"""The service: wires watcher, live sessions, store, checkpoints, scheduler and API.

Its live sessions (following.py) and its background jobs, checkpoints and the
history scan (jobs.py), are parts it holds (`service.following`, `service.jobs`).

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
import traceback
from concurrent.futures import Future
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from service import __version__
from service import config as config_mod
from service.api.sse import Hub
from service.daemon.budget_watch import BudgetWatch
from service.daemon.following import Defect, Following
from service.daemon.jobs import Jobs
from service.daemon.keeping import TranscriptKeeper
from service.api.reads import StoreReads
from service.client.payloads import Snapshot
from service.daemon.persist import Persistence
from service.ingest.live import Registry
from service.ingest.transcript_file import SkipNotes
from service.client.paths import Paths, claude_projects

if TYPE_CHECKING:
    from service.api.server import ApiServer
    from service.engine import EngineConfig, PriceTable
    from service.engine_setup.kept_counts import KeptCounts
    from service.ingest.watch import Watcher
    from service.store import Store
    from service.team.job import TeamPusher
    from service.sync.job import SyncJob

log = logging.getLogger("ctxlamp.service")

MAIN_CALL_TIMEOUT_S = 15
HANDOFF_AT_MOST_S = 0.5  # between two slices of a big read, the longest the loop waits for API threads to have the lock


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """The service log and every rotated `service.log.N`: 0600 (each new file after a rollover too;
    the base class opens it with the umask's 0644)."""

    def _open(self) -> Any:  # the base class's hook (returns its stream)
        from service.client.privdir import open_own

        # binary, the text layer writes the line ends (a Windows descriptor in text mode would double the
        # "\r"); never through a link planted at the log's name (setup_logging then logs to stderr)
        fd = open_own(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        if hasattr(os, "fchmod"):
            try:
                os.fchmod(fd, 0o600)  # a file an older version left wider
            except OSError:
                pass
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)


def cannot_start(paths: Paths, why: Any, *, lasting: bool = True) -> int:
    """The service will not start: say why on stderr and in the log (once it is set up), and keep it where
    the tray and `ctxlamp status` read it. Returns the exit code that says so: CANNOT_START when a restart
    would fail alike (`lasting`: settings, the prices file), else 1 (a lock that may be free later)."""
    from service.client import start_failure

    if log.hasHandlers():  # before setup_logging, logging's last resort would print the line twice
        log.error("cannot start: %s", why)
    print(f"ctxlamp: the service cannot start: {why}.", file=sys.stderr, flush=True)
    start_failure.record(paths, str(why))
    return start_failure.CANNOT_START if lasting else 1


def setup_logging(paths: Paths) -> None:
    try:
        handler: logging.Handler = PrivateRotatingFileHandler(paths.log_file, maxBytes=1 << 20, backupCount=3,
                                                              encoding="utf-8")
    except OSError as exc:  # a read-only or full data folder must not stop measurement: log to stderr
        print(f"ctxlamp: cannot write the log {paths.log_file} ({exc}); logging to stderr", file=sys.stderr,
              flush=True)
        handler = logging.StreamHandler(sys.stderr)
    for n in range(1, 4):  # rotated files an older version left 0644
        try:
            os.chmod(f"{paths.log_file}.{n}", 0o600)
        except OSError:
            pass
    from service.redact import RedactingFormatter  # no password of a URL reaches the log

    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
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


class Service:
    """The service process: one main loop owning every engine (module docstring)."""

    def __init__(self, paths: Paths, cfg: dict, *, projects: Path | None = None,
                 force_polling: bool = False, fork_server: Any = None) -> None:
        """`fork_server`: the first pass's, started ahead by `ctxlamp serve` (service/daemon/ahead.py)."""
        self.paths = paths
        self._fork_server_ahead = fork_server
        self.cfg = cfg
        self.projects = projects or claude_projects()
        self.force_polling = force_polling
        self.started_at = iso_now()
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.hub = Hub()
        self.scan: dict[str, Any] = {"state": "idle", "done": 0, "total": 0}
        self._catch_up_pause = float(os.environ.get("CTXLAMP_CATCH_UP_PAUSE_S") or 0)  # tests slow it down
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self.reminder_log: list[dict] = []             # published reminders (when the store is down)
        self.stopping = threading.Event()
        self._stop_asked = False                        # set by request_stop: the loop ends before other work
        self.skipped = SkipNotes(log)                   # transcripts left unread and why (SERVICE.skipped_files)
        self.ready = threading.Event()
        self.defect: str | None = None
        self.watcher: Watcher | None = None
        self.api: ApiServer | None = None
        self.team: TeamPusher | None = None  # when a team is configured (jobs.start_scheduler)
        self.sync: SyncJob | None = None  # the sync folder's job (jobs.start_scheduler)
        self.persist: Persistence | None = None
        self.engine_cfg: EngineConfig | None = None
        self.prices: PriceTable | None = None
        self.registry: Registry | None = None
        self.turn_sink = None
        self.kept_counts: KeptCounts | None = None  # the token counts of the last run (decision 504)
        from service.limits.book import Book

        self.readings = Book(paths.data / "statusline.json")  # what Claude Code's status line reported
        self.following = Following(self)  # live sessions: catch-up, changes, rotation, selection, reminders
        self.jobs = Jobs(self)            # checkpoints and the history scan
        self.budget_watch = BudgetWatch(self)  # the budgets job
        self.keeper = TranscriptKeeper(self)   # the kept copies of transcripts

    # ---- setup --------------------------------------------------------------------
    @property
    def _live(self) -> Registry:
        """The registry of live sessions; made by _build(), before the loop, the API and the jobs start."""
        registry = self.registry
        assert registry is not None
        return registry

    def _make_engine(self, path: Path):
        from service.engine_setup.engines import new_engine

        assert self.prices is not None  # _build() loaded them before the registry that calls this

        # series rows, not a whole snapshot per call: the service snapshots once per batch
        return new_engine(str(path), self.prices, self.engine_cfg, full_events=False)

    def _build(self) -> None:
        from service.engine_setup.engines import load_prices

        self.prices = load_prices(self.paths.prices_override)
        self.engine_cfg = engine_config(self.cfg)
        self.registry = Registry(self.projects, self._make_engine)
        self.registry.max_line = config_mod.max_line_bytes(self.cfg)
        self.persist = Persistence.open(self.paths, self.cfg)
        self.registry.entry_sink = self._with_turn_records(self.persist.entry_sink)
        from service.engine_setup.engines import shared_counter
        from service.engine_setup.kept_counts import KeptCounts, path_in

        self.kept_counts = KeptCounts(shared_counter(), path_in(self.paths.data))
        if not self.kept_counts.load():  # else the counter is built for the first text they lack, if any
            shared_counter().count("warm up")  # load o200k now, not in the middle of the first live append

    def _with_turn_records(self, other):
        """Turn records (history search) read the same entries as the other sinks (service/history/sink.py)."""
        if self.persist.store is None:
            return other
        from service.history.sink import TurnSink

        store_prompts = bool((self.cfg.get("history") or {}).get("store_prompts", True))
        turns = TurnSink(self.persist.store.history.add_turn_records, store_prompts=store_prompts, prices=self.prices)
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
        for signum in wanted:
            signal.signal(signum, lambda *_: None)

    # ---- main ---------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until SIGTERM/SIGINT or a defect. Returns the exit code."""
        from service.api.server import ApiServer
        from service.ingest.watch import Watcher

        setup_logging(self.paths)
        log.info("service starting, pid %s, watching %s", os.getpid(), self.projects)
        self._stop_on_signals()
        self.jobs.prestart_first_pass(self._fork_server_ahead)
        self._fork_server_ahead = None
        try:
            self._build()
        except (OSError, ValueError) as exc:  # e.g. an unreadable prices override: say which, do not start
            return cannot_start(self.paths, exc)
        self.jobs.load_checkpoint()
        self.following.learn_advice_basis()  # before any session is read: its first snapshots use the History
        self.watcher = Watcher(self.projects, self.on_file_event, force_polling=self.force_polling)
        self.watcher.start()
        try:
            live, old = self.following.discover()
            self.following.history_todo = self.jobs.plan_scan(old)
            # the API opens first; recent sessions are read by the loop, between requests and changes
            self.following.catch_up = {str(p): p for p in live}
            if live:
                self.scan = {"state": "catching_up", "done": 0, "total": len(live)}
                self.jobs.caught_up.clear()
            self.api = ApiServer(self)
            self.api.start()
            self.ready.set()
            log.info("serving on 127.0.0.1:%s, %d recent sessions to read", self.api.port, len(live))
            if not live:
                self.jobs.start_scan(self.following.history_todo)
                self.jobs.start_scheduler()
            elif self.jobs.workers_ready():  # its workers read beside the loop; its writes wait (decision 457)
                self.jobs.start_scan(self.following.history_todo)
            # else the scan starts once the recent sessions are read (Following._caught_up_if_done), and the
            # scheduler always then: its start (apscheduler's import, 0.04-0.06 s) would come before the lamp
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
            if self.following.catch_up:  # requests and live changes first; the startup reading fills the gaps
                try:
                    kind, a, b = self.queue.get(timeout=self._catch_up_pause) if self._catch_up_pause \
                        else self.queue.get_nowait()
                except queue.Empty:
                    with self._live.lock:
                        self.following.catch_up_where(None, limit=1)
                    self._pause_after_slice()
                    continue
            else:
                kind, a, b = self.queue.get()
            if kind == "stop":
                return
            if kind == "change":
                with self._pending_lock:
                    self._pending.discard(str(a))
                with self._live.lock:
                    self.following.on_change(a, b)
                self._pause_after_slice()
            elif kind == "task":
                fut: Future = b
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    with self._live.lock:
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
        """After a slice of a big read, the threads waiting for the registry lock have it before this one
        takes it back; a bare lock gave it straight back to this thread, and a /status waited for many
        slices on a busy machine (service/ingest/fairlock.py)."""
        if self.following.sliced:
            self.following.sliced = False
            self._live.lock.let_waiting_in(HANDOFF_AT_MOST_S)

    @property
    def reads(self) -> StoreReads:
        """What the API reads of the store (service/api/reads.py): Unavailable until the store is opened."""
        return self.persist if self.persist is not None else Persistence(None, "the store is not open yet")

    @property
    def store(self) -> Store | None:
        """The local database, None while it cannot be opened (the team push keeps its outbox there)."""
        return self.persist.store if self.persist is not None else None

    def series(self, session_id: str) -> dict | None:
        """A live session's series (the API's GET /sessions/{id}/series), or None for an unknown one."""
        with self._live.lock:
            sess = self._live.by_id(session_id)
            return None if sess is None else sess.series()

    def snapshot_of(self, session_id: str) -> Snapshot | None:
        """A live session's latest snapshot, or None (unknown, or the service not built yet)."""
        if self.registry is None:
            return None
        with self._live.lock:
            sess = self._live.by_id(session_id)
            return sess.snapshot if sess is not None else None

    def rotate(self, session_id: str, transcript_path: str | None = None, cwd: str | None = None) -> dict:
        """POST /rotate (on the loop): follow `session_id` in its project."""
        return self.following.rotate(session_id, transcript_path, cwd)

    def set_selection(self, session_id: str, exclude: list[str], include: list[str]) -> Snapshot:
        """POST /sessions/{id}/selection (on the loop): exclude or include paths, then revalue."""
        return self.following.set_selection(session_id, exclude, include)

    def update_config(self, changes: dict) -> dict:
        new = config_mod.merge(self.cfg, changes)
        config_mod.save(self.paths.config_file, new)
        self.cfg = new
        fresh = engine_config(new)
        for name in ("g_floor", "eps_amber", "eps_crit", "ratios", "exclude_globs"):
            setattr(self.engine_cfg, name, getattr(fresh, name))  # shared by every engine: a revaluation
        for sess in self._live.sessions.values():
            sess.refresh()
            self.following.publish_snapshot(sess)
        if self.persist is not None:
            self.persist.configure(new)
        if self.turn_sink is not None:
            self.turn_sink.configure(store_prompts=bool(new["history"]["store_prompts"]))
        if "budgets" in changes or "report" in changes or "sync" in changes:  # the budgets are worked out again
            self.budget_watch.recompute()
        if "sync" in changes and self.sync is not None:  # its pace, and a folder just set: this device's file
            self.sync.settings_changed()
        return new

    # ---- outputs ---------------------------------------------------------------------------
    def service_block(self) -> dict:
        w = self.watcher
        return {"version": __version__, "started_at": self.started_at, "pid": os.getpid(),
                "scan": dict(self.scan), "db": self.persist.health() if self.persist else {"ok": False},
                "observer": w.kind if w else None, "observer_reason": w.reason if w else None,
                "checkpoint": dict(self.jobs.checkpoint_info), "skipped_files": self.skipped.rows(),
                "kept_transcripts": dict(self.keeper.block)}

    def status(self) -> dict:
        with self._live.lock:
            snaps = self._live.snapshots()
            followed = self._live.followed
            by_project = {}
            for path in self._live.followed_by_project.values():
                sess = self._live.sessions.get(path)
                if sess is not None and sess.snapshot is not None:
                    by_project[sess.snapshot.get("project") or sess.project_dir] = sess.session_id
        from service.claude.settings import idle_compaction_on

        return {"sessions": snaps, "followed": followed.session_id if followed else None,
                "followed_by_project": by_project, "service": self.service_block(),
                "limits": self.readings.limits(), "budgets": self.budget_watch.block,
                # what Claude Code's settings say of its own moves (its idle compaction on a 1-hour cache)
                "claude_code": {"idle_compaction": idle_compaction_on()}}

    # ---- endings -------------------------------------------------------------------------------
    def _close_io(self) -> None:
        self.stopping.set()
        if self.watcher:
            self.watcher.stop()
        if self.jobs.scheduler:
            try:
                self.jobs.scheduler.shutdown(wait=False)
            except Exception:
                pass
        self.hub.close_all()
        if self.api:
            self.api.stop()

    def _shutdown(self) -> None:
        """Graceful: archive open segments ("shutdown"), final checkpoint, api.json gone."""
        log.info("shutting down")
        self.stopping.set()  # the history scan stops at its next slice
        self.jobs.dismiss_fork_server()  # started ahead for a pass that never began
        self.readings.save()
        if self.api:
            self.api.remove_discovery()
        # checkpoint_now takes the checkpoint lock, then the registry's, as the scheduler's job does;
        # calling it with the registry's lock held would deadlock against a job already running
        self.jobs.checkpoint_now(force=True)  # and the token counts
        with self._live.lock:
            for sess in list(self._live.sessions.values()):
                try:
                    self.following.handle_events(sess, sess.finish("shutdown"))
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
