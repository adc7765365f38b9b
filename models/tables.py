"""The current schema as peewee models, bound to `database_proxy`.

Migrations under `models/migrations/` create these tables (each migration keeps
its own frozen copy, so later edits here never rewrite history); a test checks
that a migrated database has exactly the columns declared here.

Times are ISO-8601 UTC text (`2026-11-29T22:47:44.123Z`): it sorts as text,
reads the same on SQLite and PostgreSQL, and matches the transcripts' format.
JSON columns hold text so both back ends store them the same way.
"""
from __future__ import annotations

import json

import peewee as pw

database_proxy = pw.DatabaseProxy()


class JSONField(pw.TextField):
    """JSON as text: compact, keys sorted, non-ASCII kept (so LIKE finds paths)."""

    def db_value(self, value):
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    def python_value(self, value):
        if value is None:
            return None
        return json.loads(value)


class BaseModel(pw.Model):
    class Meta:
        database = database_proxy
        legacy_table_names = False


class Session(BaseModel):
    """One Claude Code session (one transcript file)."""

    session_id = pw.TextField(primary_key=True)
    transcript = pw.TextField(null=True)
    project = pw.TextField(null=True)  # the session's cwd
    first_seen = pw.TextField(null=True)
    last_seen = pw.TextField(null=True)
    model = pw.TextField(null=True)
    lineage_id = pw.TextField(null=True, index=True)  # set when a handoff is loaded into it
    is_subagent = pw.BooleanField(default=False)


class Lineage(BaseModel):
    """A chain of sessions linked by handoffs."""

    id = pw.TextField(primary_key=True)
    created_at = pw.TextField()


class SegmentProfile(BaseModel):
    """The summary archived at each reset, rotation and shutdown (docs/measurement.md section 10)."""

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
    path_totals = JSONField(null=True)
    models = JSONField(null=True)  # [{model, calls, bill_in_usd, bill_out_usd}] in order of first use (0003)
    restart_savings = JSONField(null=True)  # what one restart would have saved, measurement.md 14 (0004)
    archived_at = pw.TextField()

    class Meta:
        indexes = ((("session_id", "segment"), True),)


class Reminder(BaseModel):
    """A restart reminder the ledger raised; unique per lap so a replay never raises it twice."""

    session_id = pw.TextField()
    segment = pw.IntegerField()
    lap = pw.IntegerField()
    call = pw.IntegerField(column_name="call_no")
    at = pw.TextField(null=True)

    class Meta:
        indexes = ((("session_id", "segment", "lap"), True),)


class DailySpend(BaseModel):
    """Tokens and USD per day, session, model and main/subagent; added to incrementally."""

    day = pw.TextField()  # YYYY-MM-DD (UTC)
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
        indexes = ((("day", "session_id", "model", "is_subagent"), True),)


class Handoff(BaseModel):
    """What a session leaves for its successor, found by a short load token."""

    token = pw.TextField(unique=True)
    task = pw.TextField()
    body = pw.TextField()
    paths = JSONField(null=True)
    project = pw.TextField(null=True)
    created_at = pw.TextField()
    delivered_at = pw.TextField(null=True)
    from_session = pw.TextField(null=True)
    delivered_to_session = pw.TextField(null=True)
    lineage_id = pw.TextField(null=True, index=True)

    class Meta:
        indexes = ((("project", "delivered_at"), False),)


class TurnRecord(BaseModel):
    """One user turn: what the history tools page, search and locate."""

    session_id = pw.TextField()
    segment = pw.IntegerField()
    turn_index = pw.IntegerField()
    at = pw.TextField(null=True)
    prompt_preview = pw.TextField(null=True)
    paths_read = JSONField(null=True)
    paths_changed = JSONField(null=True)
    tokens = pw.BigIntegerField(default=0)
    cost_usd = pw.DoubleField(default=0.0)
    lineage_id = pw.TextField(null=True)

    class Meta:
        indexes = (
            (("session_id", "segment", "turn_index"), True),
            (("lineage_id", "at"), False),
        )


class ChannelEvent(BaseModel):
    """One edit, pinch or retrieval event, from any source; dedup_key makes re-reads harmless."""

    channel = pw.TextField()  # edit | pinch | retrieval
    kind = pw.TextField(null=True)  # the channel's own sort: str_replace, compaction, tool, ...
    ts = pw.TextField()
    source = pw.TextField()
    session_id = pw.TextField(null=True)
    fields = JSONField(null=True)
    dedup_key = pw.TextField(unique=True)

    class Meta:
        indexes = ((("channel", "ts"), False),)


class LedgerSnapshot(BaseModel):
    """An external all-time ledger's counters (lean-ctx edit_metering.json), kept when they change."""

    source = pw.TextField()
    ts = pw.TextField()
    counters = JSONField()

    class Meta:
        indexes = ((("source", "ts"), False),)


class ScanState(BaseModel):
    """How far the history scan has read each file, so a restart resumes instead of re-adding."""

    path = pw.TextField(primary_key=True)
    inode = pw.BigIntegerField(null=True)
    size = pw.BigIntegerField(default=0)
    mtime = pw.DoubleField(null=True)
    offset = pw.BigIntegerField(column_name="offset_bytes", default=0)


class TeamOutbox(BaseModel):
    """A team row (figures of one member) and the digest of it the team server last confirmed.

    `digest` differs from `confirmed` while the server has not taken this version;
    `payload` None is a deletion still to send.
    """

    member = pw.TextField()
    kind = pw.TextField()  # day | channel | segment
    key = pw.TextField()   # the row's natural key, as JSON
    payload = JSONField(null=True)
    digest = pw.TextField()
    confirmed = pw.TextField(null=True)

    class Meta:
        indexes = ((("member", "kind", "key"), True),)


ALL_MODELS = (
    Session, Lineage, SegmentProfile, Reminder, DailySpend, Handoff,
    TurnRecord, ChannelEvent, LedgerSnapshot, ScanState, TeamOutbox,
)

# The FTS5 table over turn records (SQLite only); kept in sync by triggers (see 0001).
TURN_FTS_TABLE = "turn_record_fts"
