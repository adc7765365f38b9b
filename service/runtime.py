"""The service: wires watcher, live sessions, store, checkpoints, scheduler and API.

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

import itertools
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

from service import __version__, checkpoint
from service import config as config_mod
from service.live import Ingest, LiveSession, Registry, classify
from service.paths import Paths, claude_projects
from service.persist import Persistence
from service.sse import Hub

log = logging.getLogger("ctxlamp.service")

CHECKPOINT_EVERY_S = 30
MAIN_CALL_TIMEOUT_S = 15
PUMP_BUDGET = 8 << 20  # bytes read per turn of the loop before other work gets a go


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Defect(RuntimeError):
    """An engine error that is not malformed input: measurement must stop."""


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


class Service:
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
        self.ready = threading.Event()
        self.defect: str | None = None
        self.watcher = None
        self.api = None
        self.scheduler = None
        self.persist: Persistence | None = None
        self.engine_cfg = None
        self.prices = None
        self.registry: Registry | None = None
        self.turn_sink = None

    # ---- setup --------------------------------------------------------------------
    def _make_engine(self, path: Path):
        from service.measure import new_engine

        # series rows, not a whole snapshot per call: the service snapshots once per batch
        return new_engine(str(path), self.prices, self.engine_cfg, full_events=False)

    def _build(self) -> None:
        from service.measure import load_prices

        self.prices = load_prices(self.paths.prices_override)
        self.engine_cfg = engine_config(self.cfg)
        self.registry = Registry(self.projects, self._make_engine)
        self.persist = Persistence.open(self.paths, self.cfg)
        self.registry.entry_sink = self._with_turn_records(self.persist.entry_sink)
        from service.measure import shared_counter

        shared_counter().count("warm up")  # load o200k now, not in the middle of the first live append

    def _with_turn_records(self, other):
        """Turn records (history search) read the same entries as the other sinks (service/turn_sink.py)."""
        if self.persist.store is None:
            return other
        from service.turn_sink import TurnSink

        store_prompts = bool((self.cfg.get("history") or {}).get("store_prompts", True))
        turns = TurnSink(self.persist.store.add_turn_record, store_prompts=store_prompts, prices=self.prices)
        self.turn_sink = turns
        if other is None:
            return turns

        def both(session, entry):
            turns(session, entry)
            other(session, entry)
        return both

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
        from service.api import ApiServer
        from service.watch import Watcher

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
            if self._catch_up:  # requests and live changes first; the startup reading fills the gaps
                try:
                    kind, a, b = self.queue.get(timeout=self._catch_up_pause) if self._catch_up_pause \
                        else self.queue.get_nowait()
                except queue.Empty:
                    with self.registry.lock:
                        self._catch_up_where(None, limit=1)
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

    # ---- sessions -----------------------------------------------------------------------
    def _discover(self) -> tuple[list[Path], list[Path]]:
        """Main transcripts modified within `sessions.live_hours` (oldest first), and the rest."""
        horizon = time.time() - float(self.cfg["sessions"]["live_hours"]) * 3600
        live, old = [], []
        if not self.projects.is_dir():
            return live, old
        for path in self.projects.glob("*/*.jsonl"):
            if classify(path, self.projects) != "session":
                continue
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            (live if mtime >= horizon else old).append((mtime, path))
        return [p for _, p in sorted(live)], [p for _, p in sorted(old)]

    def _catch_up_where(self, wanted: Callable[[Path], bool] | None, limit: int | None = None) -> None:
        """Read startup sessions (all `wanted` ones, else the next `limit`); caller holds registry.lock.

        Laps they crossed while the service was away are recorded, not announced,
        as before the API opened first.
        """
        paths = list(itertools.islice(self._catch_up.values(), limit)) if wanted is None \
            else [p for p in self._catch_up.values() if wanted(p)]
        for path in paths:
            del self._catch_up[str(path)]
            self.scan["done"] += 1
            if str(path) in self.registry.sessions or str(path) in self.registry.retired:
                continue
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            self._quiet_reminders = True
            try:
                sess = self._start_session(path, rotate=False, mtime=mtime)
            finally:
                self._quiet_reminders = False
            self._publish_snapshot(sess)
        if paths and not self._catch_up:
            log.info("caught up: %d live sessions", len(self.registry.sessions))
            self._ckpt_states = {}
            self.scan = {"state": "scanning", "done": 0, "total": len(self._history_todo)} if self._history_todo \
                else {"state": "idle", "done": 0, "total": 0}
            self.hub.publish("service", self.service_block())
            self._start_scan(self._history_todo)

    def _start_session(self, path: Path, *, rotate: bool, mtime: float | None = None) -> LiveSession:
        sess, old = self.registry.add(path, rotate=rotate)
        excluded = self._ckpt_excluded.get(str(path))
        if excluded:
            sess.excluded = set(excluded)
            sess.engine.set_excluded(set(excluded))
        if old is not None:
            self._retire(old, "rotation", successor=sess)
        self._pump(sess)
        if mtime is not None:
            sess.last_active = mtime
        if sess.snapshot is None:
            sess.refresh()
        # the newest session of the project (and of all) is followed
        fp = self.registry.followed_by_project.get(sess.project_dir)
        cur = self.registry.sessions.get(fp) if fp else None
        if cur is None or cur.last_active <= sess.last_active:
            self.registry.followed_by_project[sess.project_dir] = str(path)
        top = self.registry.followed
        if top is None or top.last_active <= sess.last_active:
            self.registry.followed_path = str(path)
        return sess

    def _on_change(self, path: Path, created: bool) -> None:
        kind = classify(path, self.projects)
        if kind == "subagent":
            self.persist.subagent_changed(path)
            return
        if kind != "session":
            return
        key = str(path)
        if key in self._catch_up:
            self._catch_up_where(lambda p: str(p) == key)
            return
        sess = self.registry.sessions.get(key)
        if sess is None:
            if not path.exists():
                return
            wanted = self._pending_follow.pop(path.stem, None)
            rotate = (created and key not in self.registry.retired) or wanted is not None
            sess = self._start_session(path, rotate=rotate)
            self.registry.touch(sess)
            self._arm_checkpoint()
            self._publish_snapshot(sess)
            return
        ing = self._pump(sess, budget=PUMP_BUDGET)
        if ing.bytes_read or ing.restarted:
            self.registry.touch(sess)
            self._arm_checkpoint()
        if ing.more:  # a big append: let API calls in between, then read on
            self.on_file_event(path, False)
            return
        if ing.bytes_read or ing.restarted or ing.went_missing:
            self._publish_snapshot(sess)

    def _pump(self, sess: LiveSession, budget: int | None = None) -> Ingest:
        try:
            ing = sess.pump(budget)
        except Exception as exc:  # Malformed never escapes feed_line: this is a defect
            raise Defect(f"{type(exc).__name__}: {exc} (transcript {sess.path})") from exc
        self._handle_events(sess, ing.events)
        return ing

    def _handle_events(self, sess: LiveSession, events: list[dict]) -> None:
        for ev in events:
            if ev.get("event") == "reminder":  # priced with the snapshot the batch ended on
                self._on_reminder(sess, ev, sess.snapshot or {})
        for profile in sess.new_profiles():
            self.persist.archive_profile(profile)

    def _on_reminder(self, sess: LiveSession, ev: dict, snap: dict) -> None:
        sid = str(ev.get("session_id") or sess.session_id)
        seg, lap = int(ev.get("segment") or 0), int(ev["lap"])
        key = (sid, seg, lap)
        if key in self._published:
            return
        self._published.add(key)
        stored = self.persist.record_reminder(sid, seg, lap, ev.get("call"), ev.get("at"))
        if stored is None or (stored and not self.persist.health()["ok"]):
            # no working database to say what was raised before this process: the checkpoint does
            ck = self._ckpt_laps.get(sid)
            stored = not (ck and (seg, lap) <= ck)
        if not stored:
            return
        stock = snap.get("totalStock") or 0
        cold = (snap.get("cache") or {}).get("cold_rewrite_usd")
        restart = cold * snap.get("B_default", 0) / stock if cold is not None and stock else None
        reminder = {"session_id": sid, "segment": seg, "lap": lap, "call": ev.get("call"), "at": ev.get("at"),
                    "restart_usd": restart, "payback_calls": snap.get("pp"),
                    "rent_usd": snap.get("bill_cycle_usd")}
        self.reminder_log.append(reminder)
        if self.ready.is_set() and not self._quiet_reminders:
            self._outbox.append(reminder)  # published right after the session's snapshot
        log.info("reminder: session %s segment %s lap %s", sid, seg, lap)

    def _retire(self, old: LiveSession, reason: str, successor: LiveSession | None = None) -> None:
        """Archive the open segment of a session we stop following."""
        events = old.finish(reason)
        self._handle_events(old, events)
        if self.turn_sink is not None:
            self.turn_sink.finish(old)
        log.info("rotation: %s -> %s", old.session_id, successor.session_id if successor else None)
        if self.ready.is_set():
            self.hub.publish("rotated", {"from": old.session_id, "to": successor.session_id if successor else None,
                                         "project": old.project_dir})
            self._flush_reminders()

    def rotate(self, session_id: str, transcript_path: str | None = None, cwd: str | None = None) -> dict:
        """POST /rotate (runs on the loop): follow `session_id` in its project."""
        if self._catch_up:  # the project's recent sessions first, as if read at startup
            folders = {Path(transcript_path).parent.name if transcript_path else None, project_folder(cwd)}
            self._catch_up_where(lambda p: p.parent.name in folders or p.stem == session_id)
        path = None
        if transcript_path:
            p = Path(transcript_path)
            if classify(p, self.projects) == "session":
                path = p
        if path is None:
            known = self.registry.by_id(session_id)
            if known is not None:
                path = known.path
        if path is None:
            found = sorted(self.projects.glob(f"*/{session_id}.jsonl"))
            path = found[0] if found else None
        if path is None or not path.exists():
            # the hook can run before Claude Code writes the file: rotate when it appears
            self._pending_follow[session_id] = (path.parent.name if path else project_folder(cwd)) or ""
            return {"ok": True, "following": session_id, "pending": True}
        key = str(path)
        if key in self.registry.sessions:
            sess, old = self.registry.rotate_to(path)
            if old is not None:
                self._retire(old, "rotation", successor=sess)
        else:
            sess = self._start_session(path, rotate=True)
        self.registry.touch(sess)
        self._arm_checkpoint()
        self._publish_snapshot(sess)
        return {"ok": True, "following": sess.session_id}

    def set_selection(self, session_id: str, exclude: list[str], include: list[str]) -> dict:
        self._catch_up_where(lambda p: p.stem == session_id)
        sess = self.registry.by_id(session_id)
        if sess is None:
            raise KeyError(session_id)
        sess.excluded |= set(exclude)
        sess.excluded -= set(include)
        sess.engine.set_excluded(set(sess.excluded))
        if hasattr(sess.engine, "recheck_paths"):
            sess.engine.recheck_paths()
        snap = sess.refresh()
        self.registry.changes += 1
        self._arm_checkpoint()
        self._publish_snapshot(sess)
        return snap

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
                "checkpoint": dict(self.checkpoint_info)}

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
                    "followed_by_project": by_project, "service": self.service_block()}

    # ---- checkpoints -------------------------------------------------------------------------
    def _start_scheduler(self) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(daemon=True)
        every = float(os.environ.get("CTXLAMP_CHECKPOINT_EVERY_S") or CHECKPOINT_EVERY_S)  # tests shorten it
        self.scheduler.add_job(self.checkpoint_now, "interval", seconds=every, id="checkpoint",
                               max_instances=1, coalesce=True)
        self.scheduler.start(paused=False)
        self.scheduler.pause_job("checkpoint")  # armed by the first change: no idle wakeups
        self._arm_checkpoint()

    def _arm_checkpoint(self) -> None:
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
                                       store_prompts=bool(self.cfg["history"]["store_prompts"]))
            except Exception:
                log.exception("history scan of %s failed (skipped)", path)
            self.scan["done"] += 1
        self.scan["state"] = "idle"
        if self.ready.is_set():
            self.hub.publish("service", self.service_block())

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


def project_folder(cwd: str | None) -> str | None:
    """Claude Code's folder name for a cwd (every non-alphanumeric character becomes '-')."""
    if not cwd:
        return None
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in cwd)
