"""The service's single database writer, which fails open.

Measurement never waits on persistence: when the database is locked, read-only,
full, missing or otherwise failing, a write is kept in a bounded in-memory queue
and retried on the next call (after a short backoff), by a timer while writes
are queued (`retry_in_background`, the service's choice) or by `retry_pending()`;
one user-facing message is emitted per kind of fault until it clears, and no
method raises into its caller. Reads answer a safe default (empty, None) when
the database cannot be read, and see the writes still queued where that matters
(reminders already raised, handoffs, scan progress, ledger snapshots).

All writes go through `submit`, as small operations (`QueuedWrite`) applied in one
transaction; `batch()` groups several calls into one transaction (for example
spend and the scan offset that produced it, so a crash cannot count twice).
Each part of `Store` registers its kinds of write in the writer's table
(`register`: kind -> how it lands, how two queued ones merge), so the writer
dispatches through that table, never by method name.

The Writer class here is the one object every part of `Store` holds; it stays
one module (about 500 lines) because the queue, the faults and the retry timer
guard each other under one lock.
"""
from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Mapping, TypeVar

import peewee as pw

import models

from service.client.privdir import make_private_dirs
from service.redact import redact
from service.store.common import Models, Operation, Payload, QueuedWrite, log

_FAULT_TEXT = {
    "locked": "The ctxlamp database {where} is locked by another program",
    "readonly": "The ctxlamp database {where} is read-only",
    "disk_full": "The disk holding the ctxlamp database {where} is full",
    "unavailable": "The ctxlamp database {where} cannot be opened ({detail})",
    "corrupt": "The ctxlamp database {where} is damaged ({detail})",
    "schema_too_new": "{detail}",
    "other": "The ctxlamp database {where} failed ({detail})",
}
_T = TypeVar("_T")
_D = TypeVar("_D")
_QUEUE_NOTE = "; measuring goes on and history is kept in memory until it can be saved."


def fault_kind(exc: BaseException) -> str | None:
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


Target = str | os.PathLike[str] | pw.Database | Callable[[], pw.Database]


class Writer:
    """The writer the parts share: opening, faults, the fail-open queue, batches and the read path.

    Each part registers its kinds of write (`register`): how one lands, how two queued ones merge.
    """

    def __init__(
        self,
        target: Target,
        *,
        store_prompts: bool = True,
        readonly: bool = False,
        max_pending: int = 10_000,
        on_message: Callable[[str, str], None] | None = None,
        retry_backoff: tuple[float, float] = (1.0, 30.0),
        busy_timeout_ms: int = models.BUSY_TIMEOUT_MS,
        clock: Callable[[], float] = time.monotonic,
        retry_in_background: bool = False,
    ) -> None:
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
        self.lock = threading.RLock()  # the parts take it too, around a read-then-write of their own state
        self._operations: dict[str, Operation] = {}
        self._pending: list[QueuedWrite] = []
        self._inflight: list[QueuedWrite] = []  # queued writes being retried right now (still visible to reads)
        self._landed: dict[str, int] = {}  # kind -> writes of it committed (moves only after the commit)
        self._dropped = 0
        self._dropped_mark = 0  # _dropped when the current fault began
        self._faults: dict[str, str] = {}
        self._batch: list[QueuedWrite] | None = None
        self.db: pw.Database | None = None
        self._m: Models | None = None
        self.fts = False  # the turn records' full-text index is there (SQLite with FTS5)
        self._ready = False
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the SQLite file we opened
        self._anchor: sqlite3.Connection | None = None  # the opening thread's connection (sees a deleted file)
        self._url = ""  # a database URL (it may hold a password: every message goes through redact)
        self.path: Path | None
        if isinstance(target, pw.Database):
            db = target
            self.path = Path(db.database) if models.is_sqlite(db) and not readonly else None
            self._opener: Callable[[], pw.Database] = lambda: db
        elif callable(target):
            self.path = None
            self._opener = target
        elif isinstance(target, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", target):
            url = self._url = target  # sqlite:///path or postgresql://... (a `database.url` from the config)
            self.path = None
            self._opener = lambda: models.open_url(url, busy_timeout_ms=self._busy_timeout_ms)
        else:
            path = self.path = Path(target).expanduser()
            if readonly:
                self._opener = lambda: models.open_readonly(path)
            else:
                self._opener = lambda: models.open_database(path, busy_timeout_ms=self._busy_timeout_ms)
        with self.lock:
            try:
                self._ensure_ready()
            except Exception as exc:  # fail open: the first write or read retries
                self._fault(exc)

    # ------------------------------------------------------------------ the table of operations

    def register(self, operations: Mapping[str, Operation]) -> None:
        """Add a part's kinds of write; a kind belongs to one part only."""
        for kind, operation in operations.items():
            if kind in self._operations:
                raise ValueError(f"two parts of the store write {kind!r}")
            self._operations[kind] = operation

    def configure(self, cfg: dict[str, Any]) -> None:
        """Apply the config's `history.store_prompts` (other keys are not the store's)."""
        history = (cfg or {}).get("history") or {}
        if "store_prompts" in history:
            self.store_prompts = bool(history["store_prompts"])

    def _where(self) -> str:
        return f"({self.path})" if self.path else ""

    def _ensure_ready(self) -> Models:
        """Open the database and bring its schema up to date (once); the bound models. Raises on failure."""
        if self._ready and self._m is not None:
            self._reopen_if_deleted()
            if self._ready and self._m is not None:
                return self._m
        if self.db is None:
            self.db = self._opener()
        db = self.db
        if not self.readonly:
            models.migrate(db)
        self.fts = models.has_fts(db)  # also proves a read-only file is there and readable
        m = self._m = models.bind_models(db)
        self._ready = True
        if self._owns_file():
            self._identity = self._file_identity()
            self._anchor = db.connection()  # type: ignore[no-untyped-call]  # peewee has no annotations
        return m

    def _owns_file(self) -> bool:
        return self.path is not None and not self.readonly and isinstance(self.db, pw.SqliteDatabase) \
            and Path(self.db.database) == self.path

    def _file_identity(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
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
        if gone and anchor is not None and self.path is not None:
            try:
                make_private_dirs(self.path.parent)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                os.close(fd)
                dst = sqlite3.connect(str(self.path))
                try:
                    anchor.backup(dst)
                finally:
                    dst.close()
            except Exception as exc:  # an empty new file then; the queued and later writes still land
                log.error("could not copy the deleted ctxlamp database into a new file: %s", exc)
        if anchor is not None:
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
        with self.lock:
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
        kind = fault_kind(exc) or "other"
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
        text = redact(text, self._url)
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

    def _txn(self) -> ContextManager[object]:
        db = self.db
        assert db is not None  # _ensure_ready opened it
        if models.is_sqlite(db):
            return db.atomic(lock_type="IMMEDIATE")
        return db.atomic()

    def submit(self, ops: list[QueuedWrite]) -> list[object] | None:
        """Apply now when possible; else queue. Returns the ops' results when applied now, else None."""
        if self.readonly:
            log.debug("read-only store: %d writes ignored", len(ops))
            return None
        with self.lock:
            if self._batch is not None:
                self._batch.extend(ops)
                return None
            if self._pending:
                self._enqueue(ops)
                if self._clock() >= self._next_retry:
                    self._flush()
                return None
            return self._apply(ops, saved_on_success=0)

    def _apply(self, ops: list[QueuedWrite], saved_on_success: int, quiet: bool = False) -> list[object] | None:
        try:
            m = self._ensure_ready()
        except Exception as exc:  # cannot open or migrate: a fault whatever the exception
            self._announce(fault_kind(exc) or "unavailable", exc)
            self._queue_after_fault(ops)
            return None
        try:
            with self._txn():
                results = self._run(m, ops)
        except Exception as exc:
            if fault_kind(exc) is None:
                self._apply_each(ops, exc)
                return None
            self._fault(exc)
            self._queue_after_fault(ops)
            return None
        for op in ops:
            self._landed[op.kind] = self._landed.get(op.kind, 0) + 1
        if not quiet:
            self._recovered(saved_on_success)
        return results

    def _run(self, m: Models, ops: list[QueuedWrite]) -> list[object]:
        """Each op's result, in order; a run of ops of one kind that lands at once (`apply_many`) as one call."""
        results: list[object] = []
        at = 0
        while at < len(ops):
            operation = self._operations[ops[at].kind]
            end = at + 1
            if operation.apply_many is not None:
                while end < len(ops) and ops[end].kind == ops[at].kind:
                    end += 1
            if end - at > 1 and operation.apply_many is not None:
                operation.apply_many(m, [op.payload for op in ops[at:end]])
                results.extend([None] * (end - at))
            else:
                results.append(operation.apply(m, ops[at].payload))
            at = end
        return results

    def _queue_after_fault(self, ops: list[QueuedWrite]) -> None:
        self._enqueue(ops)
        delay = self._backoff
        self._next_retry = self._clock() + delay
        self._backoff = min(max(self._backoff * 2, self._backoff_min), self._backoff_max)
        self._arm_retry(delay)

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
        with self.lock:
            self._retry_timer = None
            if self._closed or not self._pending:
                return
            try:
                self._flush()  # a new fault re-arms the timer through _queue_after_fault
            except Exception:
                log.exception("retrying the queued ctxlamp database writes failed")

    def _apply_each(self, ops: list[QueuedWrite], first: BaseException) -> None:
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

    def _enqueue(self, ops: list[QueuedWrite]) -> None:
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
        out: list[QueuedWrite] = []
        index: dict[tuple[Any, ...], int] = {}
        for op in self._pending:
            operation = self._operations.get(op.kind)
            merge = operation.merge if operation is not None else None
            if merge is None or op.key is None:
                out.append(op)
                continue
            ident = (op.kind, *op.key)
            if ident in index:
                slot = index[ident]
                out[slot] = QueuedWrite(op.kind, merge(out[slot].payload, op.payload), op.key)
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
        with self.lock:
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
    def batch(self) -> Iterator[Writer]:
        """Group writes into one transaction (spend with the scan offset that produced it)."""
        with self.lock:
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
                self.submit(ops)

    @property
    def pending_writes(self) -> int:
        return len(self._pending)

    def landed(self, kind: str) -> int:
        """How many writes of `kind` were committed so far. It moves only once a write is in the database,
        so what a reader built from rows read before that moment is known to be stale (lock-free on purpose)."""
        return self._landed.get(kind, 0)

    @property
    def dropped_writes(self) -> int:
        return self._dropped

    def health(self) -> dict[str, Any]:
        """{"ok": bool, "error": str | None}: ok when the database works and nothing is queued."""
        if not self._ready and not self._faults:
            with self.lock:
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

    def read(self, fn: Callable[[Models], _T], default: _D) -> _T | _D:
        """fn(the bound models), or `default` when the database cannot be read (the fault announced)."""
        try:
            m = self._m
            if not self._ready or m is None:  # the lock only to open: a writer waiting on a busy file must not stall readers
                with self.lock:
                    m = self._ensure_ready()
            result = fn(m)
        except Exception as exc:
            kind = fault_kind(exc)
            if kind is None:
                log.exception("ctxlamp database read failed")
            elif not self.readonly:
                with self.lock:
                    self._announce(kind, exc)
            else:  # the hook reads this way and must stay silent
                log.debug("ctxlamp database not readable: %s", exc)
            return default
        if self._faults and not self._pending:
            with self.lock:
                if not self._pending:
                    self._recovered(0)
        return result

    def pending_payloads(self, kind: str) -> list[Payload]:
        """Payloads of queued (or in-flight) writes of one kind, oldest first; lock-free on purpose."""
        ops = list(self._inflight) + list(self._pending) + list(self._batch or ())
        return [op.payload for op in ops if op.kind == kind]
