"""The store: the one writer of the database and the only importer of `models`.

`Store` owns one `Writer` (opening, faults, the fail-open queue, batches,
reads: writer.py) and typed parts over it, one module each: `sessions`
(sessions, segment profiles, reminders), `spend` (spend and scan state),
`handoffs` (handoffs and lineage), `history` (turn records and history search),
`ledgers` (channel events and ledger snapshots) and `team` (the team outbox).
Each part registers its kinds of write in the writer's table; no part calls
another. New code calls the parts (`store.spend.add_spend(...)`); the names
callers used before the parts existed stay bound on `Store` itself.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import peewee as pw

import models

from service.store.handoffs import Handoffs
from service.store.history import History
from service.store.ledgers import Ledgers
from service.store.sessions import Sessions
from service.store.spend import Spend
from service.store.team import TeamOutbox
from service.store.writer import Target, Writer

__all__ = ["Store"]


class Store:
    """The only writer of the database; every public method fails open (see service/store/writer.py).

    `target` is a SQLite file path, a URL (`sqlite:///path`, `postgresql://...`),
    an open peewee Database (PostgreSQL at team scale), or a callable returning
    one (opened lazily, retried on failure).
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
        self.writer = Writer(target, store_prompts=store_prompts, readonly=readonly, max_pending=max_pending,
                             on_message=on_message, retry_backoff=retry_backoff, busy_timeout_ms=busy_timeout_ms,
                             clock=clock, retry_in_background=retry_in_background)
        self.sessions = Sessions(self.writer)
        self.spend = Spend(self.writer)
        self.handoffs = Handoffs(self.writer)
        self.history = History(self.writer)
        self.ledgers = Ledgers(self.writer)
        self.team = TeamOutbox(self.writer)

        # the writer's own operations, which concern the whole store
        self.configure = self.writer.configure
        self.health = self.writer.health
        self.retry_pending = self.writer.retry_pending
        self.close = self.writer.close

    @classmethod
    def open_readonly(cls, path: str | os.PathLike[str], **kwargs: Any) -> Store:
        """A store that only reads (the hook, when the service is down); never creates the file."""
        return cls(path, readonly=True, **kwargs)

    @classmethod
    def open(cls, target: str | os.PathLike[str], **kwargs: Any) -> Store:
        """A file path, or a URL: `sqlite:///path` or `postgresql://...` (team scale; untested here)."""
        return cls(target, **kwargs)

    from_url = open

    @contextlib.contextmanager
    def batch(self) -> Iterator[Store]:
        """Group writes into one transaction (spend with the scan offset that produced it)."""
        with self.writer.batch():
            yield self

    @property
    def db(self) -> pw.Database | None:
        return self.writer.db

    @property
    def path(self) -> Path | None:
        return self.writer.path

    @property
    def readonly(self) -> bool:
        return self.writer.readonly

    @property
    def store_prompts(self) -> bool:
        return self.writer.store_prompts

    @property
    def pending_writes(self) -> int:
        return self.writer.pending_writes

    @property
    def dropped_writes(self) -> int:
        return self.writer.dropped_writes
