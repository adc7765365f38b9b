"""The store: what the service, hook and MCP tools rely on, and failing open for real."""
from __future__ import annotations

import logging
import random
import re
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.store import Store
from service.store.handoffs import TOKEN_RE

LOGGER = "ctxlamp.store"


class Messages(list):
    def __call__(self, kind, text):
        self.append((kind, text))

    def kinds(self):
        return [k for k, _ in self]


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "data" / "ctxlamp.db"


@pytest.fixture
def store(db_path):
    s = Store(db_path)
    yield s
    s.close()


def _rows(path: Path, sql: str, args=()):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _turn(store, sid, turn, at, prompt="", read=(), changed=(), segment=0):
    store.history.add_turn_record(sid, segment, turn, at, prompt_preview=prompt, paths_read=list(read),
                          paths_changed=list(changed), tokens=100 * turn, cost_usd=0.01 * turn)


def _lineage_with(store, turns):
    """A lineage: session A's turns, a handoff from A, loaded by B; returns its id."""
    for i, (prompt, read, changed) in enumerate(turns, start=1):
        _turn(store, "A", i, f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z", prompt, read, changed)
    h = store.handoffs.save_handoff("carry on", "notes", [], "/proj", from_session="A")
    store.handoffs.load_handoff(h["token"], "B")
    return store.handoffs.lineage_of("B")


# --------------------------------------------------------------------------- sessions, profiles, spend

def test_session_upsert_keeps_what_is_known(store):
    store.sessions.upsert_session("s1", transcript="/t/s1.jsonl", project="/p/", model="claude-x",
                         seen_at="2026-03-01T10:00:00Z")
    store.sessions.upsert_session("s1", seen_at="2026-03-01T09:00:00Z")
    store.sessions.upsert_session("s1", seen_at="2026-03-02T09:00:00+02:00", model="claude-y")
    s = store.sessions.session("s1")
    assert s["transcript"] == "/t/s1.jsonl" and s["project"] == "/p" and s["model"] == "claude-y"
    assert s["first_seen"] == "2026-03-01T09:00:00.000Z"
    assert s["last_seen"] == "2026-03-02T07:00:00.000Z"
    assert s["lineage_id"] is None and s["is_subagent"] is False


def test_profiles_are_replaced_per_segment_and_listed_newest_first(store):
    base = {"session_id": "s1", "started_at": "2026-03-01T10:00:00Z", "end_reason": "reset", "model": "m",
            "calls": 3, "turns": 2, "B": 1000, "L_peak": 5000, "g": 1.5, "br": 0.2, "mf": None,
            "bill_in_usd": 0.1, "bill_out_usd": 0.02, "rent_usd": 0.05, "laps": 1, "duration_s": 60.0,
            "path_totals": {"/p/a.py": 300, "/p/ü.py": 7}}
    store.sessions.archive_profile(dict(base, segment=0, ended_at="2026-03-01T10:01:00Z"))
    store.sessions.archive_profile(dict(base, segment=1, ended_at="2026-03-01T11:00:00Z"))
    store.sessions.archive_profile(dict(base, segment=0, ended_at="2026-03-01T10:01:00Z", calls=9))  # replay re-archives
    segs = store.sessions.segments("s1")
    assert [p["segment"] for p in segs] == [1, 0]
    assert segs[1]["calls"] == 9 and segs[1]["path_totals"] == {"/p/a.py": 300, "/p/ü.py": 7}
    assert segs[1]["mf"] is None and segs[1]["B"] == 1000 and segs[1]["L_peak"] == 5000
    assert store.sessions.segments("other") == [] and len(store.sessions.segments(limit=1)) == 1


def test_a_stretch_of_work_carries_its_sessions_folder(store):
    """The History tab names a stretch by its session's project folder, not by the session's id."""
    base = {"started_at": "2026-03-01T10:00:00Z", "ended_at": "2026-03-01T10:01:00Z", "end_reason": "reset",
            "calls": 3, "segment": 0}
    store.sessions.upsert_session("s1", transcript="/t/s1.jsonl", project="/home/dev/webshop")
    store.sessions.archive_profile(dict(base, session_id="s1"))
    store.sessions.archive_profile(dict(base, session_id="unknown"))  # archived before its session was noted
    assert {p["session_id"]: p["project"] for p in store.sessions.segments()} == {"s1": "/home/dev/webshop",
                                                                                  "unknown": None}


def test_spend_adds_up_per_day_session_model_and_kind(store):
    store.spend.add_spend("2026-03-01", "s1", "m", "/p", False, {"in": 10, "cw5": 1, "cr": 100, "out": 5}, 0.5)
    store.spend.add_spend("2026-03-01", "s1", "m", "/p", False, {"input_tokens": 10, "cache_write_1h": 2}, 0.25)
    store.spend.add_spend("2026-03-01", "s1", "m", "/p", True, {"out": 7}, 0.1)
    store.spend.add_spend("2026-03-02", "s1", "m", "/p", False, {"out": 1}, 0.01)
    rows = store.spend.spend_rows(since="2026-03-01", until="2026-03-01")
    main = next(r for r in rows if not r["is_subagent"])
    assert main["tokens"] == {"in": 20, "cw5": 1, "cw1h": 2, "cr": 100, "out": 5}
    assert main["usd"] == pytest.approx(0.75)
    assert len(rows) == 2 and len(store.spend.spend_rows()) == 3


# --------------------------------------------------------------------------- reminders

def test_a_reminder_is_recorded_once_even_across_restarts(db_path):
    s = Store(db_path)
    assert s.sessions.record_reminder("s1", 0, 1, 12, "2026-03-01T10:00:00Z") is True
    assert s.sessions.record_reminder("s1", 0, 1, 13, "2026-03-01T10:00:05Z") is False
    assert s.sessions.record_reminder("s1", 0, 2, 20, "2026-03-01T10:01:00Z") is True
    assert s.sessions.record_reminder("s1", 1, 1, 30, "2026-03-01T11:00:00Z") is True  # a new segment starts laps over
    s.close()
    again = Store(db_path)  # the replay after a restart
    assert again.sessions.known_reminders("s1") == {(0, 1), (0, 2), (1, 1)}
    assert again.sessions.record_reminder("s1", 0, 2, 20, "2026-03-01T10:01:00Z") is False
    assert _rows(db_path, "SELECT count(*) FROM reminder")[0][0] == 3
    assert [r["lap"] for r in again.sessions.reminders("s1", since="2026-03-01T10:00:30Z")] == [2, 1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 6)), max_size=40))
def test_record_reminder_is_true_exactly_once_per_lap(tmp_path, laps):
    path = tmp_path / f"r{uuid.uuid4().hex}.db"  # hypothesis reuses tmp_path and seeds random
    s = Store(path)
    seen = set()
    for seg, lap in laps:
        assert s.sessions.record_reminder("s", seg, lap, 1, "2026-01-01T00:00:00Z") is ((seg, lap) not in seen)
        seen.add((seg, lap))
    assert _rows(path, "SELECT count(*) FROM reminder")[0][0] == len(seen)
    s.close()


# --------------------------------------------------------------------------- handoffs and lineage

def test_handoff_save_discover_load_and_lineage(store, db_path):
    _turn(store, "A", 1, "2026-03-01T10:00:00Z", "build the store", ["/proj/service/store.py"])
    h = store.handoffs.save_handoff("Finish the store", "Done: models. Next: tests.", ["/proj/models/tables.py"],
                           "/proj/", from_session="A")
    assert h["stored"] is True and re.fullmatch(r"h-[a-z0-9]{6}", h["token"]) and TOKEN_RE.match(h["token"])
    assert h["project"] == "/proj" and h["delivered_at"] is None
    assert [x["token"] for x in store.handoffs.undelivered_handoffs("/proj")] == [h["token"]]
    assert store.handoffs.undelivered_handoffs("/elsewhere") == []
    assert store.handoffs.lineage_of("A") is None  # saving is not loading: A loaded nothing

    got = store.handoffs.load_handoff(h["token"], "B")
    assert got["token"] == h["token"] and got["delivered_to_session"] == "B" and got["delivered_at"]
    assert got["body"] == "Done: models. Next: tests." and got["paths"] == ["/proj/models/tables.py"]
    assert store.handoffs.undelivered_handoffs("/proj") == []
    assert store.handoffs.lineage_of("B") == h["lineage_id"]

    # B works and hands over to C: one lineage across all three sessions.
    _turn(store, "B", 1, "2026-03-01T11:00:00Z", "write the tests")
    h2 = store.handoffs.save_handoff("Ship it", "", [], "/proj", from_session="B")
    assert h2["lineage_id"] == h["lineage_id"]
    store.handoffs.load_handoff(h2["token"], "C")
    _turn(store, "C", 1, "2026-03-01T12:00:00Z", "ship")
    page = store.history.history_page(store.handoffs.lineage_of("C"), 1)
    assert [(t["session_id"], t["prompt_preview"]) for t in page["turns"]] == [
        ("A", "build the store"), ("B", "write the tests"), ("C", "ship")]

    # Loading again (say after /clear) still links the new session; the first delivery is kept.
    again = store.handoffs.load_handoff(h["token"], "D")
    assert again["delivered_to_session"] == "B" and store.handoffs.lineage_of("D") == h["lineage_id"]
    assert _rows(db_path, "SELECT count(*) FROM lineage")[0][0] == 1


def test_unknown_or_malformed_tokens_load_nothing(store):
    assert store.handoffs.load_handoff("h-zzzzzz", "B") is None
    assert store.handoffs.load_handoff("h-1; DROP TABLE handoff", "B") is None
    assert store.handoffs.load_handoff("", "B") is None
    assert store.handoffs.lineage_of("B") is None


def test_undelivered_handoffs_newest_first_and_limited(store):
    tokens = []
    for i in range(5):
        tokens.append(store.handoffs.save_handoff(f"task {i}", "b", [], "/proj")["token"])
        time.sleep(0.002)
    assert [h["token"] for h in store.handoffs.undelivered_handoffs("/proj")] == tokens[::-1][:3]
    assert len(store.handoffs.undelivered_handoffs("/proj", limit=10)) == 5
    assert len({store.handoffs.save_handoff("t", "b", [], "/p")["token"] for _ in range(50)}) == 50


def test_task_preview_is_bounded_and_falls_back_to_the_body(store):
    h = store.handoffs.save_handoff("", "First line of the body\nmore", [], "/p")
    assert h["task"] == "First line of the body"
    long = store.handoffs.save_handoff("x" * 5000, "b", [], "/p")
    assert len(long["task"]) <= 500


# --------------------------------------------------------------------------- history

def test_history_paging_is_deterministic_oldest_first(db_path):
    s = Store(db_path)
    order = list(range(1, 26))
    random.Random(7).shuffle(order)  # written in any order
    for i in order:
        _turn(s, "A", i, f"2026-03-01T10:00:{i:02d}Z", f"prompt {i}")
    h = s.handoffs.save_handoff("t", "b", [], "/p", from_session="A")
    s.handoffs.load_handoff(h["token"], "B")
    lineage = s.handoffs.lineage_of("B")
    pages = [s.history.history_page(lineage, p) for p in (1, 2, 3)]
    assert [p["total"] for p in pages] == [25] * 3 and pages[0]["pages"] == 3
    assert [[t["turn"] for t in p["turns"]] for p in pages] == [list(range(1, 11)), list(range(11, 21)),
                                                                 list(range(21, 26))]
    assert pages[2]["turns"][0]["position"] == 21
    assert s.history.history_page(lineage, 4)["turns"] == []
    assert s.history.history_page(lineage, 0)["page"] == 1
    s.close()
    assert Store(db_path).history.history_page(lineage, 2) == pages[1]  # same page after a restart
    assert Store(db_path).history.history_page("no-such-lineage", 1)["total"] == 0


def test_equal_times_still_page_deterministically(store):
    for sid in ("Z", "A", "M"):
        for i in (3, 1, 2):
            _turn(store, sid, i, "2026-03-01T10:00:00Z", f"{sid}{i}", segment=0)
            store.history.add_turn_record(sid, 0, i, "2026-03-01T10:00:00Z", lineage_id="L", prompt_preview=f"{sid}{i}")
    got = [t["prompt_preview"] for t in store.history.history_page("L", 1, page_size=100)["turns"]]
    assert got == ["A1", "A2", "A3", "M1", "M2", "M3", "Z1", "Z2", "Z3"]


def test_search_finds_words_anywhere_and_says_which_page(store):
    turns = [(f"routine step {i}", [], []) for i in range(1, 15)]
    turns[11] = ("fix the naïve lamp colour for amber", ["/proj/desktop/tray.py"], [])
    lineage = _lineage_with(store, turns)
    hits, total = store.history.history_search(lineage, "amber lamp")
    assert total == 1 and hits[0]["turn"] == 12 and hits[0]["page"] == 2 and hits[0]["position"] == 12
    assert "[amber]" in hits[0]["snippet"]
    assert store.history.history_search(lineage, "naive")[1] == 1          # diacritics folded
    assert store.history.history_search(lineage, "tray.py")[1] == 1        # paths are searchable
    assert store.history.history_search(lineage, "col")[1] == 1            # words are prefixes
    assert store.history.history_search(lineage, "amber OR missing") == ([], 0)  # OR is a word, not an operator
    hits, total = store.history.history_search(lineage, "routine", limit=3)
    assert total == 13 and len(hits) == 3
    assert store.history.history_search("other-lineage", "amber") == ([], 0)


AWKWARD = ['"', '""', '"unterminated', "*", "**", "a*", "NEAR", "NEAR(a b)", "a NEAR b", "AND", "OR a",
           "NOT", "(", ")", "-x", "^start", "col:val", "prompt_preview:lamp", "{a b}", "'", "\\", "%", "_",
           "a+b", "naïve", "日本語", "emoji 🎉", "\x00", "   ", "", "x" * 5000, "🎉 * \" NEAR ( :"]


@pytest.mark.parametrize("query", AWKWARD)
def test_awkward_search_input_never_errors(store, query):
    lineage = _lineage_with(store, [("NEAR the \"lamp\" * AND naïve 日本語 a+b", ["/p/x_y.py"], [])])
    hits, total = store.history.history_search(lineage, query)
    assert isinstance(hits, list) and total >= len(hits)
    assert store.health() == {"ok": True, "error": None}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_any_search_text_is_safe(store, query):
    lineage = store.handoffs.lineage_of("B") or _lineage_with(store, [("the lamp turns amber", ["/p/a.py"], [])])
    hits, total = store.history.history_search(lineage, query)
    assert total >= len(hits)
    assert store.health()["ok"]


def test_search_on_words_the_text_contains_matches_it(store):
    lineage = _lineage_with(store, [('NEAR the "lamp" * AND naïve 日本語 a+b', [], [])])
    for query in ("NEAR", '"lamp"', "AND", "naïve", "日本語", "a+b"):
        assert store.history.history_search(lineage, query)[1] == 1, query


def test_locate_finds_reads_and_changes_by_path_or_tail(store):
    lineage = _lineage_with(store, [
        ("read it", ["/proj/service/store.py"], []),
        ("read the other", ["/proj/service/restore.py"], []),
        ("change it", [], ["/proj/service/store.py", "/proj/models/tables.py"]),
        ("unrelated", ["/proj/README.md"], []),
    ])
    hits, total = store.history.history_locate(lineage, "store.py")
    assert total == 2 and [h["turn"] for h in hits] == [1, 3]
    assert hits[0]["matched_read"] == ["/proj/service/store.py"] and hits[1]["matched_changed"] == [
        "/proj/service/store.py"]
    assert store.history.history_locate(lineage, "service/store.py")[1] == 2
    assert store.history.history_locate(lineage, "/proj/service/store.py")[1] == 2
    assert store.history.history_locate(lineage, "./service/restore.py")[1] == 1
    assert store.history.history_locate(lineage, "/proj/service")[1] == 3       # a folder: what is under it
    assert store.history.history_locate(lineage, "tore.py") == ([], 0)          # whole names only
    assert store.history.history_locate(lineage, "100%_") == ([], 0)
    hits, total = store.history.history_locate(lineage, "/proj", limit=2)
    assert total == 4 and len(hits) == 2 and hits[0]["page"] == 1


def test_store_prompts_false_keeps_no_prompt_text(db_path):
    s = Store(db_path, store_prompts=False)
    lineage = _lineage_with(s, [("my secret plan for zebra", ["/p/zebra_notes.md"], [])])
    assert _rows(db_path, "SELECT prompt_preview FROM turn_record") == [(None,)]
    assert _rows(db_path, "SELECT count(*) FROM turn_record_fts WHERE turn_record_fts MATCH 'secret'")[0][0] == 0
    assert s.history.history_search(lineage, "secret") == ([], 0)
    assert s.history.history_search(lineage, "zebra_notes")[1] == 1  # paths stay searchable
    assert not any(b"secret plan" in p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())
    s.close()


def test_forget_prompts_erases_stored_text(store, db_path):
    lineage = _lineage_with(store, [("remember the walrus", [], [])])
    store.history.forget_prompts()
    assert _rows(db_path, "SELECT prompt_preview FROM turn_record") == [(None,)]
    assert store.history.history_search(lineage, "walrus") == ([], 0)


def test_a_turn_rewritten_by_replay_is_replaced_not_duplicated(store, db_path):
    _turn(store, "A", 1, "2026-03-01T10:00:00Z", "first version")
    _turn(store, "A", 1, "2026-03-01T10:00:00Z", "second version", ["/p/a.py"])
    assert _rows(db_path, "SELECT prompt_preview, tokens FROM turn_record") == [("second version", 100)]
    assert _rows(db_path, "SELECT count(*) FROM turn_record_fts WHERE turn_record_fts MATCH 'first'")[0][0] == 0


# --------------------------------------------------------------------------- channels, ledgers, scan state

def test_channel_events_are_deduplicated_across_restarts(db_path):
    s = Store(db_path)
    ev = ("pinch", "2026-03-01T10:00:00Z", "transcript", {"original_tokens": 900, "final_tokens": 300})
    assert s.ledgers.add_channel_event(*ev, session_id="s1", kind="compaction") is True
    assert s.ledgers.add_channel_event(*ev, session_id="s1", kind="compaction") is False
    assert s.ledgers.add_channel_event(*ev, session_id="s1") is True  # another kind: another event
    assert s.ledgers.add_channel_event(*ev, session_id="s1") is False
    assert s.ledgers.add_channel_event("edit", "2026-03-01T10:00:00Z", "ledger", {"calls": 1}, dedup_key="k1") is True
    assert s.ledgers.add_channel_event("edit", "2026-03-01T11:00:00Z", "ledger", {"calls": 2}, dedup_key="k1") is False
    assert s.ledgers.add_channel_event("bogus", "2026-03-01T10:00:00Z", "x", {}) is False
    s.close()
    again = Store(db_path)
    assert again.ledgers.add_channel_event(*ev, session_id="s1") is False
    assert [(e["kind"], e["fields"]["final_tokens"]) for e in again.ledgers.channel_events("pinch")] == [
        ("compaction", 300), (None, 300)]
    assert again.ledgers.channel_events("edit", since="2026-03-01T10:30:00Z") == []


def test_ledger_snapshots_only_on_change(db_path):
    s = Store(db_path)
    assert s.ledgers.snapshot_ledger("lean-ctx", {"a": 1, "b": 2}) is True
    assert s.ledgers.snapshot_ledger("lean-ctx", {"b": 2, "a": 1}) is False
    assert s.ledgers.snapshot_ledger("lean-ctx", {"a": 2, "b": 2}) is True
    s.close()
    again = Store(db_path)
    assert again.ledgers.snapshot_ledger("lean-ctx", {"a": 2, "b": 2}) is False
    assert [x["counters"]["a"] for x in again.ledgers.ledger_snapshots("lean-ctx")] == [1, 2]


def test_scan_state_survives_a_restart(db_path):
    s = Store(db_path)
    assert s.spend.get_scan_state("/t/a.jsonl") is None
    s.spend.set_scan_state("/t/a.jsonl", inode=42, size=1000, mtime=1.5, offset=900)
    s.spend.set_scan_state("/t/a.jsonl", inode=42, size=2000, mtime=2.5, offset=2000)
    s.close()
    again = Store(db_path)
    assert again.spend.get_scan_state("/t/a.jsonl") == {"path": "/t/a.jsonl", "inode": 42, "size": 2000,
                                                  "mtime": 2.5, "offset": 2000}
    assert list(again.spend.scan_states()) == ["/t/a.jsonl"]


def test_writes_from_many_threads_all_land(store, db_path):
    def work(n):
        for i in range(25):
            store.spend.add_spend("2026-03-01", f"s{n}", "m", "/p", False, {"out": 1}, 0.001)
            store.ledgers.add_channel_event("edit", f"2026-03-01T10:00:{i:02d}Z", f"t{n}", {"i": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r["tokens"]["out"] for r in store.spend.spend_rows()) == [25] * 4
    assert len(store.ledgers.channel_events("edit")) == 100


# --------------------------------------------------------------------------- failing open, for real

def _locked(path: Path) -> sqlite3.Connection:
    """Another program holding the write lock (works as root, unlike chmod)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


def test_locked_database_queues_writes_and_speaks_once(db_path, caplog):
    msgs = Messages()
    s = Store(db_path, busy_timeout_ms=50, retry_backoff=(0, 0), on_message=msgs)
    s.history.add_turn_record("A", 0, 1, "2026-03-01T10:00:00Z", prompt_preview="before the lock")
    other = _locked(db_path)
    caplog.set_level(logging.INFO, logger=LOGGER)

    assert s.sessions.record_reminder("s1", 0, 1, 5, "2026-03-01T10:00:00Z") is True
    assert s.sessions.record_reminder("s1", 0, 1, 5, "2026-03-01T10:00:00Z") is False  # not raised twice meanwhile
    s.spend.add_spend("2026-03-01", "s1", "m", "/p", False, {"out": 5}, 0.5)
    s.spend.add_spend("2026-03-01", "s1", "m", "/p", False, {"out": 5}, 0.5)
    s.sessions.archive_profile({"session_id": "s1", "segment": 0, "B": 1, "path_totals": {}})
    h = s.handoffs.save_handoff("task while locked", "b", [], "/p", from_session="A")
    s.spend.set_scan_state("/t/x.jsonl", inode=1, size=10, mtime=1.0, offset=10)
    assert h["stored"] is False and s.pending_writes >= 5

    # Reads still answer, including what is only queued.
    assert s.sessions.known_reminders("s1") == {(0, 1)}
    assert [x["token"] for x in s.handoffs.undelivered_handoffs("/p")] == [h["token"]]
    assert s.spend.get_scan_state("/t/x.jsonl")["offset"] == 10
    health = s.health()
    assert health["ok"] is False and "locked" in health["error"]
    assert msgs.kinds() == ["locked"]
    assert sum("locked" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING) == 1
    assert _rows(db_path, "SELECT count(*) FROM reminder")[0][0] == 0  # nothing half-written

    other.execute("ROLLBACK")
    other.close()
    assert s.retry_pending() is True and s.pending_writes == 0
    assert msgs.kinds() == ["locked", "recovered"]
    assert s.health() == {"ok": True, "error": None}
    assert _rows(db_path, "SELECT count(*) FROM reminder")[0][0] == 1
    assert _rows(db_path, "SELECT tok_out, usd FROM daily_spend") == [(10, 1.0)]
    assert _rows(db_path, "SELECT token FROM handoff") == [(h["token"],)]
    assert _rows(db_path, "SELECT offset_bytes FROM scan_state") == [(10,)]
    assert len(s.sessions.segments("s1")) == 1
    # The handoff joined A's lineage when it landed: A's earlier turn is in it.
    s.handoffs.load_handoff(h["token"], "B")
    assert s.history.history_page(s.handoffs.lineage_of("B"), 1)["total"] == 1
    s.close()


def test_queued_writes_land_on_the_next_call_after_the_fault(db_path):
    s = Store(db_path, busy_timeout_ms=50, retry_backoff=(0, 0))
    other = _locked(db_path)
    s.ledgers.add_channel_event("edit", "2026-03-01T10:00:00Z", "x", {"calls": 1})
    other.execute("ROLLBACK")
    other.close()
    s.ledgers.add_channel_event("edit", "2026-03-01T10:00:01Z", "x", {"calls": 2})  # no explicit retry
    assert s.pending_writes == 0 and len(s.ledgers.channel_events("edit")) == 2


def test_backoff_keeps_calls_fast_while_the_database_is_busy(db_path):
    now = [0.0]
    s = Store(db_path, busy_timeout_ms=300, retry_backoff=(5.0, 60.0), clock=lambda: now[0])
    other = _locked(db_path)
    s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 1}, 0.0)  # pays one busy wait, then backs off
    t0 = time.perf_counter()
    for _ in range(20):
        s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 1}, 0.0)
    assert time.perf_counter() - t0 < 0.25  # no busy wait per call during the backoff
    other.execute("ROLLBACK")
    other.close()
    now[0] = 10.0
    s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 1}, 0.0)
    assert s.pending_writes == 0 and s.spend.spend_rows()[0]["tokens"]["out"] == 22


def test_read_only_database_fails_open(db_path):
    msgs = Messages()
    s = Store(db_path, retry_backoff=(0, 0), on_message=msgs)
    s.db.execute_sql("PRAGMA query_only = 1")  # this connection now cannot write (SQLITE_READONLY)
    s.history.add_turn_record("A", 0, 1, "2026-03-01T10:00:00Z", prompt_preview="x")
    s.history.add_turn_record("A", 0, 2, "2026-03-01T10:00:01Z", prompt_preview="y")
    assert msgs.kinds() == ["readonly"] and s.pending_writes == 2
    s.db.execute_sql("PRAGMA query_only = 0")
    assert s.retry_pending() and _rows(db_path, "SELECT count(*) FROM turn_record")[0][0] == 2


def test_full_disk_fails_open_and_recovers(db_path):
    msgs = Messages()
    s = Store(db_path, retry_backoff=(0, 0), on_message=msgs)
    pages = s.db.execute_sql("PRAGMA page_count").fetchone()[0]
    s.db.execute_sql(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL once the file must grow
    for i in range(200):
        s.history.add_turn_record("A", 0, i, "2026-03-01T10:00:00Z", prompt_preview=f"{i} " + "lorem ipsum " * 40)
    assert "disk_full" in msgs.kinds() and msgs.kinds().count("disk_full") == 1
    assert s.pending_writes > 0
    s.db.execute_sql("PRAGMA max_page_count = 1073741823")
    assert s.retry_pending() and _rows(db_path, "SELECT count(*) FROM turn_record")[0][0] == 200


def test_missing_folder_fails_open_until_it_exists(tmp_path):
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data folder should be")
    msgs = Messages()
    s = Store(blocker / "ctxlamp.db", retry_backoff=(0, 0), on_message=msgs)  # must not raise
    assert s.health()["ok"] is False and msgs.kinds() == ["unavailable"]
    assert s.sessions.record_reminder("s1", 0, 1, 1, "2026-03-01T10:00:00Z") is True
    assert s.sessions.segments() == [] and s.handoffs.undelivered_handoffs("/p") == []
    h = s.handoffs.save_handoff("t", "b", [], "/p")
    assert [x["token"] for x in s.handoffs.undelivered_handoffs("/p")] == [h["token"]]
    assert s.handoffs.load_handoff(h["token"], "B")["stored"] is False
    blocker.unlink()
    assert s.retry_pending() is True
    assert s.health() == {"ok": True, "error": None}
    assert _rows(blocker / "ctxlamp.db", "SELECT delivered_to_session FROM handoff") == [("B",)]
    assert s.handoffs.lineage_of("B") == h["lineage_id"]
    assert msgs.kinds() == ["unavailable", "recovered"]


def test_the_queue_is_bounded_merging_first_then_dropping_the_oldest(db_path):
    msgs = Messages()
    s = Store(db_path, busy_timeout_ms=20, retry_backoff=(0, 0), max_pending=5, on_message=msgs)
    other = _locked(db_path)
    for _ in range(30):
        s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 2}, 0.5)  # merged, never dropped
    assert s.pending_writes <= 5 and s.dropped_writes == 0 and msgs.kinds() == ["locked"]
    s.ledgers.add_channel_event("pinch", "2026-03-01T09:00:00Z", "x", {"i": -1})
    other.execute("ROLLBACK")  # land what is queued so far: nothing was lost to merging
    assert s.retry_pending()
    assert s.spend.spend_rows()[0]["tokens"]["out"] == 60 and s.spend.spend_rows()[0]["usd"] == pytest.approx(15.0)

    other.execute("BEGIN EXCLUSIVE")
    s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 1}, 0.0)
    for i in range(10):
        s.ledgers.add_channel_event("edit", f"2026-03-01T10:00:{i:02d}Z", "x", {"i": i})
    assert s.pending_writes == 5 and s.dropped_writes == 6  # the spend and events 0..4: the oldest
    assert msgs.kinds() == ["locked", "recovered", "locked", "overflow"]
    other.execute("ROLLBACK")
    other.close()
    assert s.retry_pending()
    assert [e["fields"]["i"] for e in s.ledgers.channel_events("edit")] == [5, 6, 7, 8, 9]  # the newest were kept
    assert s.spend.spend_rows()[0]["tokens"]["out"] == 60
    assert "6 older writes" in msgs[-1][1]


def test_batch_is_all_or_nothing(store, db_path):
    with store.batch():
        store.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 3}, 0.1)
        store.spend.set_scan_state("/t/a.jsonl", inode=1, size=10, mtime=1.0, offset=10)
    assert _rows(db_path, "SELECT offset_bytes FROM scan_state") == [(10,)]
    with pytest.raises(RuntimeError):
        with store.batch():
            store.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 100}, 1.0)
            raise RuntimeError("the caller failed half way")
    assert _rows(db_path, "SELECT tok_out FROM daily_spend") == [(3,)]


def test_a_write_the_database_refuses_is_dropped_without_blocking_others(store, db_path, caplog):
    caplog.set_level(logging.ERROR, logger=LOGGER)
    with store.batch():
        store.spend.add_spend("not a day", "s", "m", None, False, {"out": 1}, 0.0)  # rejected at the door
        store.history.add_turn_record("A", 0, 1, "2026-03-01T10:00:00Z")
    assert _rows(db_path, "SELECT count(*) FROM turn_record")[0][0] == 1
    assert store.health()["ok"] and any("add_spend" in r.getMessage() for r in caplog.records)


def test_a_newer_schema_is_reported_and_nothing_is_written(db_path):
    Store(db_path).close()
    con = sqlite3.connect(db_path)
    con.execute("PRAGMA user_version = 99")
    con.close()
    msgs = Messages()
    s = Store(db_path, on_message=msgs)  # does not raise
    s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 1}, 0.0)
    assert msgs.kinds() == ["schema_too_new"] and "99" in s.health()["error"]
    assert _rows(db_path, "SELECT count(*) FROM daily_spend")[0][0] == 0


# --------------------------------------------------------------------------- the hook's read-only view

def test_read_only_store_reads_handoffs_while_the_writer_holds_the_lock(store, db_path, caplog, capsys):
    h = store.handoffs.save_handoff("pick up here", "b", [], "/proj")
    other = _locked(db_path)
    ro = Store.open_readonly(db_path)
    assert [x["token"] for x in ro.handoffs.undelivered_handoffs("/proj")] == [h["token"]]
    assert ro.sessions.record_reminder("s", 0, 1, 1, "2026-03-01T10:00:00Z") in (True, False)  # ignored, no raise
    assert ro.pending_writes == 0
    other.execute("ROLLBACK")
    other.close()
    assert _rows(db_path, "SELECT count(*) FROM reminder")[0][0] == 0


def test_read_only_store_on_a_missing_file_is_silent_and_creates_nothing(tmp_path, caplog, capsys):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    missing = tmp_path / "none" / "ctxlamp.db"
    ro = Store.open_readonly(missing)
    assert ro.handoffs.undelivered_handoffs("/proj") == []
    assert ro.handoffs.lineage_of("x") is None
    assert ro.health()["ok"] is False
    assert not missing.parent.exists()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("exc, kind", [
    (sqlite3.OperationalError("database is locked"), "locked"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "readonly"),
    (sqlite3.OperationalError("database or disk is full"), "disk_full"),
    (sqlite3.OperationalError("unable to open database file"), "unavailable"),
    (sqlite3.DatabaseError("database disk image is malformed"), "corrupt"),
    (FileNotFoundError("gone"), "unavailable"),
    (sqlite3.IntegrityError("UNIQUE constraint failed"), None),
    (sqlite3.InterfaceError("Error binding parameter 1 - probably unsupported type"), None),
])
def test_faults_are_told_apart_from_bad_writes(exc, kind):
    """Faults queue and retry; a bad write is dropped, or it would block every write behind it."""
    from service.store.writer import fault_kind
    assert fault_kind(exc) == kind


def test_profile_values_of_odd_types_are_stored_not_stuck(store):
    class Num:
        def __float__(self):
            return 2.5

        def __int__(self):
            return 7

    store.sessions.archive_profile({"session_id": "s", "segment": 0, "B": Num(), "g": Num(), "model": Num(),
                           "path_totals": {"/a": Num()}})
    assert store.pending_writes == 0
    p = store.sessions.segments("s")[0]
    assert p["B"] == 7 and p["g"] == 2.5 and p["path_totals"] == {"/a": 2.5}


def test_a_url_opens_the_same_store(tmp_path):
    s = Store.open(f"sqlite:///{tmp_path}/via-url.db")
    s.spend.add_spend("2026-03-01", "s", "m", None, False, {"out": 1}, 0.0)
    assert _rows(tmp_path / "via-url.db", "SELECT tok_out FROM daily_spend") == [(1,)]
    bad = Store("mysql://nowhere/db")  # a wrong config value: reported, never raised
    assert bad.health()["ok"] is False and "mysql" in bad.health()["error"]


def test_configure_switches_prompt_storage(store, db_path):
    store.configure({"history": {"store_prompts": False}, "other": 1})
    _turn(store, "A", 1, "2026-03-01T10:00:00Z", "do not keep me")
    assert _rows(db_path, "SELECT prompt_preview FROM turn_record") == [(None,)]


def test_read_only_store_reads_after_the_service_closed_cleanly(db_path):
    w = Store(db_path)
    h = w.handoffs.save_handoff("after hours", "b", [], "/proj")
    w.close()
    ro = Store.open_readonly(db_path)
    assert [x["token"] for x in ro.handoffs.undelivered_handoffs("/proj")] == [h["token"]]
    assert ro.health() == {"ok": True, "error": None}
    for side in db_path.parent.glob("ctxlamp.db-*"):
        assert (side.stat().st_mode & 0o777) == 0o600, side


def test_every_kind_of_write_the_parts_queue_has_one_operation(store):
    """A write whose kind no part registered would be dropped as bad data when it lands: none may exist."""
    import service.store as package

    queued = set()
    for module in Path(package.__file__).parent.glob("*.py"):
        queued |= set(re.findall(r'QueuedWrite\("([a-z_]+)"', module.read_text(encoding="utf-8")))
    registered = set(store.writer._operations)
    assert queued and queued == registered
    from service.store.common import Operation

    with pytest.raises(ValueError, match="spend"):  # a kind belongs to one part only
        store.writer.register({"spend": Operation(lambda m, p: None)})


def test_queued_batches_of_turns_merge_to_each_turns_newest_row(db_path):
    """A reader writes the turns of each piece of transcript as one batch; while the database is locked
    the batches merge, so a long outage queues each turn once (as single upserts do) and loses none."""
    s = Store(db_path, busy_timeout_ms=20, retry_backoff=(0, 0), max_pending=5)
    other = _locked(db_path)
    for i in range(30):
        s.history.add_turn_records([{"session_id": "A", "segment": 0, "turn": t, "at": "2026-03-01T10:00:00Z",
                             "prompt_preview": f"turn {t}", "tokens": i} for t in (1, 2)])
    s.history.add_turn_records([{"session_id": "A", "segment": 0, "turn": 3, "at": "2026-03-01T11:00:00Z", "tokens": 7},
                        {"session_id": "A", "segment": 0, "turn": "not a number", "at": None}])  # refused alone
    assert s.pending_writes == 1 and s.dropped_writes == 0
    other.execute("ROLLBACK")
    other.close()
    assert s.retry_pending()
    assert _rows(db_path, "SELECT turn_index, tokens FROM turn_record ORDER BY turn_index") == [(1, 29), (2, 29), (3, 7)]
    assert s.history.history_search(s.handoffs.save_handoff("t", "b", [], "/p", from_session="A")["lineage_id"], "turn")[1] == 2


def test_turns_join_the_lineage_of_their_sessions_handoff_or_the_one_it_loaded(store):
    """Each batch of turns looks its sessions' lineage up (compiled once per dialect): the handoff a
    session wrote, else the one it loaded; none for a session with neither."""
    h = store.handoffs.save_handoff("task", "body", [], "/p", from_session="A")
    store.handoffs.load_handoff(h["token"], "B")
    store.history.add_turn_records([{"session_id": sid, "segment": 0, "turn": 0, "at": "2026-03-01T10:00:00Z",
                             "prompt_preview": f"work of {sid}"} for sid in ("A", "B", "C")])
    page = store.history.history_page(h["lineage_id"], 1)
    assert sorted(t["session_id"] for t in page["turns"]) == ["A", "B"]
    assert store.history.history_page(store.handoffs.lineage_of("C") or "none", 1)["total"] == 0


def test_turns_of_many_sessions_written_at_once_take_each_sessions_lineage(tmp_path):
    """The first pass writes hundreds of sessions' turns in one go, their lineages looked up together: each
    turn gets what writing it alone gives (the lineage its session loaded, else its own newest handoff's)."""
    from service.store.common import session_lineage, session_lineages

    def history(store):
        h = store.handoffs.save_handoff("carry on", "notes", [], "/proj", from_session="A")
        store.handoffs.load_handoff(h["token"], "B")   # B loaded A's handoff: its lineage
        store.handoffs.save_handoff("more", "notes", [], "/proj", from_session="C")  # C: its own handoff's
        store.sessions.upsert_session("D", transcript="/d.jsonl")                   # D: none
        return h["lineage_id"]

    sids = ["A", "B", "C", "D", "E"]
    alone, together = Store(tmp_path / "alone.db"), Store(tmp_path / "together.db")
    try:
        assert history(alone) and history(together)
        for i, sid in enumerate(sids):
            _turn(alone, sid, 1, f"2026-03-01T10:00:0{i}Z", "a prompt")
        together.history.add_turn_records([
            {"session_id": sid, "segment": 0, "turn": 1, "at": f"2026-03-01T10:00:0{i}Z", "prompt_preview": "a prompt",
             "paths_read": [], "paths_changed": [], "tokens": 100, "cost_usd": 0.01} for i, sid in enumerate(sids)])
        def written(store):  # lineage ids are random: named by their first turn
            names: dict = {}
            return [(sid, names.setdefault(lineage, f"lineage {len(names)}") if lineage else None) for sid, lineage in
                    _rows(store.path, "SELECT session_id, lineage_id FROM turn_record ORDER BY session_id")]

        assert written(together) == written(alone)
        lineages = dict(written(together))
        assert lineages["A"] and lineages["B"] == lineages["A"] and lineages["C"] not in (None, lineages["A"])
        assert lineages["D"] is None and lineages["E"] is None
        assert together.writer.read(lambda m: session_lineages(m, sids), None) == \
            {sid: together.writer.read(lambda m, sid=sid: session_lineage(m, sid), None) for sid in sids}
    finally:
        alone.close()
        together.close()


def test_a_run_of_one_kind_lands_at_once_and_a_refused_row_drops_only_itself(db_path):
    """Writes of one kind queued one after another land in one call (one statement for many rows); when the
    database refuses one of them for its data, the others still land, each on its own, as before."""
    import peewee as pw

    from service.store.common import Operation, QueuedWrite

    store = Store(db_path)
    calls = []

    def insert(m, payload):
        if payload.get("bad"):
            raise pw.IntegrityError("refused")
        m.ScanState.insert(path=payload["path"], size=1).execute()

    def one(m, payload):
        calls.append("one")
        insert(m, payload)

    def many(m, payloads):
        calls.append(f"{len(payloads)} at once")
        for payload in payloads:
            insert(m, payload)

    try:
        store.writer.register({"probe": Operation(one, apply_many=many)})
        with store.batch():
            store.writer.submit([QueuedWrite("probe", {"path": p}) for p in ("a", "b", "c")])
        assert calls == ["3 at once"]
        calls.clear()
        with store.batch():
            store.writer.submit([QueuedWrite("probe", {"path": "d"}), QueuedWrite("probe", {"path": "e", "bad": True}),
                                 QueuedWrite("probe", {"path": "f"})])
        assert calls == ["3 at once", "one", "one", "one"], "refused at once: then each on its own"
        assert sorted(r[0] for r in _rows(db_path, "SELECT path FROM scan_state")) == ["a", "b", "c", "d", "f"]
        assert store.dropped_writes == 1 and store.pending_writes == 0
    finally:
        store.close()
