"""The service's single database writer, which fails open.

Measurement never waits on persistence: when the database is locked, read-only,
full, missing or otherwise failing, a write is kept in a bounded in-memory queue
and retried on the next call (after a short backoff), by a timer while writes
are queued (`retry_in_background`, the service's choice) or by `retry_pending()`;
one user-facing message is emitted per kind of fault until it clears, and no
method raises into its caller. Reads answer a safe default (empty, None) when
the database cannot be read, and see the writes still queued where that matters
(reminders already raised, handoffs, scan progress, ledger snapshots).

All writes go through `_submit`, as small operations (`_Op`) applied in one
transaction; `batch()` groups several calls into one transaction (for example
spend and the scan offset that produced it, so a crash cannot count twice).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import peewee as pw

import models

log = logging.getLogger("ctxlamp.store")

CHANNELS = ("edit", "pinch", "retrieval")
PROMPT_PREVIEW_MAX = 500   # characters of a prompt kept for history search
TASK_MAX = 500             # the handoff's task preview
BODY_MAX = 100_000         # a handoff body larger than this is cut
MAX_SEARCH_WORDS = 16
MAX_PAGE_SIZE = 100
TOKEN_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"  # no 0/o, 1/l/i: tokens are read aloud and retyped
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_TOKEN_COLUMNS = {
    "in": "tok_in", "input": "tok_in", "input_tokens": "tok_in",
    "cw5": "tok_cw5", "cache_write_5m": "tok_cw5", "ephemeral_5m_input_tokens": "tok_cw5",
    "cw1h": "tok_cw1h", "cache_write_1h": "tok_cw1h", "ephemeral_1h_input_tokens": "tok_cw1h",
    "cr": "tok_cr", "cache_read": "tok_cr", "cache_read_input_tokens": "tok_cr",
    "out": "tok_out", "output": "tok_out", "output_tokens": "tok_out",
}
_SPEND_COLUMNS = ("tok_in", "tok_cw5", "tok_cw1h", "tok_cr", "tok_out")

_FAULT_TEXT = {
    "locked": "The ctxlamp database {where} is locked by another program",
    "readonly": "The ctxlamp database {where} is read-only",
    "disk_full": "The disk holding the ctxlamp database {where} is full",
    "unavailable": "The ctxlamp database {where} cannot be opened ({detail})",
    "corrupt": "The ctxlamp database {where} is damaged ({detail})",
    "schema_too_new": "{detail}",
    "other": "The ctxlamp database {where} failed ({detail})",
}
_QUEUE_NOTE = "; measuring goes on and history is kept in memory until it can be saved."


# --------------------------------------------------------------------------- helpers

def utc_iso(value: Any = None) -> str | None:
    """ISO-8601 UTC with milliseconds and `Z` (the transcripts' format), so times sort as text.

    Accepts a datetime (naive means UTC), epoch seconds, or an ISO string; text
    that does not parse is kept as given. None means now.
    """
    if value is None:
        dt = datetime.now(timezone.utc)
    elif isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(float(value), timezone.utc)
    else:
        text = str(value).strip()
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            return text
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _day(value: Any) -> str:
    if isinstance(value, datetime):
        return utc_iso(value)[:10]
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    date.fromisoformat(text[:10])  # ValueError for junk: the caller gets a dropped write, logged
    return text[:10]


def _norm_project(project: Any) -> str | None:
    if project is None or str(project).strip() == "":
        return None
    return os.path.normpath(str(project))


def _path_list(paths: Iterable[Any] | None) -> list[str]:
    out: list[str] = []
    for p in paths or ():
        text = str(p)
        if text and text not in out:
            out.append(text)
    return out


def _cut(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fault_kind(exc: BaseException) -> str | None:
    """The kind of database fault, or None when the error is the write's own defect (bad data)."""
    if isinstance(exc, models.SchemaTooNew):
        return "schema_too_new"
    if isinstance(exc, (pw.IntegrityError, pw.DataError, pw.ProgrammingError, pw.NotSupportedError,
                        sqlite3.IntegrityError, sqlite3.DataError, sqlite3.ProgrammingError,
                        ValueError, TypeError, KeyError)):
        return None
    if isinstance(exc, (pw.InterfaceError, sqlite3.InterfaceError)):
        # "Error binding parameter": a value of the wrong type, not a database fault.
        text = str(exc).lower()
        return "unavailable" if ("closed" in text or "connection" in text) else None
    if isinstance(exc, OSError):
        return "unavailable"
    if isinstance(exc, pw.ImproperlyConfigured):
        return "unavailable"
    if isinstance(exc, (pw.DatabaseError, sqlite3.DatabaseError)):
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return "locked"
        if "readonly" in text or "read-only" in text or "read only" in text:
            return "readonly"
        if "full" in text:
            return "disk_full"
        if "unable to open" in text or "no such file" in text or "disk i/o" in text or "closed" in text:
            return "unavailable"
        if "malformed" in text or "not a database" in text or "corrupt" in text:
            return "corrupt"
        return "other"
    return None


@dataclass
class _Op:
    """One queued write: `kind` names the `_w_<kind>` method; `key` lets equal writes merge."""

    kind: str
    payload: dict
    key: tuple | None = None


def _merge_session(old: dict, new: dict) -> dict:
    out = dict(old)
    for k, v in new.items():
        if v is None:
            continue
        if k == "first_seen" and out.get(k):
            out[k] = min(out[k], v)
        elif k == "last_seen" and out.get(k):
            out[k] = max(out[k], v)
        else:
            out[k] = v
    return out


def _merge_spend(old: dict, new: dict) -> dict:
    out = dict(old)
    out["tokens"] = {c: old["tokens"].get(c, 0) + new["tokens"].get(c, 0) for c in _SPEND_COLUMNS}
    out["usd"] = old["usd"] + new["usd"]
    if new.get("project"):
        out["project"] = new["project"]
    return out


_MERGERS: dict[str, Callable[[dict, dict], dict]] = {
    "session": _merge_session,
    "spend": _merge_spend,
    "profile": lambda old, new: new,
    "turn": lambda old, new: new,
    "scan": lambda old, new: new,
}


def _fts_query(words: list[str]) -> str:
    """Each word becomes a quoted FTS5 string (prefix-matched), ANDed: the caller's text is never syntax."""
    return " AND ".join('"' + w.replace('"', '""') + '"*' for w in words)


def _search_words(query: Any) -> list[str]:
    words = []
    for word in str(query or "").split():
        word = "".join(ch for ch in word if ch.isprintable())  # NUL and controls would cut the query short
        if any(ch.isalnum() for ch in word) and word not in words:
            words.append(word[:64])
        if len(words) >= MAX_SEARCH_WORDS:
            break
    return words


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like(column, pattern: str, *, ilike: bool = False) -> pw.Expression:
    """`column LIKE pattern ESCAPE '\\'` with the pattern passed as is (not through the JSON field's encoder)."""
    value = pw.NodeList((pw.Value(pattern, converter=False), pw.SQL("ESCAPE '\\'")))
    # Lower-case operators on purpose: peewee rewrites "LIKE" to GLOB on SQLite.
    return pw.Expression(column, "ilike" if ilike else "like", value)


def _slash(path: str) -> str:
    return path.replace("\\", "/")


def _path_matches(stored: str, wanted: str) -> bool:
    """`wanted` is the stored path, or (relative) a run of its trailing or inner components.

    An absolute `wanted` matches itself and anything below it; a relative one
    (`store.py`, `service/store.py`, `service`) matches where its components
    appear whole in the stored path.
    """
    s = _slash(stored)
    w = _slash(wanted).rstrip("/")
    while w.startswith("./"):
        w = w[2:]
    if not w:
        return False
    if w.startswith("/") or re.match(r"^[A-Za-z]:/", w):
        return s == w or s.startswith(w + "/")
    return ("/" + w + "/") in ("/" + s.strip("/") + "/")


# --------------------------------------------------------------------------- the store

class Store:
    """The only writer of the database; every public method fails open (see module docstring).

    `target` is a SQLite file path, an open peewee Database (PostgreSQL at team
    scale), or a callable returning one (opened lazily, retried on failure).
    """

    def __init__(
        self,
        target: str | os.PathLike | pw.Database | Callable[[], pw.Database],
        *,
        store_prompts: bool = True,
        readonly: bool = False,
        max_pending: int = 10_000,
        on_message: Callable[[str, str], None] | None = None,
        retry_backoff: tuple[float, float] = (1.0, 30.0),
        busy_timeout_ms: int = models.BUSY_TIMEOUT_MS,
        clock: Callable[[], float] = time.monotonic,
        retry_in_background: bool = False,
    ):
        self.store_prompts = bool(store_prompts)
        self.readonly = bool(readonly)
        self.max_pending = max(1, int(max_pending))
        self._on_message = on_message
        self._backoff_min, self._backoff_max = (max(0.0, float(x)) for x in retry_backoff)
        self._backoff = self._backoff_min
        self._next_retry = 0.0
        self._clock = clock
        self._retry_in_background = bool(retry_in_background)  # a timer retries the queue (only while it is not empty)
        self._retry_timer: threading.Timer | None = None
        self._closed = False
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._pending: list[_Op] = []
        self._inflight: list[_Op] = []  # queued writes being retried right now (still visible to reads)
        self._dropped = 0
        self._dropped_mark = 0  # _dropped when the current fault began
        self._faults: dict[str, str] = {}
        self._batch: list[_Op] | None = None
        self._reminders_seen: dict[str, set[tuple[int, int]]] = {}
        self._reminders_loaded: set[str] = set()
        self._ledger_last: dict[str, str] = {}
        self.db: pw.Database | None = None
        self._m = None
        self._fts = False
        self._ready = False
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the SQLite file we opened
        self._anchor = None                             # the opening thread's connection (sees a deleted file)
        if isinstance(target, pw.Database):
            self.path = Path(target.database) if models.is_sqlite(target) and not readonly else None
            self._opener: Callable[[], pw.Database] = lambda: target
        elif callable(target):
            self.path = None
            self._opener = target
        elif isinstance(target, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", target):
            url = target  # sqlite:///path or postgresql://... (a `database.url` from the config)
            self.path = None
            self._opener = lambda: models.open_url(url, busy_timeout_ms=self._busy_timeout_ms)
        else:
            self.path = Path(target).expanduser()
            if readonly:
                self._opener = lambda: models.open_readonly(self.path)
            else:
                self._opener = lambda: models.open_database(self.path, busy_timeout_ms=self._busy_timeout_ms)
        with self._lock:
            try:
                self._ensure_ready()
            except Exception as exc:  # fail open: the first write or read retries
                self._fault(exc)

    # ------------------------------------------------------------------ construction helpers

    @classmethod
    def open_readonly(cls, path: str | os.PathLike, **kwargs: Any) -> "Store":
        """A store that only reads (the hook, when the service is down); never creates the file."""
        return cls(path, readonly=True, **kwargs)

    @classmethod
    def open(cls, target: str | os.PathLike, **kwargs: Any) -> "Store":
        """A file path, or a URL: `sqlite:///path` or `postgresql://...` (team scale; untested here)."""
        return cls(target, **kwargs)

    from_url = open

    def configure(self, cfg: dict) -> None:
        """Apply the config's `history.store_prompts` (other keys are not the store's)."""
        history = (cfg or {}).get("history") or {}
        if "store_prompts" in history:
            self.store_prompts = bool(history["store_prompts"])

    def _where(self) -> str:
        return f"({self.path})" if self.path else ""

    def _ensure_ready(self) -> None:
        """Open the database and bring its schema up to date (once); raises on failure."""
        if self._ready:
            self._reopen_if_deleted()
            if self._ready:
                return
        if self.db is None:
            self.db = self._opener()
        if not self.readonly:
            models.migrate(self.db)
        self._fts = models.has_fts(self.db)  # also proves a read-only file is there and readable
        self._m = models.bind_models(self.db)
        self._ready = True
        if self._owns_file():
            self._identity = self._file_identity()
            self._anchor = self.db.connection()

    def _owns_file(self) -> bool:
        return self.path is not None and not self.readonly and isinstance(self.db, pw.SqliteDatabase) \
            and Path(self.db.database) == self.path

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _reopen_if_deleted(self) -> None:
        """The file was deleted (or replaced) under us: reopen at its path.

        SQLite would go on writing into the unlinked file and everything would
        vanish at exit, with SERVICE.db saying ok. When the file is gone, what the
        open connection still sees is copied into the new file first (SQLite's
        backup), so the history comes back; a file put there by someone else is used as is.
        """
        if self._identity is None or self._file_identity() == self._identity:
            return
        gone = self._file_identity() is None
        anchor, self._anchor, self._identity = self._anchor, None, None
        self.db, self._m, self._ready = None, None, False
        if gone and anchor is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                os.close(fd)
                dst = sqlite3.connect(str(self.path))
                try:
                    anchor.backup(dst)
                finally:
                    dst.close()
            except Exception as exc:  # an empty new file then; the queued and later writes still land
                log.error("could not copy the deleted ctxlamp database into a new file: %s", exc)
        with contextlib.suppress(Exception):
            anchor.close()
        if gone:
            text = (f"The ctxlamp database {self._where()} was deleted while in use; "
                    "it was recreated from what was still open.")
        else:
            text = f"The ctxlamp database {self._where()} was replaced by another file; that file is used now."
        log.warning("%s", text)
        self._emit("recreated", text)

    def close(self) -> None:
        """Try once more to save what is queued, then close this thread's connection."""
        with self._lock:
            self._closed = True
            if self._retry_timer is not None:
                self._retry_timer.cancel()
            if self._pending:
                self.retry_pending()
            if self._pending:
                log.warning("ctxlamp database: %d queued writes could not be saved before closing", len(self._pending))
            if self.db is not None:
                with contextlib.suppress(Exception):
                    self.db.close()

    # ------------------------------------------------------------------ fault bookkeeping

    def _fault(self, exc: BaseException) -> str:
        kind = _fault_kind(exc) or "other"
        self._announce(kind, exc)
        return kind

    def _announce(self, kind: str, exc: BaseException | None = None, text: str | None = None) -> None:
        if kind in self._faults:
            return
        if text is None:
            detail = str(exc) if exc is not None else kind
            text = _FAULT_TEXT.get(kind, _FAULT_TEXT["other"]).format(where=self._where(), detail=detail)
            text = text.replace("  ", " ")
            text += _QUEUE_NOTE
        if not self._faults:
            self._dropped_mark = self._dropped
        self._faults[kind] = text
        if self.readonly:  # the hook reads this way and must stay silent; health() still tells
            log.debug("%s", text)
            return
        log.warning("%s", text)
        self._emit(kind, text)

    def _emit(self, kind: str, text: str) -> None:
        if self._on_message is None:
            return
        try:
            self._on_message(kind, text)
        except Exception:
            log.exception("store message callback failed")

    def _recovered(self, saved: int) -> None:
        self._backoff = self._backoff_min
        self._next_retry = 0.0
        if not self._faults:
            return
        self._faults.clear()
        text = "The ctxlamp database works again" + (f"; {saved} queued writes were saved." if saved else ".")
        lost = self._dropped - self._dropped_mark
        if lost:
            text += f" {lost} older writes had to be dropped while it was unavailable."
        log.info("%s", text)
        self._emit("recovered", text)

    # ------------------------------------------------------------------ write path

    def _txn(self):
        if models.is_sqlite(self.db):
            return self.db.atomic(lock_type="IMMEDIATE")
        return self.db.atomic()

    def _submit(self, ops: list[_Op]) -> list | None:
        """Apply now when possible; else queue. Returns the ops' results when applied now, else None."""
        if self.readonly:
            log.debug("read-only store: %d writes ignored", len(ops))
            return None
        with self._lock:
            if self._batch is not None:
                self._batch.extend(ops)
                return None
            if self._pending:
                self._enqueue(ops)
                if self._clock() >= self._next_retry:
                    self._flush()
                return None
            return self._apply(ops, saved_on_success=0)

    def _apply(self, ops: list[_Op], saved_on_success: int, quiet: bool = False) -> list | None:
        try:
            self._ensure_ready()
        except Exception as exc:  # cannot open or migrate: a fault whatever the exception
            self._announce(_fault_kind(exc) or "unavailable", exc)
            return self._queue_after_fault(ops)
        try:
            with self._txn():
                results = [getattr(self, "_w_" + op.kind)(self._m, **op.payload) for op in ops]
        except Exception as exc:
            if _fault_kind(exc) is None:
                return self._apply_each(ops, exc)
            self._fault(exc)
            return self._queue_after_fault(ops)
        if not quiet:
            self._recovered(saved_on_success)
        return results

    def _queue_after_fault(self, ops: list[_Op]) -> None:
        self._enqueue(ops)
        delay = self._backoff
        self._next_retry = self._clock() + delay
        self._backoff = min(max(self._backoff * 2, self._backoff_min), self._backoff_max)
        self._arm_retry(delay)
        return None

    def _arm_retry(self, delay: float) -> None:
        """Retry the queue after `delay` even if no other write comes (a quiet transcript, a stopped session).

        Armed only while writes are queued: an idle service with a healthy database has no timer.
        """
        if not self._retry_in_background or self._closed:
            return
        if self._retry_timer is not None and self._retry_timer.is_alive():
            return
        timer = threading.Timer(max(0.05, delay), self._retry_from_timer)
        timer.daemon = True
        timer.name = "ctxlamp-store-retry"
        self._retry_timer = timer
        timer.start()

    def _retry_from_timer(self) -> None:
        with self._lock:
            self._retry_timer = None
            if self._closed or not self._pending:
                return
            try:
                self._flush()  # a new fault re-arms the timer through _queue_after_fault
            except Exception:
                log.exception("retrying the queued ctxlamp database writes failed")

    def _apply_each(self, ops: list[_Op], first: BaseException) -> None:
        """A write the database refuses for its own data: drop it (logged), keep the others."""
        if len(ops) == 1:
            self._dropped += 1
            log.error("ctxlamp database refused a %s write and it was dropped: %s", ops[0].kind, first)
            return None
        for i, op in enumerate(ops):
            if self._pending:  # a fault appeared meanwhile: keep order, queue the rest
                self._enqueue(ops[i:])
                return None
            self._apply([op], saved_on_success=0, quiet=True)
        if not self._pending:
            self._recovered(len(ops))
        return None

    def _enqueue(self, ops: list[_Op]) -> None:
        self._pending.extend(ops)
        if len(self._pending) > self.max_pending:
            self._compact()
        overflow = len(self._pending) - self.max_pending
        if overflow > 0:
            del self._pending[:overflow]
            self._dropped += overflow
            self._announce("overflow", text=(
                f"Too many history writes are waiting for the ctxlamp database {self._where()}; "
                f"the oldest are being dropped ({self._dropped} so far).").replace("  ", " "))

    def _compact(self) -> None:
        """Merge queued writes that can be merged (spend adds up; upserts keep the newest)."""
        out: list[_Op] = []
        index: dict[tuple, int] = {}
        for op in self._pending:
            merge = _MERGERS.get(op.kind)
            if merge is None or op.key is None:
                out.append(op)
                continue
            ident = (op.kind, *op.key)
            if ident in index:
                slot = index[ident]
                out[slot] = _Op(op.kind, merge(out[slot].payload, op.payload), op.key)
            else:
                index[ident] = len(out)
                out.append(op)
        self._pending = out

    def _flush(self) -> bool:
        ops = self._pending
        self._inflight, self._pending = ops, []
        try:
            self._apply(ops, saved_on_success=len(ops))
        finally:
            self._inflight = []
        return not self._pending

    def retry_pending(self) -> bool:
        """Try the queued writes now (ignoring the backoff). True when nothing is left queued."""
        with self._lock:
            if self._pending:
                return self._flush()
            if not self._ready and not self.readonly:
                try:
                    self._ensure_ready()
                except Exception as exc:
                    self._fault(exc)
                    return True
                self._recovered(0)
            return True

    @contextlib.contextmanager
    def batch(self):
        """Group writes into one transaction (spend with the scan offset that produced it)."""
        with self._lock:
            if self._batch is not None:  # nested: join the outer batch
                yield self
                return
            self._batch = []
            try:
                yield self
            except BaseException:
                self._batch = None
                raise
            ops, self._batch = self._batch, None
            if ops:
                self._submit(ops)

    @property
    def pending_writes(self) -> int:
        return len(self._pending)

    @property
    def dropped_writes(self) -> int:
        return self._dropped

    def health(self) -> dict:
        """{"ok": bool, "error": str | None}: ok when the database works and nothing is queued."""
        if not self._ready and not self._faults:
            with self._lock:
                try:
                    self._ensure_ready()
                except Exception as exc:
                    self._fault(exc)
        error = next(iter(dict(self._faults).values()), None)
        if error is None and self._pending:
            error = f"{len(self._pending)} writes are waiting for the ctxlamp database {self._where()}"
            error = error.replace("  ", " ")
        return {"ok": error is None and self._ready, "error": error}

    # ------------------------------------------------------------------ read path

    def _read(self, fn: Callable[[Any], Any], default: Any) -> Any:
        try:
            if not self._ready:  # the lock only to open: a writer waiting on a busy file must not stall readers
                with self._lock:
                    self._ensure_ready()
            result = fn(self._m)
        except Exception as exc:
            kind = _fault_kind(exc)
            if kind is None:
                log.exception("ctxlamp database read failed")
            elif not self.readonly:
                with self._lock:
                    self._announce(kind, exc)
            else:  # the hook reads this way and must stay silent
                log.debug("ctxlamp database not readable: %s", exc)
            return default
        if self._faults and not self._pending:
            with self._lock:
                if not self._pending:
                    self._recovered(0)
        return result

    def _pending_payloads(self, kind: str) -> list[dict]:
        """Payloads of queued (or in-flight) writes of one kind, oldest first; lock-free on purpose."""
        ops = list(self._inflight) + list(self._pending) + list(self._batch or ())
        return [op.payload for op in ops if op.kind == kind]

    # ------------------------------------------------------------------ sessions

    def upsert_session(self, session_id: str, *, transcript: str | None = None, project: str | None = None,
                       model: str | None = None, is_subagent: bool | None = None, seen_at: Any = None) -> None:
        """Create or update a session; fields given as None keep their stored value."""
        try:
            seen = utc_iso(seen_at)
            payload = {
                "session_id": str(session_id), "transcript": None if transcript is None else str(transcript),
                "project": _norm_project(project), "model": model,
                "is_subagent": None if is_subagent is None else bool(is_subagent),
                "first_seen": seen, "last_seen": seen,
            }
        except Exception as exc:
            log.error("upsert_session ignored bad input: %s", exc)
            return
        self._submit([_Op("session", payload, (payload["session_id"],))])

    def _w_session(self, m, session_id, transcript, project, model, is_subagent, first_seen, last_seen):
        row = m.Session.get_or_none(m.Session.session_id == session_id)
        if row is None:
            m.Session.insert(session_id=session_id, transcript=transcript, project=project, model=model,
                             is_subagent=bool(is_subagent), first_seen=first_seen, last_seen=last_seen).execute()
            return None
        changes: dict = {}
        for name, value in (("transcript", transcript), ("project", project), ("model", model),
                            ("is_subagent", is_subagent)):
            if value is not None:
                changes[name] = value
        if first_seen and (not row.first_seen or first_seen < row.first_seen):
            changes["first_seen"] = first_seen
        if last_seen and (not row.last_seen or last_seen > row.last_seen):
            changes["last_seen"] = last_seen
        if changes:
            m.Session.update(**changes).where(m.Session.session_id == session_id).execute()
        return None

    def session(self, session_id: str) -> dict | None:
        def q(m):
            row = m.Session.get_or_none(m.Session.session_id == str(session_id))
            return None if row is None else {
                "session_id": row.session_id, "transcript": row.transcript, "project": row.project,
                "first_seen": row.first_seen, "last_seen": row.last_seen, "model": row.model,
                "lineage_id": row.lineage_id, "is_subagent": bool(row.is_subagent)}
        return self._read(q, None)

    # ------------------------------------------------------------------ segment profiles

    _PROFILE_FIELDS = ("session_id", "segment", "started_at", "ended_at", "end_reason", "model", "calls",
                       "turns", "B", "L_peak", "g", "br", "mf", "bill_in_usd", "bill_out_usd", "rent_usd",
                       "laps", "duration_s", "path_totals")

    def archive_profile(self, profile: dict) -> None:
        """Store a segment profile (docs/measurement.md section 10); the same (session, segment) is replaced."""
        try:
            row = {k: profile.get(k) for k in self._PROFILE_FIELDS if k in profile}
            row["session_id"] = str(profile["session_id"])
            row["segment"] = int(profile["segment"])
            for k in ("started_at", "ended_at"):
                if row.get(k) is not None:
                    row[k] = utc_iso(row[k])
            for k in ("calls", "turns", "laps"):
                row[k] = int(row.get(k) or 0)
            for k in ("B", "L_peak"):
                if row.get(k) is not None:
                    row[k] = int(row[k])
            for k in ("g", "br", "mf", "bill_in_usd", "bill_out_usd", "rent_usd", "duration_s"):
                if row.get(k) is not None:
                    row[k] = float(row[k])
            for k in ("end_reason", "model"):
                if row.get(k) is not None:
                    row[k] = str(row[k])
            row["path_totals"] = {str(k): (v if isinstance(v, (int, float)) else float(v))
                                  for k, v in dict(row.get("path_totals") or {}).items()}
        except Exception as exc:
            log.error("archive_profile ignored a malformed profile: %s", exc)
            return
        self._submit([_Op("profile", {"row": row}, (row["session_id"], row["segment"]))])

    def _w_profile(self, m, row):
        row = dict(row, archived_at=utc_iso())
        fields = [getattr(m.SegmentProfile, k) for k in row if k not in ("session_id", "segment")]
        (m.SegmentProfile.insert(**row)
         .on_conflict(conflict_target=[m.SegmentProfile.session_id, m.SegmentProfile.segment], preserve=fields)
         .execute())

    def segments(self, session_id: str | None = None, limit: int = 100) -> list[dict]:
        """Archived profiles, newest first."""
        def q(m):
            P = m.SegmentProfile
            query = P.select()
            if session_id is not None:
                query = query.where(P.session_id == str(session_id))
            query = query.order_by(pw.fn.COALESCE(P.ended_at, P.archived_at).desc(), P.id.desc())
            out = []
            for r in query.limit(max(1, int(limit))):
                d = {k: getattr(r, k) for k in self._PROFILE_FIELDS}
                d["path_totals"] = d["path_totals"] or {}
                d["archived_at"] = r.archived_at
                out.append(d)
            return out
        return self._read(q, [])

    # ------------------------------------------------------------------ reminders

    def _known_reminder_set(self, session_id: str) -> set[tuple[int, int]]:
        seen = self._reminders_seen.setdefault(session_id, set())
        if session_id not in self._reminders_loaded:
            rows = self._read(lambda m: [(r.segment, r.lap) for r in
                                         m.Reminder.select(m.Reminder.segment, m.Reminder.lap)
                                         .where(m.Reminder.session_id == session_id)], None)
            if rows is not None:
                seen.update(rows)
                self._reminders_loaded.add(session_id)
        return seen

    def record_reminder(self, session_id: str, segment: int, lap: int, call: int, at: Any) -> bool:
        """Record a raised reminder; True only if this (session, segment, lap) is new.

        While the database cannot be read or written, a lap this process has not
        seen counts as new (the write is queued; the unique key makes it land once).
        """
        try:
            sid, key = str(session_id), (int(segment), int(lap))
            payload = {"session_id": sid, "segment": key[0], "lap": key[1], "call": int(call), "at": utc_iso(at)}
        except Exception as exc:
            log.error("record_reminder ignored bad input: %s", exc)
            return False
        with self._lock:
            seen = self._known_reminder_set(sid)
            if key in seen:
                return False
            seen.add(key)
            result = self._submit([_Op("reminder", payload)])
        return True if result is None else bool(result[0])

    def _w_reminder(self, m, session_id, segment, lap, call, at):
        R = m.Reminder
        exists = R.select().where((R.session_id == session_id) & (R.segment == segment) & (R.lap == lap)).exists()
        if exists:
            return False
        R.insert(session_id=session_id, segment=segment, lap=lap, call=call, at=at).on_conflict_ignore().execute()
        return True

    def known_reminders(self, session_id: str) -> set[tuple[int, int]]:
        """(segment, lap) of every reminder recorded for the session (queued ones included)."""
        with self._lock:
            self._reminders_loaded.discard(str(session_id))  # re-read: another writer may have added
            return set(self._known_reminder_set(str(session_id)))

    def reminders(self, session_id: str | None = None, since: Any = None) -> list[dict]:
        """Recorded reminders, oldest first; `since` compares their `at` time."""
        def q(m):
            R = m.Reminder
            query = R.select()
            if session_id is not None:
                query = query.where(R.session_id == str(session_id))
            if since is not None:
                query = query.where(R.at >= utc_iso(since))
            return [{"session_id": r.session_id, "segment": r.segment, "lap": r.lap, "call": r.call, "at": r.at}
                    for r in query.order_by(R.at, R.id)]
        return self._read(q, [])

    # ------------------------------------------------------------------ spend

    def add_spend(self, day: Any, session_id: str, model: str, project: str | None, is_subagent: bool,
                  tokens: dict, usd: float) -> None:
        """Add tokens (keys in/cw5/cw1h/cr/out, or their long names) and USD to a day's row."""
        try:
            cols = {c: 0 for c in _SPEND_COLUMNS}
            for name, value in (tokens or {}).items():
                column = _TOKEN_COLUMNS.get(str(name))
                if column is not None and value:
                    cols[column] += int(value)
            payload = {"day": _day(day), "session_id": str(session_id), "model": str(model or "unknown"),
                       "project": _norm_project(project), "is_subagent": bool(is_subagent),
                       "tokens": cols, "usd": float(usd or 0.0)}
        except Exception as exc:
            log.error("add_spend ignored bad input: %s", exc)
            return
        key = (payload["day"], payload["session_id"], payload["model"], payload["is_subagent"])
        self._submit([_Op("spend", payload, key)])

    def _w_spend(self, m, day, session_id, model, project, is_subagent, tokens, usd):
        S = m.DailySpend
        update = {getattr(S, c): getattr(S, c) + getattr(pw.EXCLUDED, c) for c in _SPEND_COLUMNS}
        update[S.usd] = S.usd + pw.EXCLUDED.usd
        update[S.project] = pw.fn.COALESCE(pw.EXCLUDED.project, S.project)
        (S.insert(day=day, session_id=session_id, model=model, project=project, is_subagent=is_subagent,
                  usd=usd, **tokens)
         .on_conflict(conflict_target=[S.day, S.session_id, S.model, S.is_subagent], update=update)
         .execute())

    def spend_rows(self, since: Any = None, until: Any = None) -> list[dict]:
        """Daily spend rows with `since <= day <= until` (days as YYYY-MM-DD)."""
        def q(m):
            S = m.DailySpend
            query = S.select()
            if since is not None:
                query = query.where(S.day >= _day(since))
            if until is not None:
                query = query.where(S.day <= _day(until))
            return [{"day": r.day, "session_id": r.session_id, "model": r.model, "project": r.project,
                     "is_subagent": bool(r.is_subagent), "usd": r.usd,
                     "tokens": {"in": r.tok_in, "cw5": r.tok_cw5, "cw1h": r.tok_cw1h, "cr": r.tok_cr,
                                "out": r.tok_out}}
                    for r in query.order_by(S.day, S.session_id, S.model, S.is_subagent)]
        return self._read(q, [])

    # ------------------------------------------------------------------ turn records

    def add_turn_record(self, session_id: str, segment: int, turn: int, at: Any, *,
                        prompt_preview: str | None = None, paths_read: Iterable[str] = (),
                        paths_changed: Iterable[str] = (), tokens: int = 0, cost_usd: float = 0.0,
                        lineage_id: str | None = None) -> None:
        """Record (or replace) one turn; its lineage is the session's when not given.

        With `store_prompts=False` no prompt text is stored at all.
        """
        try:
            payload = {
                "session_id": str(session_id), "segment": int(segment), "turn_index": int(turn),
                "at": utc_iso(at) if at is not None else None,
                "prompt_preview": _cut(prompt_preview, PROMPT_PREVIEW_MAX) if self.store_prompts else None,
                "paths_read": _path_list(paths_read), "paths_changed": _path_list(paths_changed),
                "tokens": int(tokens or 0), "cost_usd": float(cost_usd or 0.0), "lineage_id": lineage_id,
            }
        except Exception as exc:
            log.error("add_turn_record ignored bad input: %s", exc)
            return
        key = (payload["session_id"], payload["segment"], payload["turn_index"])
        self._submit([_Op("turn", payload, key)])

    def _write_lineage(self, m, session_id: str | None) -> str | None:
        """The lineage a session's turns belong to: the one it loaded, else the one its own handoff started."""
        if not session_id:
            return None
        row = m.Session.get_or_none(m.Session.session_id == session_id)
        if row is not None and row.lineage_id:
            return row.lineage_id
        h = (m.Handoff.select(m.Handoff.lineage_id).where(m.Handoff.from_session == session_id)
             .order_by(m.Handoff.created_at.desc(), m.Handoff.id.desc()).first())
        return h.lineage_id if h is not None else None

    def _w_turn(self, m, session_id, segment, turn_index, at, prompt_preview, paths_read, paths_changed,
                tokens, cost_usd, lineage_id):
        T = m.TurnRecord
        lineage_id = lineage_id or self._write_lineage(m, session_id)
        (T.insert(session_id=session_id, segment=segment, turn_index=turn_index, at=at,
                  prompt_preview=prompt_preview, paths_read=paths_read, paths_changed=paths_changed,
                  tokens=tokens, cost_usd=cost_usd, lineage_id=lineage_id)
         .on_conflict(conflict_target=[T.session_id, T.segment, T.turn_index],
                      preserve=[T.at, T.prompt_preview, T.paths_read, T.paths_changed, T.tokens, T.cost_usd],
                      update={T.lineage_id: pw.fn.COALESCE(pw.EXCLUDED.lineage_id, T.lineage_id)})
         .execute())

    def forget_prompts(self) -> None:
        """Erase every stored prompt preview (for when the user turns `history.store_prompts` off)."""
        self._submit([_Op("forget_prompts", {})])

    def _w_forget_prompts(self, m):
        m.TurnRecord.update(prompt_preview=None).where(m.TurnRecord.prompt_preview.is_null(False)).execute()

    # ------------------------------------------------------------------ handoffs and lineage

    @staticmethod
    def _handoff_dict(h) -> dict:
        return {"token": h.token, "task": h.task, "body": h.body, "paths": h.paths or [], "project": h.project,
                "created_at": h.created_at, "delivered_at": h.delivered_at, "from_session": h.from_session,
                "delivered_to_session": h.delivered_to_session, "lineage_id": h.lineage_id}

    def _token_taken(self, token: str) -> bool:
        if any(p["row"]["token"] == token for p in self._pending_payloads("handoff_save")):
            return True
        return bool(self._read(lambda m: m.Handoff.select().where(m.Handoff.token == token).exists(), False))

    def _new_token(self) -> str:
        for _ in range(8):
            token = "h-" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(6))
            if not self._token_taken(token):
                return token
        return "h-" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(10))

    def save_handoff(self, task: str, body: str, paths: Iterable[str] | None, project: str | None,
                     from_session: str | None = None) -> dict:
        """Save a handoff for the project's next session; returns it with its load token.

        The handoff joins the saving session's lineage (the one it loaded, or the
        one its earlier handoff started), else starts a new one. `stored` says
        whether it is in the database yet (False: queued until the database works).
        """
        body_text = str(body or "")
        task_text = str(task or "").strip() or (body_text.strip().splitlines() or ["(no task given)"])[0]
        from_sid = str(from_session) if from_session else None
        lineage = None
        if from_sid:
            lineage = self._read(lambda m: self._write_lineage(m, from_sid), None)
            if lineage is None:
                mine = [p["row"]["lineage_id"] for p in self._pending_payloads("handoff_save")
                        if p["row"]["from_session"] == from_sid]
                lineage = mine[-1] if mine else None
        row = {
            "token": self._new_token(), "task": _cut(task_text, TASK_MAX), "body": _cut(body_text, BODY_MAX),
            "paths": _path_list(paths), "project": _norm_project(project), "created_at": utc_iso(),
            "delivered_at": None, "from_session": from_sid, "delivered_to_session": None,
            "lineage_id": lineage or ("l-" + secrets.token_hex(6)),
        }
        result = self._submit([_Op("handoff_save", {"row": row})])
        return dict(row, stored=result is not None)

    def _w_handoff_save(self, m, row):
        m.Lineage.insert(id=row["lineage_id"], created_at=row["created_at"]).on_conflict_ignore().execute()
        m.Handoff.insert(**row).execute()
        if row["from_session"]:
            T = m.TurnRecord
            (T.update(lineage_id=row["lineage_id"])
             .where((T.session_id == row["from_session"]) & T.lineage_id.is_null()).execute())
        return True

    def _matches_project(self, value: str | None, project: str | None) -> bool:
        return project is None or value == _norm_project(project)

    def handoffs(self, project: str | None = None, undelivered: bool = False, limit: int = 50) -> list[dict]:
        """Handoffs newest first (queued ones included), optionally one project's and undelivered only."""
        limit = max(1, int(limit))

        def q(m):
            H = m.Handoff
            query = H.select()
            if project is not None:
                query = query.where(H.project == _norm_project(project))
            if undelivered:
                query = query.where(H.delivered_at.is_null())
            return [self._handoff_dict(h) for h in query.order_by(H.created_at.desc(), H.id.desc()).limit(limit)]

        found = self._read(q, [])
        loaded = {p["token"] for p in self._pending_payloads("handoff_load")}
        queued = [dict(p["row"]) for p in self._pending_payloads("handoff_save")
                  if self._matches_project(p["row"]["project"], project)
                  and not (undelivered and p["row"]["token"] in loaded)]
        tokens = {h["token"] for h in found}
        merged = [h for h in queued if h["token"] not in tokens] + found
        if undelivered:
            merged = [h for h in merged if h["delivered_at"] is None and h["token"] not in loaded]
        merged.sort(key=lambda h: h["created_at"] or "", reverse=True)
        return merged[:limit]

    def undelivered_handoffs(self, project: str | None, limit: int = 3) -> list[dict]:
        """What the SessionStart hook offers: the project's handoffs not yet loaded, newest first."""
        return self.handoffs(project=project, undelivered=True, limit=limit)

    def _find_handoff(self, token: str) -> dict | None:
        for p in self._pending_payloads("handoff_save"):
            if p["row"]["token"] == token:
                return dict(p["row"])
        return self._read(lambda m: (lambda h: None if h is None else self._handoff_dict(h))(
            m.Handoff.get_or_none(m.Handoff.token == token)), None)

    def load_handoff(self, token: str, session_id: str) -> dict | None:
        """Deliver a handoff into `session_id` and link that session into its lineage.

        Returns the handoff (`stored` False while the delivery is queued), or None
        when the token is malformed or unknown. The first delivery's time and
        session are kept; a later load still links its session into the lineage.
        """
        token = str(token or "").strip()
        if not TOKEN_RE.match(token) or not session_id:
            return None
        sid, at = str(session_id), utc_iso()
        result = self._submit([_Op("handoff_load", {"token": token, "session_id": sid, "at": at})])
        if result is not None:
            return None if result[0] is None else dict(result[0], stored=True)
        h = self._find_handoff(token)
        if h is None:
            return None
        if h["delivered_at"] is None:
            h.update(delivered_at=at, delivered_to_session=sid)
        return dict(h, stored=False)

    def _w_handoff_load(self, m, token, session_id, at):
        H = m.Handoff
        h = H.get_or_none(H.token == token)
        if h is None:
            return None
        if h.delivered_at is None:
            H.update(delivered_at=at, delivered_to_session=session_id).where(H.id == h.id).execute()
            h.delivered_at, h.delivered_to_session = at, session_id
        if h.lineage_id:
            m.Lineage.insert(id=h.lineage_id, created_at=h.created_at).on_conflict_ignore().execute()
            S = m.Session
            if S.get_or_none(S.session_id == session_id) is None:
                S.insert(session_id=session_id, first_seen=at, last_seen=at, project=h.project).execute()
            S.update(lineage_id=h.lineage_id).where(S.session_id == session_id).execute()
            T = m.TurnRecord
            T.update(lineage_id=h.lineage_id).where(T.session_id == session_id).execute()
        return self._handoff_dict(h)

    def lineage_of(self, session_id: str) -> str | None:
        """The lineage of the handoff delivered into this session; None when it loaded nothing."""
        sid = str(session_id)
        loads = [p for p in self._pending_payloads("handoff_load") if p["session_id"] == sid]
        if loads:
            h = self._find_handoff(loads[-1]["token"])
            if h is not None:
                return h["lineage_id"]
        return self._read(lambda m: (lambda r: r.lineage_id if r is not None else None)(
            m.Session.get_or_none(m.Session.session_id == sid)), None)

    # ------------------------------------------------------------------ history (the MCP tools' data)

    @staticmethod
    def _turn_dict(t) -> dict:
        return {"session_id": t.session_id, "segment": t.segment, "turn": t.turn_index, "at": t.at,
                "prompt_preview": t.prompt_preview, "paths_read": t.paths_read or [],
                "paths_changed": t.paths_changed or [], "tokens": t.tokens, "cost_usd": t.cost_usd,
                "lineage_id": t.lineage_id}

    @staticmethod
    def _lineage_order(T):
        return (pw.fn.COALESCE(T.at, ""), T.session_id, T.segment, T.turn_index)

    def _positions(self, m, lineage_id: str) -> dict[int, int]:
        """Row id -> 1-based position in the lineage's deterministic order."""
        T = m.TurnRecord
        ids = T.select(T.id).where(T.lineage_id == lineage_id).order_by(*self._lineage_order(T)).tuples()
        return {row_id: i for i, (row_id,) in enumerate(ids, start=1)}

    @staticmethod
    def _page_size(page_size: Any) -> int:
        return min(MAX_PAGE_SIZE, max(1, int(page_size)))

    def history_page(self, lineage_id: str, page: int, page_size: int = 10) -> dict:
        """Page `page` (1-based, oldest turns first) of the lineage's turn records.

        Oldest first keeps every full page stable as the lineage grows.
        """
        size = self._page_size(page_size)
        page = max(1, int(page or 1))
        empty = {"lineage_id": lineage_id, "page": page, "page_size": size, "pages": 0, "total": 0, "turns": []}

        def q(m):
            T = m.TurnRecord
            where = T.lineage_id == str(lineage_id)
            total = T.select().where(where).count()
            rows = (T.select().where(where).order_by(*self._lineage_order(T))
                    .offset((page - 1) * size).limit(size))
            turns = []
            for i, t in enumerate(rows, start=(page - 1) * size + 1):
                turns.append(dict(self._turn_dict(t), position=i, page=page))
            return dict(empty, total=total, pages=math.ceil(total / size), turns=turns)

        return self._read(q, empty) if lineage_id else empty

    def history_search(self, lineage_id: str, query: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[dict], int]:
        """Turns of the lineage matching every word of `query` (prefix match), best first.

        Returns (hits, total matches); each hit names its `page` for history_page.
        The caller's words are quoted one by one, so no input is read as FTS syntax.
        On PostgreSQL (or SQLite without FTS5) each word is matched with (I)LIKE.
        """
        words = _search_words(query)
        if not lineage_id or not words:
            return [], 0
        size, limit = self._page_size(page_size), max(1, int(limit))

        def q(m):
            T = m.TurnRecord
            order: list[tuple[int, str | None]]
            order = None
            if self._fts:
                sql = (f"SELECT t.id, snippet({models.TURN_FTS_TABLE}, -1, '[', ']', '…', 12) "
                       f"FROM {models.TURN_FTS_TABLE} JOIN turn_record t ON t.id = {models.TURN_FTS_TABLE}.rowid "
                       f"WHERE {models.TURN_FTS_TABLE} MATCH ? AND t.lineage_id = ? "
                       f"ORDER BY bm25({models.TURN_FTS_TABLE}), t.at, t.id")
                try:
                    order = [(r[0], r[1]) for r in self.db.execute_sql(sql, (_fts_query(words), str(lineage_id)))]
                except (pw.OperationalError, sqlite3.OperationalError) as exc:
                    if _fault_kind(exc) != "other":
                        raise  # the database itself is failing
                    log.warning("full-text query %r was refused (%s); searching without the index", words, exc)
            if order is None:
                # No FTS5 (PostgreSQL, or an SQLite built without it): every word as a substring.
                cond = T.lineage_id == str(lineage_id)
                ilike = not models.is_sqlite(self.db)
                for w in words:
                    pattern = "%" + _like_escape(w) + "%"
                    cond &= (_like(T.prompt_preview, pattern, ilike=ilike) | _like(T.paths_read, pattern, ilike=ilike)
                             | _like(T.paths_changed, pattern, ilike=ilike))
                order = [(t.id, None) for t in T.select(T.id).where(cond).order_by(*self._lineage_order(T))]
            total = len(order)
            chosen = order[:limit]
            rows = {t.id: t for t in T.select().where(T.id.in_([i for i, _ in chosen]))} if chosen else {}
            positions = self._positions(m, str(lineage_id)) if chosen else {}
            hits = []
            for row_id, snippet in chosen:
                pos = positions.get(row_id, 1)
                hits.append(dict(self._turn_dict(rows[row_id]), snippet=snippet, position=pos,
                                 page=(pos - 1) // size + 1))
            return hits, total

        return self._read(q, ([], 0))

    def history_locate(self, lineage_id: str, path: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[dict], int]:
        """Turns of the lineage that read or changed `path`, oldest first: (hits, total).

        `path` may be absolute (that file, or anything under that folder) or a
        remembered tail such as `store.py` or `service/store.py`.
        """
        wanted = _slash(str(path or "").strip().strip("'\"")).rstrip("/")
        while wanted.startswith("./"):
            wanted = wanted[2:]
        if not lineage_id or not wanted:
            return [], 0
        size, limit = self._page_size(page_size), max(1, int(limit))
        tail = wanted.rsplit("/", 1)[-1]
        needle = json.dumps(tail, ensure_ascii=False)[1:-1]  # how the tail appears inside the stored JSON

        def q(m):
            T = m.TurnRecord
            pattern = "%" + _like_escape(needle) + "%"
            cond = (T.lineage_id == str(lineage_id)) & (_like(T.paths_read, pattern) | _like(T.paths_changed, pattern))
            matches = []
            for t in T.select().where(cond).order_by(*self._lineage_order(T)):
                read = [p for p in (t.paths_read or []) if _path_matches(p, wanted)]
                changed = [p for p in (t.paths_changed or []) if _path_matches(p, wanted)]
                if read or changed:
                    matches.append((t, read, changed))
            positions = self._positions(m, str(lineage_id)) if matches else {}
            hits = []
            for t, read, changed in matches[:limit]:
                pos = positions.get(t.id, 1)
                hits.append(dict(self._turn_dict(t), matched_read=read, matched_changed=changed,
                                 position=pos, page=(pos - 1) // size + 1))
            return hits, len(matches)

        return self._read(q, ([], 0))

    # ------------------------------------------------------------------ channels and ledgers

    def add_channel_event(self, channel: str, ts: Any, source: str, fields: dict, *,
                          session_id: str | None = None, dedup_key: str | None = None,
                          kind: str | None = None) -> bool:
        """Record one edit/pinch/retrieval event; False when it is a duplicate (same dedup key) or invalid.

        Without a dedup key the event's own content is the key, so re-reading a
        ledger or transcript never books an event twice. An event without a time
        is stamped with the time it was recorded.
        """
        if channel not in CHANNELS:
            log.error("add_channel_event ignored unknown channel %r", channel)
            return False
        try:
            row = {"channel": channel, "kind": None if kind is None else str(kind), "ts": utc_iso(ts),
                   "source": str(source),
                   "session_id": None if session_id is None else str(session_id), "fields": dict(fields or {})}
            if dedup_key is None:
                canon = json.dumps([row["channel"], row["kind"], row["ts"], row["source"], row["session_id"],
                                    row["fields"]],
                                   sort_keys=True, ensure_ascii=False, default=str)
                dedup_key = "sha1:" + hashlib.sha1(canon.encode("utf-8")).hexdigest()
            row["dedup_key"] = str(dedup_key)
            json.dumps(row["fields"])  # TypeError now, not at landing time
        except Exception as exc:
            log.error("add_channel_event ignored bad input: %s", exc)
            return False
        if any(p["row"]["dedup_key"] == row["dedup_key"] for p in self._pending_payloads("channel")):
            return False
        result = self._submit([_Op("channel", {"row": row})])
        return True if result is None else bool(result[0])

    def _w_channel(self, m, row):
        C = m.ChannelEvent
        if C.select().where(C.dedup_key == row["dedup_key"]).exists():
            return False
        C.insert(**row).on_conflict_ignore().execute()
        return True

    def channel_events(self, channel: str, since: Any = None, until: Any = None) -> list[dict]:
        """A channel's events with since <= ts < until, oldest first."""
        def q(m):
            C = m.ChannelEvent
            query = C.select().where(C.channel == channel)
            if since is not None:
                query = query.where(C.ts >= utc_iso(since))
            if until is not None:
                query = query.where(C.ts < utc_iso(until))
            return [{"channel": c.channel, "kind": c.kind, "ts": c.ts, "source": c.source, "session_id": c.session_id,
                     "fields": c.fields or {}, "dedup_key": c.dedup_key} for c in query.order_by(C.ts, C.id)]
        return self._read(q, [])

    def snapshot_ledger(self, source: str, counters: dict, ts: Any = None) -> bool:
        """Keep an external ledger's counters when they differ from the last kept; True when kept."""
        try:
            canon = json.dumps(counters, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            source = str(source)
        except Exception as exc:
            log.error("snapshot_ledger ignored bad input: %s", exc)
            return False
        with self._lock:
            last = self._ledger_last.get(source)
            if last is None:
                queued = [p for p in self._pending_payloads("ledger") if p["source"] == source]
                if queued:
                    last = json.dumps(queued[-1]["counters"], sort_keys=True, ensure_ascii=False,
                                      separators=(",", ":"))
                else:
                    def q(m):
                        L = m.LedgerSnapshot
                        row = L.select().where(L.source == source).order_by(L.ts.desc(), L.id.desc()).first()
                        return None if row is None else json.dumps(row.counters, sort_keys=True,
                                                                   ensure_ascii=False, separators=(",", ":"))
                    last = self._read(q, None)
            if last == canon:
                self._ledger_last[source] = canon
                return False
            self._ledger_last[source] = canon
            self._submit([_Op("ledger", {"source": source, "ts": utc_iso(ts), "counters": json.loads(canon)})])
            return True

    def _w_ledger(self, m, source, ts, counters):
        m.LedgerSnapshot.insert(source=source, ts=ts, counters=counters).execute()

    def ledger_snapshots(self, source: str | None = None, since: Any = None, until: Any = None) -> list[dict]:
        def q(m):
            L = m.LedgerSnapshot
            query = L.select()
            if source is not None:
                query = query.where(L.source == str(source))
            if since is not None:
                query = query.where(L.ts >= utc_iso(since))
            if until is not None:
                query = query.where(L.ts < utc_iso(until))
            return [{"source": r.source, "ts": r.ts, "counters": r.counters} for r in query.order_by(L.ts, L.id)]
        return self._read(q, [])

    # ------------------------------------------------------------------ scan state

    @staticmethod
    def _scan_dict(r) -> dict:
        return {"path": r.path, "inode": r.inode, "size": r.size, "mtime": r.mtime, "offset": r.offset}

    def get_scan_state(self, path: str) -> dict | None:
        """Where the history scan stopped in `path` (queued progress included), or None."""
        key = str(path)
        queued = [p for p in self._pending_payloads("scan") if p["path"] == key]
        if queued:
            return dict(queued[-1])
        return self._read(lambda m: (lambda r: None if r is None else self._scan_dict(r))(
            m.ScanState.get_or_none(m.ScanState.path == key)), None)

    def scan_states(self) -> dict[str, dict]:
        found = self._read(lambda m: {r.path: self._scan_dict(r) for r in m.ScanState.select()}, {})
        for p in self._pending_payloads("scan"):
            found[p["path"]] = dict(p)
        return found

    def set_scan_state(self, path: str, *, inode: int | None, size: int, mtime: float | None, offset: int) -> None:
        try:
            payload = {"path": str(path), "inode": None if inode is None else int(inode), "size": int(size),
                       "mtime": None if mtime is None else float(mtime), "offset": int(offset)}
        except Exception as exc:
            log.error("set_scan_state ignored bad input: %s", exc)
            return
        self._submit([_Op("scan", payload, (payload["path"],))])

    def _w_scan(self, m, path, inode, size, mtime, offset):
        S = m.ScanState
        (S.insert(path=path, inode=inode, size=size, mtime=mtime, offset=offset)
         .on_conflict(conflict_target=[S.path], preserve=[S.inode, S.size, S.mtime, S.offset])
         .execute())
