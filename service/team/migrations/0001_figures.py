"""0001: members, the project-hash key, the three figure tables, their indexes and row-level security.

day_figures: per member, UTC day, model and project (spend, calls, rent, reminders);
channel_day: per member and day (pinch, edit, retrieval); segment: archived
segment profiles (exit metrics only). A member's role reads every row and
writes only rows whose `member` is its own (current_member()).
"""
from __future__ import annotations

import secrets

S = "ctxlamp_team"
FIGURE_TABLES = ("day_figures", "channel_day", "segment")

SQL = f"""
CREATE TABLE {S}.member (
    name text PRIMARY KEY,
    role text NOT NULL UNIQUE,
    added_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE {S}.settings (name text PRIMARY KEY, value text NOT NULL);
CREATE FUNCTION {S}.current_member() RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT name FROM {S}.member WHERE role = current_user $$;

CREATE TABLE {S}.day_figures (
    member text NOT NULL,
    day date NOT NULL,
    model text NOT NULL,
    project text NOT NULL,
    main_usd double precision NOT NULL DEFAULT 0,
    subagents_usd double precision NOT NULL DEFAULT 0,
    estimated_usd double precision NOT NULL DEFAULT 0,
    calls integer NOT NULL DEFAULT 0,
    main_calls integer NOT NULL DEFAULT 0,
    unpriced_calls integer NOT NULL DEFAULT 0,
    rent_usd double precision NOT NULL DEFAULT 0,
    reminders integer NOT NULL DEFAULT 0,
    restarts_after_reminder integer NOT NULL DEFAULT 0,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (member, day, model, project)
);
CREATE INDEX day_figures_day ON {S}.day_figures (day);

CREATE TABLE {S}.channel_day (
    member text NOT NULL,
    day date NOT NULL,
    pinch_events integer NOT NULL DEFAULT 0,
    pinch_requests integer NOT NULL DEFAULT 0,
    pinch_pinched_requests integer NOT NULL DEFAULT 0,
    pinch_tokens_saved bigint NOT NULL DEFAULT 0,
    pinch_saved_usd double precision NOT NULL DEFAULT 0,
    edit_str_replace_calls integer NOT NULL DEFAULT 0,
    edit_str_replace_old_string_tokens bigint NOT NULL DEFAULT 0,
    edit_str_replace_old_string_usd double precision NOT NULL DEFAULT 0,
    edit_str_replace_misses integer NOT NULL DEFAULT 0,
    edit_anchored_calls integer NOT NULL DEFAULT 0,
    edit_anchored_avoided_output_tokens bigint NOT NULL DEFAULT 0,
    retrieval_calls integer NOT NULL DEFAULT 0,
    retrieval_bytes_served bigint NOT NULL DEFAULT 0,
    retrieval_bytes_saved bigint NOT NULL DEFAULT 0,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (member, day)
);
CREATE INDEX channel_day_day ON {S}.channel_day (day);

CREATE TABLE {S}.segment (
    member text NOT NULL,
    session text NOT NULL,
    segment integer NOT NULL,
    day date NOT NULL,
    model text NOT NULL,
    project text NOT NULL,
    end_reason text,
    calls integer,
    turns integer,
    b bigint,
    l_peak bigint,
    g double precision,
    br double precision,
    mf double precision,
    bill_in_usd double precision,
    bill_out_usd double precision,
    rent_usd double precision,
    laps integer,
    duration_s double precision,
    reminders integer NOT NULL DEFAULT 0,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (member, session, segment)
);
CREATE INDEX segment_day ON {S}.segment (day);
"""


def _rls(table: str) -> str:
    me = f"member = {S}.current_member()"
    return f"""
ALTER TABLE {S}.{table} ENABLE ROW LEVEL SECURITY;
CREATE POLICY team_reads ON {S}.{table} FOR SELECT USING (true);
CREATE POLICY own_inserts ON {S}.{table} FOR INSERT WITH CHECK ({me});
CREATE POLICY own_updates ON {S}.{table} FOR UPDATE USING ({me}) WITH CHECK ({me});
CREATE POLICY own_deletes ON {S}.{table} FOR DELETE USING ({me});
"""


def up(db) -> None:
    db.execute_sql(SQL)
    for table in FIGURE_TABLES:
        db.execute_sql(_rls(table))
    db.execute_sql(f"INSERT INTO {S}.settings (name, value) VALUES ('project_key', %s)", (secrets.token_hex(32),))
