"""The service's live sessions: which transcripts it follows, reading them, rotation, reminders.

A part of `Service` (service/daemon/runtime.py: `service.following`); everything
here runs on the service's main loop, which owns every engine.
"""
from __future__ import annotations

import itertools
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

if TYPE_CHECKING:
    from service.client.payloads import Snapshot
    from service.daemon.runtime import Service

from service.client.words import restart_cost
from service.ingest.live import Ingest, LiveSession, classify
from service.ingest.transcript_file import Skipped, open_fd
from service.daemon.part import ServicePart

log = logging.getLogger("ctxlamp.service")

RESTART_HISTORY = 500  # the newest segments whose runs after a reminder give the popup's median
PUMP_BUDGET = 8 << 20  # bytes read per turn of the loop before other work gets a go
PUMP_SLICE_S = 0.1     # and time: a file slow to ingest (big tool results to tokenize) yields as often


class Defect(RuntimeError):
    """An engine error that is not malformed input: measurement must stop."""


class Following(ServicePart):
    """The service's live sessions: startup catch-up, file changes, rotation, selection, reminders."""

    def __init__(self, service: Service) -> None:
        super().__init__(service)
        self.catch_up: dict[str, Path] = {}            # recent sessions still to read at startup, oldest first
        self.held_back: dict[str, Path] = {}           # recent beyond sessions.live_max: live once they grow
        self.resting: dict[str, Path] = {}             # left the live set idle: live again once they grow
        self.history_todo: list[Path] = []
        self.sliced = False                            # a read stopped at its slice: let API threads in first
        self._quiet_reminders = False                  # reading what happened while the service was away
        self._pending_follow: dict[str, str] = {}      # session id the hook named -> project folder
        self._published: set[tuple[str, int, int]] = set()
        self._outbox: list[dict] = []                  # reminders waiting for their session's snapshot
        self._reading_on: dict[str, bool] = {}         # path -> quiet: sessions still being read, in slices
        self._usual_run: tuple[int, float | None, int] | None = None  # (profiles_version, median, segments)
        self._basis_version: int | None = None         # profiles_version the advice's basis was learnt at
        self._followed_told: str | None = None         # the followed session the last `followed` event named

    # ---- outputs ---------------------------------------------------------------------------
    def publish_snapshot(self, sess: LiveSession) -> None:
        if self._svc.ready.is_set() and sess.snapshot is not None and sess.begun:
            self._svc.hub.publish("snapshot", sess.snapshot)
        self._flush_reminders()
        self.tell_followed()

    def tell_followed(self) -> None:
        """A `followed` event when the session the service follows is another one (it grew, a start found it
        the newest, the hook named it): the tray, the window and `ctxlamp status` then show the one this
        service follows, never a guess of their own (decision 496). Clients learn it first from /status."""
        followed = self._registry.followed
        sid = followed.session_id if followed is not None else None
        if sid != self._followed_told and self._svc.ready.is_set():
            self._followed_told = sid
            self._svc.hub.publish("followed", {"session_id": sid})

    def _flush_reminders(self) -> None:
        """Reminders go out after the snapshot of their session, so a client knows the session."""
        outbox, self._outbox = self._outbox, []
        for reminder in outbox:
            self._svc.hub.publish("reminder", reminder)

    # ---- sessions -----------------------------------------------------------------------
    def discover(self) -> tuple[list[Path], list[Path]]:
        """The main transcripts to start as live sessions, and the rest, for the first pass (each oldest first).

        Live: the newest `sessions.live_max` of those modified within `sessions.live_hours`. A person
        has a handful of sessions going at once; a history copied or restored today (every file just
        written) would otherwise start hundreds of engines before the first pass. The recent ones past
        the cap are read by the first pass like any old transcript and kept in `held_back`: the first
        change to one starts it as a live session, read from byte zero as at a start.
        """
        hours = float(self._svc.cfg["sessions"]["live_hours"])
        cap = int(self._svc.cfg["sessions"]["live_max"])
        horizon = time.time() - hours * 3600
        recent: list[tuple[float, Path]] = []
        old: list[tuple[float, Path]] = []
        self.held_back = {}
        if not self._svc.projects.is_dir():
            return [], []
        for path in self._svc.projects.glob("*/*.jsonl"):
            if classify(path, self._svc.projects) != "session":
                continue
            try:
                mtime = path.stat().st_mtime
            except OSError:
                self._readable(path)  # names it (a symlink loop, say) unless it is simply gone
                continue
            (recent if mtime >= horizon else old).append((mtime, path))
        recent.sort()
        held = recent[:max(0, len(recent) - cap)]
        self.held_back = {str(p): p for _, p in held}
        return [p for _, p in recent[len(held):]], [p for _, p in sorted(old + held)]

    def not_started(self) -> list[Path]:
        """Recent transcripts that are no live session now: found at start and not read yet, or left the live
        set idle (a checkpoint keeps their state)."""
        return [*self.catch_up.values(), *self.held_back.values(), *self.resting.values()]

    def catch_up_where(self, wanted: Callable[[Path], bool] | None, limit: int | None = None) -> None:
        """Read startup sessions (all `wanted` ones, else the next `limit`); caller holds registry.lock.

        Laps they crossed while the service was away are recorded, not announced,
        as before the API opened first.
        """
        paths = list(itertools.islice(self.catch_up.values(), limit)) if wanted is None \
            else [p for p in self.catch_up.values() if wanted(p)]
        for path in paths:
            del self.catch_up[str(path)]
            self._svc.scan["done"] += 1
            if str(path) in self._registry.sessions or str(path) in self._registry.retired:
                continue
            self._start_quietly(path)
        if paths:
            self._caught_up_if_done()

    def _start_quietly(self, path: Path) -> LiveSession | None:
        """Start a session found at start: laps it crossed while the service was away are recorded, not announced."""
        if not self._readable(path):
            return None
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return None
        self._quiet_reminders = True
        try:
            sess = self._start_session(path, rotate=False, mtime=mtime)
        finally:
            self._quiet_reminders = False
        self.publish_snapshot(sess)
        return sess

    def _caught_up_if_done(self) -> None:
        """The startup reading is over once every recent session was started and read to its end
        (a big one goes on in slices): then SERVICE.scan leaves catching_up and the history scan starts."""
        if self.catch_up or any(self._reading_on.values()) or self._svc.scan.get("state") != "catching_up":
            return
        log.info("caught up: %d live sessions", len(self._registry.sessions))
        self.learn_advice_basis()
        held = {p.stem for p in self.not_started()}  # what the last checkpoint knew of them is kept
        self._svc.jobs.ckpt_states = {sid: st for sid, st in self._svc.jobs.ckpt_states.items() if sid in held}
        self._svc.scan = {"state": "scanning", "done": 0, "total": len(self.history_todo)}
        self._svc.jobs.caught_up.set()  # the history's writes, held until now, go on (decision 457)
        self._svc.hub.publish("service", self._svc.service_block())
        self._svc.jobs.start_scan(self.history_todo)  # unless its workers started it with the service
        self._svc.jobs.start_scheduler()

    def _start_session(self, path: Path, *, rotate: bool, mtime: float | None = None) -> LiveSession:
        self.held_back.pop(str(path), None)
        self.resting.pop(str(path), None)
        sess, old = self._registry.add(path, rotate=rotate)
        excluded = self._svc.jobs.ckpt_excluded.get(str(path))
        if excluded:
            sess.excluded = set(excluded)
            sess.engine.set_excluded(set(excluded))
        if old is not None:
            self._retire(old, "rotation", successor=sess)
        if self._pump(sess, budget=PUMP_BUDGET, until=time.monotonic() + PUMP_SLICE_S).more:
            # a big file: read on in slices between other work (a startup read stays quiet)
            self._reading_on[str(path)] = self._quiet_reminders
            self.sliced = True
            self._svc.on_file_event(path, False)
        # a start's read is as recent as its file; a session that appears or the hook names is active now
        sess.last_active = mtime if mtime is not None else time.time()
        if sess.snapshot is None:
            sess.refresh()
        self._follow_if_newest(sess, ties=True)
        self._rest_idle(sess)
        return sess

    def _follow_if_newest(self, sess: LiveSession, *, ties: bool) -> None:
        """The newest session of the project (and of all) is followed; with `ties`, also one as new (the later
        started of sessions written at the same moment: the start order, oldest first, decides)."""
        if not sess.begun:  # a file of session titles alone is no session to follow (decision 497)
            return

        def newer(other: LiveSession | None) -> bool:
            return other is None or other.last_active < sess.last_active or (
                ties and other.last_active == sess.last_active)

        fp = self._registry.followed_by_project.get(sess.project_dir)
        if newer(self._registry.sessions.get(fp) if fp else None):
            self._registry.followed_by_project[sess.project_dir] = str(sess.path)
        if newer(self._registry.followed):
            self._registry.followed_path = str(sess.path)

    def _as_recent_as_its_file(self, sess: LiveSession) -> None:
        """After a slice of a startup read: the session is as recent as its file, not as the moment this
        slice read it, so which session is followed after a restart does not depend on which files were big
        enough to be read in slices, nor on how fast (it took the followed place from the newest one)."""
        try:
            sess.last_active = max(sess.last_active, sess.path.stat().st_mtime)
        except OSError:
            pass
        self._follow_if_newest(sess, ties=False)

    def _rest_idle(self, new: LiveSession) -> None:
        """Over `sessions.live_max` live sessions, those idle for longer than `sessions.live_hours` leave the
        live set, least recently active first (never `new`), as they would be history after a restart: the
        open segment is archived as at a transcript's end and the engine freed. A service that runs for weeks
        keeps the sessions a person has going, not every one it saw; one that grows again is live again,
        read from byte zero (a resume)."""
        sessions = self._registry.sessions
        excess = len(sessions) - int(self._svc.cfg["sessions"]["live_max"])
        if excess <= 0:
            return
        horizon = time.time() - float(self._svc.cfg["sessions"]["live_hours"]) * 3600
        idle = sorted((s for s in sessions.values() if s is not new and s.last_active < horizon
                       and str(s.path) not in self._reading_on), key=lambda s: s.last_active)
        jobs = self._svc.jobs
        for sess in idle[:excess]:
            self._registry.leave(sess)
            self._retire(sess, "end")
            # the paths its user unticked come back with it, in this run and after a restart
            state = sess.ledger_state()
            state["excluded"] = sorted(sess.excluded)
            jobs.ckpt_states[sess.session_id] = state
            jobs.ckpt_excluded[str(sess.path)] = state["excluded"]
            self.resting[str(sess.path)] = sess.path

    def on_change(self, path: Path, created: bool) -> None:
        kind = classify(path, self._svc.projects)
        if kind == "subagent":
            self._persist.subagent_changed(path)
            return
        if kind != "session":
            return
        key = str(path)
        if key in self.catch_up:
            self.catch_up_where(lambda p: str(p) == key)
            return
        if key in self.held_back:  # recent at start but past the cap: it grew, so it is live now, read from byte zero
            started = self._start_quietly(path)
            if started is not None:
                self._registry.touch(started)
                self._svc.jobs.arm_checkpoint()
            return
        sess = self._registry.sessions.get(key)
        if sess is None:
            if self._reading_on.pop(key, None) is not None:  # rotated away while read in slices: not a resume
                self._caught_up_if_done()
                return
            if not self._readable(path):
                return
            wanted = self._pending_follow.pop(path.stem, None)
            rotate = (created and key not in self._registry.retired) or wanted is not None
            sess = self._start_session(path, rotate=rotate)
            self._registry.touch(sess)
            self._svc.jobs.arm_checkpoint()
            self.publish_snapshot(sess)
            return
        quiet = self._reading_on.pop(key, False)  # the rest of a startup read: laps recorded, not announced
        self._quiet_reminders = quiet
        try:
            ing = self._pump(sess, budget=PUMP_BUDGET, until=time.monotonic() + PUMP_SLICE_S)
        finally:
            self._quiet_reminders = False
        if ing.skip_reason:
            self._svc.skipped.note(path, ing.skip_reason)
        elif ing.bytes_read or ing.restarted or sess.missing:  # readable again, or simply gone
            self._svc.skipped.forget(path)
        if ing.bytes_read or ing.restarted:
            if quiet:
                self._as_recent_as_its_file(sess)
            else:
                self._registry.touch(sess)
            self._svc.jobs.arm_checkpoint()
        if ing.more:  # a big append: let API calls in between, then read on
            self._reading_on[key] = quiet
            self.sliced = True
            self._svc.on_file_event(path, False)
            return
        if quiet:
            self._caught_up_if_done()
        if ing.bytes_read or ing.restarted or ing.went_missing:
            self.publish_snapshot(sess)

    def _readable(self, path: Path) -> bool:
        """Whether `path` is a regular file we may read; a path that is there but is not is named once."""
        try:
            os.close(open_fd(path)[0])
        except Skipped as exc:
            if exc.gone:  # deleted: it leaves the list
                self._svc.skipped.forget(path)
            else:
                self._svc.skipped.note(path, exc.reason)
            return False
        self._svc.skipped.forget(path)
        return True

    def _pump(self, sess: LiveSession, budget: int | None = None, until: float | None = None) -> Ingest:
        try:
            ing = sess.pump(budget, until)
        except Exception as exc:  # Malformed never escapes feed_line: this is a defect
            raise Defect(f"{type(exc).__name__}: {exc} (transcript {sess.path})") from exc
        if self._svc.turn_sink is not None:
            self._svc.turn_sink.flush()  # the piece's turns in one transaction
        self.handle_events(sess, ing.events)
        return ing

    def handle_events(self, sess: LiveSession, events: list[dict]) -> None:
        for ev in events:
            if ev.get("event") == "reminder":  # priced with the snapshot the batch ended on
                self._on_reminder(sess, ev, sess.snapshot or {})
        archived = False
        for profile in sess.new_profiles():
            if not archived and sess.snapshot is not None:  # its stretches are named by the session's folder
                self._persist.remember_session(sess.snapshot, str(sess.path))
            self._persist.archive_profile(profile)
            archived = True
        if archived and not self._quiet_reminders:
            self.learn_advice_basis()

    def learn_advice_basis(self) -> None:
        """The priced moves' horizon and compaction from this user's archived segments (measurement.md 15),
        set on the engines' shared config: a revaluation, so the live sessions are published again."""
        from service.report.restart import advice_basis

        version = self._persist.profiles_version
        if self._basis_version == version:
            return
        self._basis_version = version
        try:
            profiles = self._persist.restart_figures(RESTART_HISTORY) or []
        except Exception:  # no History to read: the documented defaults
            profiles = []
        basis, _ = advice_basis(profiles)
        try:  # the followed schedule's notices keep the user's own gap (docs/measurement.md 14)
            from dataclasses import replace

            from service.config import ConfigError, parse_duration

            gap = parse_duration(str(self._svc.cfg["reminders"]["min_gap"]))
            basis = replace(basis, notice_gap_s=float(gap)).bounded()
        except (KeyError, TypeError, ValueError, ConfigError):  # a config without it: the default gap
            pass
        lead = (self._svc.cfg.get("limits") or {}).get("idle_notice_s") if isinstance(self._svc.cfg, dict) else None
        if isinstance(lead, (int, float)) and not isinstance(lead, bool):  # the cache notice's own lead
            basis = replace(basis, idle_notice_s=float(lead)).bounded()
        cfg = self._svc.engine_cfg
        if cfg is None or cfg.advice == basis:
            return
        cfg.advice = basis
        for sess in list(self._registry.sessions.values()):  # published again, as after a settings change
            if sess.snapshot is not None:
                sess.refresh()
                self.publish_snapshot(sess)

    def _on_reminder(self, sess: LiveSession, ev: dict, snap: Snapshot | dict[str, Any]) -> None:
        sid = str(ev.get("session_id") or sess.session_id)
        seg, lap = int(ev.get("segment") or 0), int(ev["lap"])
        key = (sid, seg, lap)
        if key in self._published:
            return
        self._published.add(key)
        stored = self._persist.record_reminder(sid, seg, lap, ev.get("call"), ev.get("at"))
        if stored is None or (stored and not self._persist.health()["ok"]):
            # no working database to say what was raised before this process: the checkpoint does
            ck = self._svc.jobs.ckpt_laps.get(sid)
            stored = not (ck and (seg, lap) <= ck)
        if not stored:
            return
        restart = restart_cost(cast("dict", snap))  # the notice's rebuild, as the tooltip prices it after
        reminder = {"session_id": sid, "segment": seg, "lap": lap, "call": ev.get("call"), "at": ev.get("at"),
                    "restart_usd": restart, "payback_calls": snap.get("pp"),
                    "rent_usd": snap.get("bill_cycle_usd"), "restart_now": self._restart_now(sess, snap)}
        self._svc.reminder_log.append(reminder)
        if self._svc.ready.is_set() and not self._quiet_reminders:
            self._outbox.append(reminder)  # published right after the session's snapshot
            if sess.hold.notice(seg, cast("dict", snap.get("lamp")), time.time()):
                self._release_hold_later(sess)
        # one line a notice raised now; those a start finds crossed while it was away (a history's worth) are recorded
        (log.debug if self._quiet_reminders else log.info)("reminder: session %s segment %s lap %s", sid, seg, lap)

    def _release_hold_later(self, sess: LiveSession) -> None:
        """Publish the session again when its notice's hold ends, so the colour it held does not linger."""
        from concurrent.futures import Future
        from threading import Timer

        from service.ingest.live import NOTICE_HOLD_S

        def release() -> None:
            if sess.snapshot is not None and self._registry.sessions.get(str(sess.path)) is sess:
                sess.refresh()
                self.publish_snapshot(sess)

        timer = Timer(NOTICE_HOLD_S + 0.1, lambda: self._svc.queue.put(("task", release, Future())))
        timer.daemon = True
        timer.start()

    def _restart_now(self, sess: LiveSession, snap: Snapshot | dict[str, Any]) -> dict | None:
        """What a restart now would save if the session runs on as long as this user's segments usually do
        after a reminder (the median over History), labelled an estimate; None without a History to go by."""
        _, median, reminded = self._usual_run_after_reminder()
        estimate = sess.engine.restart_estimate(median, snap) if median is not None and snap else None
        if estimate is None:
            return None
        return {"label": "estimated", "history_segments": reminded, **estimate}

    def _usual_run_after_reminder(self) -> tuple[int, float | None, int]:
        """(profiles version, median calls after a first reminder, segments that had one) over the newest
        archived segments; read again only after a profile was archived (a startup read raises hundreds of
        reminders, and each read every profile)."""
        from service.report.restart import figures_of, median_calls_after_reminder

        version = self._persist.profiles_version
        if self._usual_run is None or self._usual_run[0] != version:
            try:
                profiles = self._persist.restart_figures(RESTART_HISTORY) or []
            except Exception:  # no History to read: the popup goes without the estimate
                profiles = []
            reminded = sum(1 for p in profiles if ((figures_of(p) or {}).get("first_reminder_call") is not None))
            self._usual_run = (version, median_calls_after_reminder(profiles), reminded)
        return self._usual_run

    def _retire(self, old: LiveSession, reason: str, successor: LiveSession | None = None) -> None:
        """Archive the open segment of a session we stop following."""
        events = old.finish(reason)
        self.handle_events(old, events)
        if self._svc.turn_sink is not None:
            self._svc.turn_sink.finish(old)
        log.info("%s: %s -> %s", reason, old.session_id, successor.session_id if successor else None)
        if self._svc.ready.is_set():
            self._svc.hub.publish("rotated", {"from": old.session_id, "to": successor.session_id if successor else None,
                                         "project": old.project_dir})
            self._flush_reminders()
            self.tell_followed()

    def rotate(self, session_id: str, transcript_path: str | None = None, cwd: str | None = None) -> dict:
        """POST /rotate (runs on the loop): follow `session_id` in its project."""
        if self.catch_up:  # the project's recent sessions first, as if read at startup
            folders = {Path(transcript_path).parent.name if transcript_path else None, project_folder(cwd)}
            self.catch_up_where(lambda p: p.parent.name in folders or p.stem == session_id)
        path = None
        if transcript_path:
            p = Path(transcript_path)
            if classify(p, self._svc.projects) == "session":
                path = p
        if path is None:
            known = self._registry.by_id(session_id)
            if known is not None:
                path = known.path
        if path is None:
            found = sorted(self._svc.projects.glob(f"*/{session_id}.jsonl"))
            path = found[0] if found else None
        if path is None or not self._readable(path):
            # the hook can run before Claude Code writes the file: rotate when it appears
            self._pending_follow[session_id] = (path.parent.name if path else project_folder(cwd)) or ""
            return {"ok": True, "following": session_id, "pending": True}
        key = str(path)
        if key in self.held_back:  # read as if at start, then followed
            self._start_quietly(path)
        if key in self._registry.sessions:
            sess, old = self._registry.rotate_to(path)
            if old is not None:
                self._retire(old, "rotation", successor=sess)
        else:
            sess = self._start_session(path, rotate=True)
        self._registry.touch(sess)
        self._svc.jobs.arm_checkpoint()
        self.publish_snapshot(sess)
        return {"ok": True, "following": sess.session_id}

    def set_selection(self, session_id: str, exclude: list[str], include: list[str]) -> Snapshot:
        self.catch_up_where(lambda p: p.stem == session_id)
        sess = self._registry.by_id(session_id)
        if sess is None:
            raise KeyError(session_id)
        sess.excluded |= set(exclude)
        sess.excluded -= set(include)
        sess.engine.set_excluded(set(sess.excluded))
        if hasattr(sess.engine, "recheck_paths"):
            sess.engine.recheck_paths()
        snap = sess.refresh()
        self._registry.changes += 1
        self._svc.jobs.arm_checkpoint()
        self.publish_snapshot(sess)
        return snap


def project_folder(cwd: str | None) -> str | None:
    """Claude Code's folder name for a cwd (every non-alphanumeric character becomes '-')."""
    if not cwd:
        return None
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in cwd)
