"""The store's own recovery, without a service around it (fast; the process-level tests are in test_storage_faults.py).

- queued writes are retried by a timer (the service's setting), so a fault that
  clears while nothing else is written still ends with everything saved;
- an idle healthy store has no timer thread;
- a database file deleted under an open store comes back at its path with
  everything the store had written, and later writes go to it (not to the
  unlinked file); writes after the file is replaced by another one reach that one.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time

from service.store import Store
from tests.support.harness import wait_for

PROFILE = {"session_id": "s1", "segment": 0, "B": 10, "calls": 3, "end_reason": "compact", "path_totals": {}}


def _retry_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ctxlamp-store-retry" and t.is_alive()]


def test_a_cleared_lock_is_noticed_without_another_write(tmp_path):
    db = tmp_path / "ctxlamp.db"
    told: list[tuple[str, str]] = []
    store = Store(db, busy_timeout_ms=30, retry_backoff=(0.1, 0.4), retry_in_background=True,
                  on_message=lambda kind, text: told.append((kind, text)))
    try:
        store.sessions.archive_profile(dict(PROFILE, segment=9))  # a healthy write: no timer afterwards
        assert store.pending_writes == 0 and not _retry_threads()
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        t0 = time.monotonic()
        store.sessions.archive_profile(PROFILE)
        assert time.monotonic() - t0 < 1.0  # a short wait, then queued: the caller is not held up
        assert store.pending_writes == 1 and store.health()["ok"] is False
        time.sleep(0.6)  # several retries fail while the lock is held; still queued, still told once
        assert store.pending_writes == 1
        other.execute("COMMIT")
        other.close()
        wait_for(lambda: store.pending_writes == 0, timeout=5, what="the timer to save the queued write")
        assert store.health()["ok"] is True
        assert {r["segment"] for r in store.sessions.segments("s1")} == {0, 9}
        assert [k for k, _ in told] == ["locked", "recovered"]
        wait_for(lambda: not _retry_threads(), timeout=2, what="no timer once the queue is empty")
    finally:
        store.close()


def test_without_the_setting_the_queue_waits_for_the_next_write(tmp_path):
    """The store's default (tests, the hook's reader) keeps its old contract: no background thread."""
    db = tmp_path / "ctxlamp.db"
    store = Store(db, busy_timeout_ms=30, retry_backoff=(0.05, 0.05))
    try:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        store.sessions.archive_profile(PROFILE)
        other.execute("COMMIT")
        other.close()
        time.sleep(0.3)
        assert store.pending_writes == 1 and not _retry_threads()
        assert store.retry_pending() is True and store.pending_writes == 0
    finally:
        store.close()


def test_a_deleted_database_comes_back_with_its_history_and_takes_new_writes(tmp_path):
    folder = tmp_path / "data"
    db = folder / "ctxlamp.db"
    told: list[str] = []
    store = Store(db, on_message=lambda kind, text: told.append(kind))
    try:
        before = store.handoffs.save_handoff("before", "body", [], "/p", from_session="A")
        store.sessions.archive_profile(PROFILE)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
        store.sessions.archive_profile(dict(PROFILE, segment=1, end_reason="rotation"))
        after = store.handoffs.save_handoff("after", "body", [], "/p", from_session="A")
        assert db.exists() and oct(db.stat().st_mode & 0o777) == "0o600"
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
        assert told.count("recreated") == 1
    finally:
        store.close()
    fresh = Store(db)  # another process opening the file now sees all of it
    try:
        assert {h["token"] for h in fresh.handoffs.recent("/p")} == {before["token"], after["token"]}
        assert {r["segment"] for r in fresh.sessions.segments("s1")} == {0, 1}
    finally:
        fresh.close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_a_database_replaced_by_another_file_is_used_as_found(tmp_path):
    """Writes after the replacement reach the file now at the path, not the unlinked one.

    (Replacing a SQLite file while its -wal is still there is SQLite's own hazard:
    the old journal may be read with the new file. We only promise the writes land.)
    """
    db = tmp_path / "ctxlamp.db"
    other_db = tmp_path / "restored.db"
    Store(other_db).close()  # a valid database (a backup being restored, say)
    store = Store(db)
    try:
        store.sessions.archive_profile(PROFILE)
        os.replace(other_db, db)
        store.sessions.archive_profile(dict(PROFILE, segment=1))
    finally:
        store.close()
    fresh = Store(db)
    try:
        assert 1 in {r["segment"] for r in fresh.sessions.segments("s1")}
    finally:
        fresh.close()
