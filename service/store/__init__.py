"""The store: the one writer of the database and the only importer of `models`.

`Store` is one class made of parts, one module each: the writer (opening,
faults, the fail-open queue, batches, reads: writer.py), sessions with segment
profiles and reminders, spend with scan state, handoffs and lineage, turn
records with history search, channel events with ledger snapshots, the team outbox.
"""
from __future__ import annotations

from service.store.handoffs import HandoffParts
from service.store.history import HistoryParts
from service.store.ledgers import LedgerParts
from service.store.sessions import SessionParts
from service.store.spend import SpendParts
from service.store.team import TeamParts
from service.store.writer import Writer

__all__ = ["Store"]


class Store(SessionParts, SpendParts, HandoffParts, HistoryParts, LedgerParts, TeamParts, Writer):
    """The only writer of the database; every public method fails open (see service/store/writer.py).

    `target` is a SQLite file path, an open peewee Database (PostgreSQL at team
    scale), or a callable returning one (opened lazily, retried on failure).
    """
