"""The service's side of the store: every write fails open.

Measurement never waits on or stops for the database (docs/measurement.md section 12:
segment archival, reminder records, turn records each degrade on their own).
A failed call is logged once per kind, shows in SERVICE.db, and returns None
so the caller can tell "unavailable" from "no". The API's reads (`StoreReads`
of service/api/reads.py) raise Unavailable instead.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from service.api.reads import Row, Unavailable
from service.client.paths import Paths

if TYPE_CHECKING:
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
        self.profiles_version = 0  # moves after each archived profile: what was read from them may be stale
        self._version_lock = threading.Lock()

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
        return self._ask("segments", lambda s: s.sessions.segments(session_id, limit))

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
    def archive_profile(self, profile: Row) -> None:
        self._call("archive_profile", lambda s: s.sessions.archive_profile(profile))
        with self._version_lock:  # the live loop and the history scan both archive
            self.profiles_version += 1

    def record_reminder(self, session_id: str, segment: int, lap: int, call: Any, at: Any) -> bool | None:
        """True when new, False when the store already had it, None when there is no store."""
        result = self._call("record_reminder", lambda s: s.sessions.record_reminder(session_id, segment, lap, call, at))
        return None if result is None else bool(result)

    def subagent_changed(self, path: Path) -> None:
        """A subagent file grew: spend only, never a session (the report's scan prices it)."""

    # ---- history scan (transcripts older than the live window) --------------------------------
    def wants_scan(self) -> bool:
        return self.store is not None

    def scan_file(self, path: Path, kind: str | None, prices, engine_cfg, store_prompts: bool = True,
                  max_line: int | None = None, should_stop=lambda: False) -> bool:
        """Profiles and turn records of one old transcript; skipped when unchanged since the last scan.

        Raises transcript_file.Skipped for a path that is not a readable regular
        file; gives up (False, nothing written) when `should_stop()` turns true.
        """
        if kind != "session":
            return False  # subagent files are spend: the report's scan reads them
        from service.ingest.transcript_file import check, chunks

        st = check(path)
        known = self._call("get_scan_state", lambda s: s.spend.get_scan_state(str(path)))
        if known and known.get("size") == st.st_size and known.get("inode") == st.st_ino \
                and known.get("mtime") == st.st_mtime:
            return False
        from types import SimpleNamespace

        from service.engine import LineSplitter
        from service.engine_setup.engines import new_engine
        from service.history.sink import TurnSink

        engine = new_engine(str(path), prices, engine_cfg, full_events=False, call_rows=False)  # profiles, no per-call rows
        assert self.store is not None  # wants_scan() said so
        turns = TurnSink(self.store.history.add_turn_records, store_prompts=store_prompts, prices=prices,
                         clock=lambda: 0.0)  # one write per closed turn: no time-based rewrites
        who = SimpleNamespace(path=path, engine=engine, session_id=path.stem)
        splitter = LineSplitter() if max_line is None else LineSplitter(max_line)
        for chunk in chunks(path):
            if should_stop():
                return False
            for line in splitter.feed(chunk):
                entry = engine.feed_line(line)
                if entry is not None:
                    turns(who, entry)
            engine.drain_events()
        engine.finish("end")
        engine.drain_events()
        turns.finish(who)
        snap = engine.snapshot()
        self._call("upsert_session", lambda s: s.sessions.upsert_session(
            snap["session_id"], transcript=str(path), project=snap.get("project"), model=snap.get("model"),
            seen_at=snap.get("updated_at")))
        known_segments = {p.get("segment") for p in
                          (self._call("segments", lambda s: s.sessions.segments(snap["session_id"], 10_000)) or [])}
        for profile in engine.profiles:
            if profile["segment"] not in known_segments:  # a live run archived it with its real end reason
                self.archive_profile(profile)
        self._call("set_scan_state", lambda s: s.spend.set_scan_state(
            str(path), inode=st.st_ino, size=st.st_size, mtime=st.st_mtime, offset=st.st_size))
        return True

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
