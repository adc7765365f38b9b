"""The service's side of the store: every write fails open.

Measurement never waits on or stops for the database (docs/measurement.md section 12:
segment archival, reminder records, turn records each degrade on their own).
A failed call is logged once per kind, shows in SERVICE.db, and returns None
so the caller can tell "unavailable" from "no". The API's reads (`StoreReads`
of service/api/reads.py) raise Unavailable instead.
"""
from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from service.api.reads import Row, Unavailable
from service.client.paths import Paths

if TYPE_CHECKING:
    from service.client.payloads import Snapshot
    from service.daemon.first_pass import HistoryRead
    from service.store import Store

log = logging.getLogger("ctxlamp.persist")

SERVICE_BUSY_TIMEOUT_MS = 250
_T = TypeVar("_T")

__all__ = ["Persistence", "Unavailable"]


class Persistence:
    """The service's store, failing open for its writes; the API's `StoreReads` for its reads."""

    def __init__(self, store: Store | None, error: str | None = None) -> None:
        self.store = store
        self.error = error
        self._warned: set[str] = set()
        self.entry_sink = None  # (session, entry) -> None; set when the store keeps channels/turns
        self._all_segments: tuple[tuple[int, int], list[Row]] | None = None  # ((version, limit), rows)

    @property
    def profiles_version(self) -> int:
        """Moves once an archived profile is in the database (not when it is asked for: a batch commits later),
        so what was read from the profiles before that is known to be stale."""
        return self.store.writer.landed("profile") if self.store is not None else 0

    @classmethod
    def open(cls, paths: Paths, cfg: dict) -> "Persistence":
        try:
            from service.store import Store
        except ImportError as exc:
            return cls(None, f"store module unavailable: {exc}")
        try:
            store = _construct(Store, paths, cfg)
        except Exception as exc:  # the database cannot be opened: measure anyway
            log.error("database unavailable: %s", exc)
            return cls(None, f"{type(exc).__name__}: {exc}")
        return cls(store)

    # ---- the plumbing -------------------------------------------------------------
    def _call(self, name: str, fn: Callable[[Store], _T]) -> _T | None:
        """fn(store), or None when there is no store or it fails (logged once per `name`)."""
        if self.store is None:
            return None
        try:
            return fn(self.store)
        except Exception as exc:
            self.error = f"{name}: {type(exc).__name__}: {exc}"
            if name not in self._warned:
                self._warned.add(name)
                log.error("store.%s failed (failing open): %s", name, exc)
            return None

    def _ask(self, name: str, fn: Callable[[Store], _T]) -> _T:
        """For API reads: fn(store), or Unavailable."""
        if self.store is None:
            raise Unavailable(self.error or f"the store has no {name}")
        try:
            return fn(self.store)
        except (KeyError, LookupError, ValueError):
            raise
        except Exception as exc:
            self.error = f"{name}: {type(exc).__name__}: {exc}"
            raise Unavailable(self.error) from exc

    # ---- the API's reads (StoreReads, service/api/reads.py) ------------------------------
    def segments(self, session_id: str | None = None, limit: int = 100) -> list[Row]:
        """Archived profiles, newest first. Every segment (no session named) is what each report and Overview
        answer reads: kept under the profiles' version taken before the rows are read, so a profile committed
        meanwhile, or queued and committed later, moves it and the next answer reads again (decision 507).
        933 profiles took 50 ms to read."""
        if session_id is not None:
            return self._ask("segments", lambda s: s.sessions.segments(session_id, limit))
        key = (self.profiles_version, limit)
        kept = self._all_segments
        if kept is None or kept[0] != key:
            kept = self._all_segments = (key, self._ask("segments", lambda s: s.sessions.segments(None, limit)))
        return [dict(row) for row in kept[1]]

    def restart_figures(self, limit: int) -> list[Row]:
        return self._ask("restart_figures", lambda s: s.sessions.restart_figures(limit))

    def reminders(self, session_id: str | None = None, since: str | None = None) -> list[Row]:
        return self._ask("reminders", lambda s: s.sessions.reminders(session_id, since))

    def save_handoff(self, task: str, body: str, paths: list[str], project: str | None,
                     from_session: str | None = None) -> Row:
        return self._ask("save_handoff", lambda s: s.handoffs.save_handoff(task, body, paths, project, from_session))

    def handoffs(self, project: str | None = None, undelivered: bool = False) -> list[Row]:
        return self._ask("handoffs", lambda s: s.handoffs.recent(project=project, undelivered=undelivered))

    def load_handoff(self, token: str, session_id: str) -> Row | None:
        return self._ask("load_handoff", lambda s: s.handoffs.load_handoff(token, session_id))

    def lineage_of(self, session_id: str) -> str | None:
        return self._ask("lineage_of", lambda s: s.handoffs.lineage_of(session_id))

    def history_page(self, lineage_id: str, page: int, page_size: int = 10) -> Row:
        return self._ask("history_page", lambda s: s.history.history_page(lineage_id, page, page_size))

    def history_search(self, lineage_id: str, query: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[Row], int]:
        return self._ask("history_search",
                         lambda s: s.history.history_search(lineage_id, query, limit, page_size=page_size))

    def history_locate(self, lineage_id: str, path: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[Row], int]:
        return self._ask("history_locate",
                         lambda s: s.history.history_locate(lineage_id, path, limit, page_size=page_size))

    # ---- writes the service makes -------------------------------------------------------
    def remember_session(self, snapshot: "Snapshot | Row", path: str) -> None:
        """A live session's row (its folder, transcript and model), written before its first archived stretch:
        the History tab names a stretch by its session's folder, and only the first pass wrote the rows of the
        sessions it read, so a live session's stretches read "unknown project"."""
        sid = snapshot.get("session_id")
        if sid:
            self._call("upsert_session", lambda s: s.sessions.upsert_session(
                str(sid), transcript=path, project=snapshot.get("project"), model=snapshot.get("model"),
                seen_at=snapshot.get("updated_at")))

    def archive_profile(self, profile: Row) -> None:
        self._call("archive_profile", lambda s: s.sessions.archive_profile(profile))

    def record_reminder(self, session_id: str, segment: int, lap: int, call: Any, at: Any) -> bool | None:
        """True when new, False when the store already had it, None when there is no store."""
        result = self._call("record_reminder", lambda s: s.sessions.record_reminder(session_id, segment, lap, call, at))
        return None if result is None else bool(result)

    def subagent_changed(self, path: Path) -> None:
        """A subagent file grew: spend only, never a session (the report's scan prices it)."""

    # ---- history scan (transcripts older than the live window) --------------------------------
    def wants_scan(self) -> bool:
        return self.store is not None

    def history_states(self) -> dict[str, Row]:
        """path -> where the history's scan of it stopped, for every old transcript it read (one query)."""
        return self._call("scan_states", lambda s: s.spend.scan_states()) or {}

    @staticmethod
    def history_current(known: Row | None, st: Any) -> bool:
        """The history holds an old transcript as it is now: `known` (its entry in `history_states`) has its stat."""
        return known is not None and known.get("size") == st.st_size and known.get("inode") == st.st_ino \
            and known.get("mtime") == st.st_mtime

    def record_history(self, reads: list[tuple[str, HistoryRead]]) -> None:
        """Write what history reads of old transcripts gave (service/daemon/first_pass.py), in one transaction:
        each file's turn records, its session, the profiles of segments no live run archived, its scan state.

        A first start writes hundreds of files: the writes of one kind go out together, as one statement
        per table (the store's `apply_many`), and the archived segments are read once for all the files;
        what lands is what writing the files one by one in their order leaves."""
        import contextlib

        from service.history.sink import MAX_UNSAVED

        if not reads:
            return

        def add_turns(store: Store, batch: list[dict]) -> None:
            store.history.add_turn_records(batch)

        def upsert(store: Store, path: str, session: dict) -> None:
            store.sessions.upsert_session(session["session_id"], transcript=path, project=session.get("project"),
                                          model=session.get("model"), seen_at=session.get("updated_at"))

        def scanned(store: Store, path: str, read: HistoryRead) -> None:
            inode, size, mtime = read.stat
            store.spend.set_scan_state(path, inode=inode, size=size, mtime=mtime, offset=size)

        archived = self._call("segments", lambda s: s.sessions.segment_keys(
            [read.session["session_id"] for _, read in reads])) or set()
        with self.store.batch() if self.store is not None else contextlib.nullcontext():
            for _, read in reads:
                for at in range(0, len(read.turns), MAX_UNSAVED):  # as many at once as the turn sink writes
                    self._call("add_turn_records", functools.partial(add_turns, batch=read.turns[at:at + MAX_UNSAVED]))
            for path, read in reads:
                self._call("upsert_session", functools.partial(upsert, path=path, session=read.session))
            for _, read in reads:
                for profile in read.profiles:
                    key = (str(read.session["session_id"]), int(profile["segment"]))
                    if key not in archived:  # a live run archived it with its real end reason
                        archived.add(key)  # a later file of the same session finds it, as one by one
                        self.archive_profile(profile)
            for path, read in reads:
                self._call("set_scan_state", functools.partial(scanned, path=path, read=read))

    def configure(self, cfg: dict[str, Any]) -> None:
        self._call("configure", lambda s: s.configure(cfg))

    def health(self) -> dict[str, Any]:
        if self.store is None:
            return {"ok": False, "error": self.error}
        checked = self._call("health", lambda s: s.health())
        if isinstance(checked, dict):
            return {"ok": bool(checked.get("ok")), "error": checked.get("error")}
        return {"ok": False, "error": self.error}

    def close(self) -> None:
        self._call("close", lambda s: s.close())


def _construct(Store, paths: Paths, cfg: dict):
    """Store(...) as service/store/ defines it (a database URL wins over the local file)."""
    import sys

    url = (cfg.get("database") or {}).get("url") or ""
    told: set[str] = set()

    def on_message(kind: str, text: str) -> None:  # one line per kind of fault on stderr (the store logs it)
        if kind not in told:
            told.add(kind)
            print(f"ctxlamp: {text}", file=sys.stderr, flush=True)

    # The service writes on its main loop: a database another program holds must not freeze measurement and
    # the API for the 5 s SQLite would wait by default; a short wait, then the store queues and retries.
    return Store(url or paths.db, store_prompts=bool(cfg["history"]["store_prompts"]), on_message=on_message,
                 busy_timeout_ms=SERVICE_BUSY_TIMEOUT_MS, retry_in_background=True)
