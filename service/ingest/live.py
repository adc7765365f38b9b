"""The live sessions: one SessionEngine per growing transcript, and who is followed.

Every main transcript that grows is a live session, measured on its own. Per
project folder one session is *followed* (the newest file); the tray follows
the most recently active session of all. A new file in a project folder (what
`/clear` writes) or a SessionStart hook with another session id *rotates* the
project: the old session's open segment is archived (end_reason "rotation")
and the new one is followed. A session may also leave the live set when it is
idle and too many are live (service/daemon/following.py). The registry holds no
I/O beyond reading the transcripts it tails; the runtime stores and publishes
what it returns.

Thread safety: the runtime's main loop mutates, API threads read; both hold
`Registry.lock`. Snapshots are replaced (never mutated), so a reader may keep one.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, cast

from service.client.payloads import Snapshot
from service.ingest.fairlock import FairLock
from service.ingest.tail import FileTail

EngineFactory = Callable[[Path], Any]
log = logging.getLogger("ctxlamp.ingest")
NOTICE_HOLD_S = 60.0  # the colour published does not step back while the session's last notice is this young
_RANK = {"white": 0, "green": 1, "amber": 2, "red": 3}


@dataclass
class LampHold:
    """The lamp the service publishes while a notice is young: never a step back from the colour shown since
    the notice (amber after red while the red notice is up reads as a contradiction). The engine's lamp does
    not change; the tray, the status line and `ctxlamp status` read the published one, so they agree."""

    since: float | None = None  # wall time of the session's last notice
    segment: int = -1  # the stretch whose notice it was (one notice a stretch)
    lamp: dict | None = None  # the highest lamp published since

    def notice(self, segment: int, lamp: dict | None, now: float) -> bool:
        """A reminder was published; True when it is its stretch's notice (the first), which starts a hold."""
        if segment <= self.segment:
            return False
        self.since, self.segment, self.lamp = now, segment, dict(lamp or {})
        return True

    def shown(self, lamp: dict, now: float) -> dict:
        """The lamp to publish for the engine's `lamp` now."""
        if self.since is None or now - self.since >= NOTICE_HOLD_S or self.lamp is None:
            self.since = None
            return lamp
        if _RANK.get(str(lamp.get("colour")), 0) >= _RANK.get(str(self.lamp.get("colour")), 0):
            self.lamp = dict(lamp)
            return lamp
        return {**self.lamp, "held": True}


def classify(path: Path, projects: Path) -> str | None:
    """"session" for a main transcript, "subagent" for a sidechain file, else None."""
    if path.suffix != ".jsonl":
        return None
    try:
        rel = path.relative_to(projects)
    except ValueError:
        return None
    parts = rel.parts
    if path.name.startswith("agent-") or "subagents" in parts:
        return "subagent"
    if len(parts) == 2:  # <project folder>/<session-id>.jsonl
        return "session"
    return None


@dataclass
class Ingest:
    """What one pump of a session produced."""
    session: "LiveSession"
    events: list[dict] = field(default_factory=list)
    bytes_read: int = 0
    restarted: bool = False
    went_missing: bool = False
    more: bool = False          # stopped at the byte budget: call pump again
    skip_reason: str | None = None  # the path is there but not a file we can read (service/ingest/transcript_file.py)


class LiveSession:
    def __init__(self, path: Path, make_engine: EngineFactory,
                 entry_sink: Callable[["LiveSession", dict], None] | None = None,
                 max_line: int | None = None) -> None:
        self.path = Path(path)
        self.max_line = max_line       # longest line read (None: LineSplitter's default)
        self.entry_sink = entry_sink   # other readers of the parsed entries (channels, turn records)
        self.project_dir = self.path.parent.name
        self._make_engine = make_engine
        self.tail = FileTail(self.path)
        self._new_engine()
        self.snapshot: Snapshot | None = None
        self.hold = LampHold()        # the published colour's hold while a notice is young
        self.last_active = 0.0        # when it grew or the hook named it; after a start's read, its file's mtime
        self.missing = False
        self.finished = False
        self.excluded: set[str] = set()

    @property
    def begun(self) -> bool:
        """Whether the transcript holds a session yet: a call, or an entry naming its project. Claude Code also
        writes files of session titles alone (`summary` lines); one is not listed, published or followed until
        a session starts in it (decision 497)."""
        snap = self.snapshot
        return snap is not None and bool(snap.get("calls") or snap.get("project"))

    def _new_engine(self) -> None:
        from service.engine import LineSplitter

        self.engine = self._make_engine(self.path)
        self.splitter = LineSplitter() if self.max_line is None else LineSplitter(self.max_line)
        self.profiles_archived = 0   # engine.profiles already handed to the store

    @property
    def session_id(self) -> str:
        snap: Snapshot | dict[str, Any] = self.snapshot or {}
        return str(snap.get("session_id") or self.path.stem)

    @property
    def offset(self) -> int:
        """Bytes fully ingested (an unfinished last line does not count)."""
        return self.tail.offset - self.splitter.pending

    def pump(self, budget: int | None = None, until: float | None = None) -> Ingest:
        """Read what was appended and ingest it. Engine defects propagate.

        `budget` bounds the bytes read this call, `until` (time.monotonic) its
        time: a slow file to read (big tool results to tokenize) stops there
        too. None: to the end of the file.
        """
        out = Ingest(self)
        while True:
            chunk = self.tail.read()
            if chunk.missing:
                out.skip_reason = chunk.reason
                if not self.missing:
                    self.missing = out.went_missing = True
                    self.engine.transcript_missing = True
                break
            if self.missing:
                self.missing = self.engine.transcript_missing = False
            if chunk.restart:
                self._new_engine()
                if self.excluded and hasattr(self.engine, "set_excluded"):
                    self.engine.set_excluded(set(self.excluded))
                out.restarted = True
            if chunk.data:
                out.bytes_read += len(chunk.data)
                sink = self.entry_sink
                skipped = self.engine.skipped_lines
                for line in self.splitter.feed(chunk.data):
                    entry = self.engine.feed_line(line)
                    if sink is not None and entry is not None:
                        sink(self, entry)
                if self.engine.skipped_lines != skipped:  # the service's log names the file
                    log.warning("%s: %d more lines that are not JSON objects (or too long) skipped, %d in all",
                                self.path, self.engine.skipped_lines - skipped, self.engine.skipped_lines)
                out.events.extend(self.engine.drain_events())
            if not chunk.more:
                break
            if (budget is not None and out.bytes_read >= budget) or (until is not None and time.monotonic() >= until):
                out.more = True
                break
        if out.bytes_read or out.restarted or out.went_missing:
            self.refresh()
        return out

    def refresh(self) -> Snapshot:
        """Take a new snapshot from the engine (after ingest or revaluation)."""
        snap = cast("Snapshot", dict(self.engine.snapshot()))
        snap.setdefault("transcript", str(self.path))
        snap["lamp"] = cast("Any", self.hold.shown(dict(snap.get("lamp") or {}), time.time()))
        self.snapshot = snap
        return snap

    def new_profiles(self) -> list[dict]:
        """Segment profiles the engine archived since the last call (resets, finish)."""
        profiles = self.engine.profiles[self.profiles_archived:]
        self.profiles_archived = len(self.engine.profiles)
        return list(profiles)

    def series(self) -> dict:
        """SERIES of docs/api.md."""
        eng = self.engine
        calls = eng.live_series() if hasattr(eng, "live_series") else list(eng.series)
        snap: Snapshot | dict[str, Any] = self.snapshot or {}
        return {"session_id": self.session_id, "calls": calls, "resets": list(eng.resets),
                "rewinds": list(getattr(eng, "rewinds", [])),
                "reminders": [dict(r) for r in getattr(eng, "reminders", [])],
                "skeleton": snap.get("skeleton"), "paths": eng.path_rows()}

    def finish(self, end_reason: str) -> list[dict]:
        """Close the open segment; the engine's remaining events (ends with "end")."""
        if self.finished:
            return []
        self.finished = True
        self.engine.finish(end_reason)
        return self.engine.drain_events()

    def ledger_state(self) -> dict:
        """What a checkpoint keeps of this session."""
        state: dict = {}
        getter = getattr(self.engine, "ledger_state", None)
        if callable(getter):
            state.update(getter())
        snap: Snapshot | dict[str, Any] = self.snapshot or {}
        for key in ("segment", "laps", "wallet_phase", "bill_cycle_usd", "reminder", "calls"):
            state.setdefault(key, snap.get(key))
        state.update(session_id=self.session_id, transcript=str(self.path),
                     offset=self.offset, inode=self.tail.inode)
        return state


class Registry:
    def __init__(self, projects: Path, make_engine: EngineFactory) -> None:
        self.projects = projects
        self.make_engine = make_engine
        self.lock = FairLock()  # the service loop lets API threads in between the slices of a big read
        self.sessions: dict[str, LiveSession] = {}        # transcript path -> session
        self.followed_by_project: dict[str, str] = {}     # project folder -> transcript path
        self.followed_path: str | None = None
        self.retired: set[str] = set()                     # rotated away from (a resume brings them back)
        self.changes = 0                                   # bumps on every ingest (checkpoint dirtiness)
        self.entry_sink = None
        self.max_line: int | None = None                   # config's [transcripts] max_line_mb, in bytes

    # -- lookups -----------------------------------------------------------
    def by_id(self, session_id: str) -> LiveSession | None:
        for s in self.sessions.values():
            if s.session_id == session_id:
                return s
        return None

    @property
    def followed(self) -> LiveSession | None:
        return self.sessions.get(self.followed_path) if self.followed_path else None

    def snapshots(self) -> list[Snapshot]:
        """Every live session's snapshot, most recently active first."""
        live = sorted(self.sessions.values(), key=lambda s: s.last_active, reverse=True)
        return [s.snapshot for s in live if s.snapshot is not None and s.begun]

    # -- changes -----------------------------------------------------------
    def add(self, path: Path, *, rotate: bool) -> tuple[LiveSession, LiveSession | None]:
        """Start measuring `path`; with `rotate`, the project's followed session is
        returned for the caller to finish and archive (it leaves the live set)."""
        key = str(path)
        sess = LiveSession(path, self.make_engine, self.entry_sink, self.max_line)
        self.sessions[key] = sess
        self.retired.discard(key)
        old = None
        prev = self.followed_by_project.get(sess.project_dir)
        if rotate and prev and prev != key and prev in self.sessions:
            old = self.sessions.pop(prev)
            self.retired.add(prev)
            if self.followed_path == prev:
                self.followed_path = key
        if rotate or prev is None or prev not in self.sessions:
            self.followed_by_project[sess.project_dir] = key
        return sess, old

    def leave(self, sess: LiveSession) -> None:
        """`sess` leaves the live set (idle); like a session rotated away, a resume brings it back."""
        key = str(sess.path)
        self.sessions.pop(key, None)
        self.retired.add(key)
        if self.followed_by_project.get(sess.project_dir) == key:
            del self.followed_by_project[sess.project_dir]
        if self.followed_path == key:
            newest = max((s for s in self.sessions.values() if s.begun), key=lambda s: s.last_active, default=None)
            self.followed_path = str(newest.path) if newest is not None else None

    def touch(self, sess: LiveSession) -> None:
        """`sess` just grew, or the hook named it: it becomes its project's and the tray's followed session, as
        active as now (a startup read of an older file, going on in slices, no longer takes its place)."""
        self.changes += 1
        sess.last_active = max(sess.last_active, time.time())
        key = str(sess.path)
        if key in self.sessions and sess.begun:
            self.followed_by_project[sess.project_dir] = key
            self.followed_path = key

    def rotate_to(self, path: Path) -> tuple[LiveSession, LiveSession | None]:
        """The hook said `path` is the project's session now."""
        key = str(path)
        existing = self.sessions.get(key)
        if existing is None:
            return self.add(path, rotate=True)
        prev = self.followed_by_project.get(existing.project_dir)
        old = None
        if prev and prev != key and prev in self.sessions:
            old = self.sessions.pop(prev)
            self.retired.add(prev)
        self.followed_by_project[existing.project_dir] = key
        self.followed_path = key
        return existing, old
