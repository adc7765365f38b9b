"""0001: the first schema (sessions, profiles, reminders, spend, handoffs, lineages,
turn records + FTS5, channel events, ledger snapshots, scan state).

The models here are a frozen copy of the schema at version 1: later changes to
models/tables.py go into new migrations, never into this file.
"""
from __future__ import annotations

import peewee as pw

FTS_TABLE = "turn_record_fts"


def _frozen_models(db: pw.Database) -> list[type[pw.Model]]:
    class Base(pw.Model):
        class Meta:
            database = db

    class Session(Base):
        session_id = pw.TextField(primary_key=True)
        transcript = pw.TextField(null=True)
        project = pw.TextField(null=True)
        first_seen = pw.TextField(null=True)
        last_seen = pw.TextField(null=True)
        model = pw.TextField(null=True)
        lineage_id = pw.TextField(null=True, index=True)
        is_subagent = pw.BooleanField(default=False)

        class Meta:
            table_name = "session"

    class Lineage(Base):
        id = pw.TextField(primary_key=True)
        created_at = pw.TextField()

        class Meta:
            table_name = "lineage"

    class SegmentProfile(Base):
        session_id = pw.TextField()
        segment = pw.IntegerField()
        started_at = pw.TextField(null=True)
        ended_at = pw.TextField(null=True)
        end_reason = pw.TextField(null=True)
        model = pw.TextField(null=True)
        calls = pw.IntegerField(default=0)
        turns = pw.IntegerField(default=0)
        B = pw.BigIntegerField(column_name="b", null=True)
        L_peak = pw.BigIntegerField(column_name="l_peak", null=True)
        g = pw.DoubleField(null=True)
        br = pw.DoubleField(null=True)
        mf = pw.DoubleField(null=True)
        bill_in_usd = pw.DoubleField(null=True)
        bill_out_usd = pw.DoubleField(null=True)
        rent_usd = pw.DoubleField(null=True)
        laps = pw.IntegerField(default=0)
        duration_s = pw.DoubleField(null=True)
        path_totals = pw.TextField(null=True)
        archived_at = pw.TextField()

        class Meta:
            table_name = "segment_profile"
            indexes = ((("session_id", "segment"), True),)

    class Reminder(Base):
        session_id = pw.TextField()
        segment = pw.IntegerField()
        lap = pw.IntegerField()
        call = pw.IntegerField(column_name="call_no")
        at = pw.TextField(null=True)

        class Meta:
            table_name = "reminder"
            indexes = ((("session_id", "segment", "lap"), True),)

    class DailySpend(Base):
        day = pw.TextField()
        session_id = pw.TextField()
        model = pw.TextField()
        project = pw.TextField(null=True)
        is_subagent = pw.BooleanField(default=False)
        tok_in = pw.BigIntegerField(default=0)
        tok_cw5 = pw.BigIntegerField(default=0)
        tok_cw1h = pw.BigIntegerField(default=0)
        tok_cr = pw.BigIntegerField(default=0)
        tok_out = pw.BigIntegerField(default=0)
        usd = pw.DoubleField(default=0.0)

        class Meta:
            table_name = "daily_spend"
            indexes = ((("day", "session_id", "model", "is_subagent"), True),)

    class Handoff(Base):
        token = pw.TextField(unique=True)
        task = pw.TextField()
        body = pw.TextField()
        paths = pw.TextField(null=True)
        project = pw.TextField(null=True)
        created_at = pw.TextField()
        delivered_at = pw.TextField(null=True)
        from_session = pw.TextField(null=True)
        delivered_to_session = pw.TextField(null=True)
        lineage_id = pw.TextField(null=True, index=True)

        class Meta:
            table_name = "handoff"
            indexes = ((("project", "delivered_at"), False),)

    class TurnRecord(Base):
        session_id = pw.TextField()
        segment = pw.IntegerField()
        turn_index = pw.IntegerField()
        at = pw.TextField(null=True)
        prompt_preview = pw.TextField(null=True)
        paths_read = pw.TextField(null=True)
        paths_changed = pw.TextField(null=True)
        tokens = pw.BigIntegerField(default=0)
        cost_usd = pw.DoubleField(default=0.0)
        lineage_id = pw.TextField(null=True)

        class Meta:
            table_name = "turn_record"
            indexes = (
                (("session_id", "segment", "turn_index"), True),
                (("lineage_id", "at"), False),
            )

    class ChannelEvent(Base):
        channel = pw.TextField()
        kind = pw.TextField(null=True)
        ts = pw.TextField()
        source = pw.TextField()
        session_id = pw.TextField(null=True)
        fields = pw.TextField(null=True)
        dedup_key = pw.TextField(unique=True)

        class Meta:
            table_name = "channel_event"
            indexes = ((("channel", "ts"), False),)

    class LedgerSnapshot(Base):
        source = pw.TextField()
        ts = pw.TextField()
        counters = pw.TextField()

        class Meta:
            table_name = "ledger_snapshot"
            indexes = ((("source", "ts"), False),)

    class ScanState(Base):
        path = pw.TextField(primary_key=True)
        inode = pw.BigIntegerField(null=True)
        size = pw.BigIntegerField(default=0)
        mtime = pw.DoubleField(null=True)
        offset = pw.BigIntegerField(column_name="offset_bytes", default=0)

        class Meta:
            table_name = "scan_state"

    return [Session, Lineage, SegmentProfile, Reminder, DailySpend, Handoff,
            TurnRecord, ChannelEvent, LedgerSnapshot, ScanState]


def _fts5_available(db: pw.SqliteDatabase) -> bool:
    rows = db.execute_sql("PRAGMA compile_options").fetchall()
    return any(str(r[0]).upper() == "ENABLE_FTS5" for r in rows)


def _paths_text(row: str) -> str:
    """The two JSON path arrays as plain space-separated text (string functions only: no JSON1 needed)."""
    def plain(column: str) -> str:
        return (f"replace(replace(replace(replace(coalesce({row}.{column}, ''), '[]', ''), "
                f"'[\"', ''), '\"]', ''), '\",\"', ' ')")
    return f"{plain('paths_read')} || ' ' || {plain('paths_changed')}"


_FTS_SQL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "prompt_preview, paths, tokenize = 'unicode61 remove_diacritics 2')",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON turn_record BEGIN
        INSERT INTO {FTS_TABLE}(rowid, prompt_preview, paths)
        VALUES (new.id, new.prompt_preview,
                {_paths_text('new')});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON turn_record BEGIN
        DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au
        AFTER UPDATE OF prompt_preview, paths_read, paths_changed ON turn_record BEGIN
        DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
        INSERT INTO {FTS_TABLE}(rowid, prompt_preview, paths)
        VALUES (new.id, new.prompt_preview,
                {_paths_text('new')});
    END""",
)


def up(db: pw.Database) -> None:
    db.create_tables(_frozen_models(db), safe=True)
    # Full-text search over turn records exists on SQLite builds with FTS5 only;
    # elsewhere (PostgreSQL, or SQLite without FTS5) the store searches with LIKE/ILIKE.
    if isinstance(db, pw.SqliteDatabase) and _fts5_available(db):
        for statement in _FTS_SQL:
            db.execute_sql(statement)
