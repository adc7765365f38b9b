"""The service's side of the store: every write fails open.

Measurement never waits on or stops for the database (docs/measurement.md section 12:
segment archival, reminder records, turn records each degrade on their own).
A failed call is logged once per kind, shows in SERVICE.db, and returns None
so the caller can tell "unavailable" from "no".
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from service.paths import Paths

log = logging.getLogger("ctxlamp.persist")

SERVICE_BUSY_TIMEOUT_MS = 250


class Unavailable(RuntimeError):
    """The store cannot answer (API routes turn this into 503)."""


class Persistence:
    def __init__(self, store: Any, error: str | None = None) -> None:
        self.store = store
        self.error = error
        self._warned: set[str] = set()
        self.entry_sink = None  # (session, entry) -> None; set when the store keeps channels/turns

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
    def _call(self, name: str, *args, **kwargs):
        """store.name(*args) or None when the store or the method is unavailable / fails."""
        fn = getattr(self.store, name, None) if self.store is not None else None
        if fn is None:
            return None
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            self.error = f"{name}: {type(exc).__name__}: {exc}"
            if name not in self._warned:
                self._warned.add(name)
                log.error("store.%s failed (failing open): %s", name, exc)
            return None
        return result

    def query(self, name: str, *args, **kwargs):
        """For API reads: the store's answer, or Unavailable."""
        fn = getattr(self.store, name, None) if self.store is not None else None
        if fn is None:
            raise Unavailable(self.error or f"the store has no {name}")
        try:
            return fn(*args, **kwargs)
        except (KeyError, LookupError, ValueError):
            raise
        except Exception as exc:
            self.error = f"{name}: {type(exc).__name__}: {exc}"
            raise Unavailable(self.error) from exc

    # ---- writes the service makes -------------------------------------------------------
    def archive_profile(self, profile: dict) -> None:
        self._call("archive_profile", profile)

    def record_reminder(self, session_id: str, segment: int, lap: int, call: Any, at: Any) -> bool | None:
        """True when new, False when the store already had it, None when there is no store."""
        result = self._call("record_reminder", session_id, segment, lap, call, at)
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
        known = self._call("get_scan_state", str(path))
        if known and known.get("size") == st.st_size and known.get("inode") == st.st_ino \
                and known.get("mtime") == st.st_mtime:
            return False
        from types import SimpleNamespace

        from service.engine import LineSplitter
        from service.measure.engines import new_engine
        from service.history.sink import TurnSink

        engine = new_engine(str(path), prices, engine_cfg)
        turns = TurnSink(self.store.add_turn_record, store_prompts=store_prompts, prices=prices,
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
        self._call("upsert_session", snap["session_id"], transcript=str(path), project=snap.get("project"),
                   model=snap.get("model"), seen_at=snap.get("updated_at"))
        known_segments = {p.get("segment") for p in (self._call("segments", snap["session_id"], 10_000) or [])}
        for profile in engine.profiles:
            if profile["segment"] not in known_segments:  # a live run archived it with its real end reason
                self.archive_profile(profile)
        self._call("set_scan_state", str(path), inode=st.st_ino, size=st.st_size, mtime=st.st_mtime,
                   offset=st.st_size)
        return True

    def configure(self, cfg: dict) -> None:
        self._call("configure", cfg)

    def health(self) -> dict:
        if self.store is None:
            return {"ok": False, "error": self.error}
        checked = self._call("health")
        if isinstance(checked, dict):
            return {"ok": bool(checked.get("ok")), "error": checked.get("error")}
        return {"ok": False, "error": self.error}

    def close(self) -> None:
        self._call("close")


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
