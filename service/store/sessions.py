"""Sessions, the profiles of finished segments, and the reminders raised (each once)."""
from __future__ import annotations

from typing import Any

import peewee as pw

from service.engine.model_mix import profile_models
from service.engine.restart_savings import RestartFigures
from service.store.common import (Models, Operation, Payload, Row, QueuedWrite, id_runs, insert_rows, norm_project,
                                  log, newest, spread, utc_iso)
from service.store.writer import Writer


def _merge_session(old: Payload, new: Payload) -> Payload:
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


def _newest_first(P: Any) -> tuple[Any, ...]:
    """Segment profiles newest first: by when the segment ended (else was archived), then by row."""
    return (pw.fn.COALESCE(P.ended_at, P.archived_at).desc(), P.id.desc())


class Sessions:
    """The store's part for sessions, segment profiles and reminders (each raised once)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._reminders_seen: dict[str, set[tuple[int, int]]] = {}
        self._reminders_loaded: set[str] = set()
        writer.register({
            "session": Operation(lambda m, payload: self._w_sessions(m, [payload]), _merge_session, self._w_sessions),
            "profile": Operation(spread(self._w_profile), newest, self._w_profiles),
            "reminder": Operation(spread(self._w_reminder)),
        })

    # ------------------------------------------------------------------ sessions

    def upsert_session(self, session_id: str, *, transcript: str | None = None, project: str | None = None,
                       model: str | None = None, is_subagent: bool | None = None, seen_at: Any = None) -> None:
        """Create or update a session; fields given as None keep their stored value."""
        try:
            seen = utc_iso(seen_at)
            payload = {
                "session_id": str(session_id), "transcript": None if transcript is None else str(transcript),
                "project": norm_project(project), "model": model,
                "is_subagent": None if is_subagent is None else bool(is_subagent),
                "first_seen": seen, "last_seen": seen,
            }
        except Exception as exc:
            log.error("upsert_session ignored bad input: %s", exc)
            return
        self._writer.submit([QueuedWrite("session", payload, (payload["session_id"],))])

    def _w_sessions(self, m: Models, payloads: list[Payload]) -> None:
        """Sessions' upserts: those of one session merged as the queue merges them (what one by one
        leaves), the stored rows read with one query, the new ones inserted with one statement; fields
        given as None keep their stored value, the first and last seen times only widen."""
        merged: dict[str, Payload] = {}
        for payload in payloads:
            sid = payload["session_id"]
            merged[sid] = _merge_session(merged[sid], payload) if sid in merged else payload
        S = m.Session
        stored: dict[str, Any] = {}
        for part in id_runs(merged):
            stored.update({row.session_id: row for row in S.select().where(S.session_id.in_(part))})
        insert_rows(lambda row: S.insert(row), [self._new_session(p) for sid, p in merged.items() if sid not in stored])
        for sid, p in merged.items():
            if sid in stored:
                self._update_session(m, stored[sid], p["transcript"], p["project"], p["model"], p["is_subagent"],
                                     p["first_seen"], p["last_seen"])

    @staticmethod
    def _new_session(p: Payload) -> Row:
        return {"session_id": p["session_id"], "transcript": p["transcript"], "project": p["project"],
                "model": p["model"], "is_subagent": bool(p["is_subagent"]), "first_seen": p["first_seen"],
                "last_seen": p["last_seen"]}

    @staticmethod
    def _update_session(m: Models, row: Any, transcript: str | None, project: str | None, model: str | None,
                        is_subagent: bool | None, first_seen: str, last_seen: str) -> None:
        changes: dict[str, Any] = {}
        for name, value in (("transcript", transcript), ("project", project), ("model", model),
                            ("is_subagent", is_subagent)):
            if value is not None:
                changes[name] = value
        if first_seen and (not row.first_seen or first_seen < row.first_seen):
            changes["first_seen"] = first_seen
        if last_seen and (not row.last_seen or last_seen > row.last_seen):
            changes["last_seen"] = last_seen
        if changes:
            m.Session.update(**changes).where(m.Session.session_id == row.session_id).execute()

    def session(self, session_id: str) -> Row | None:
        def q(m: Models) -> Row | None:
            row = m.Session.get_or_none(m.Session.session_id == str(session_id))
            return None if row is None else {
                "session_id": row.session_id, "transcript": row.transcript, "project": row.project,
                "first_seen": row.first_seen, "last_seen": row.last_seen, "model": row.model,
                "lineage_id": row.lineage_id, "is_subagent": bool(row.is_subagent)}
        return self._writer.read(q, None)

    # ------------------------------------------------------------------ segment profiles

    _PROFILE_FIELDS = ("session_id", "segment", "started_at", "ended_at", "end_reason", "model", "calls",
                       "turns", "B", "L_peak", "g", "br", "mf", "bill_in_usd", "bill_out_usd", "rent_usd",
                       "laps", "duration_s", "path_totals", "models", "restart_savings")

    def archive_profile(self, profile: Row) -> None:
        """Store a segment profile (docs/measurement.md section 10); the same (session, segment) is replaced."""
        try:
            row: Row = {k: profile.get(k) for k in self._PROFILE_FIELDS if k in profile}
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
            row["models"] = [{"model": str(u["model"]), "calls": int(u["calls"]),
                              "bill_in_usd": float(u["bill_in_usd"]), "bill_out_usd": float(u["bill_out_usd"])}
                             for u in profile_models(profile)]
            figures = RestartFigures.from_dict(profile.get("restart_savings"))
            row["restart_savings"] = figures.as_dict() if figures is not None else None
        except Exception as exc:
            log.error("archive_profile ignored a malformed profile: %s", exc)
            return
        self._writer.submit([QueuedWrite("profile", {"row": row}, (row["session_id"], row["segment"]))])

    def _w_profile(self, m: Models, row: Row) -> None:
        self._profile_insert(m, dict(row, archived_at=utc_iso())).execute()

    def _w_profiles(self, m: Models, payloads: list[Payload]) -> None:
        rows = {(p["row"]["session_id"], p["row"]["segment"]): p["row"] for p in payloads}  # the last one wins
        insert_rows(lambda row: self._profile_insert(m, row), [dict(row, archived_at=utc_iso()) for row in rows.values()])

    @staticmethod
    def _profile_insert(m: Models, row: Row) -> Any:  # a peewee ModelInsert
        P = m.SegmentProfile
        fields = [getattr(P, k) for k in row if k not in ("session_id", "segment")]
        return P.insert(row).on_conflict(conflict_target=[P.session_id, P.segment], preserve=fields)

    def segment_keys(self, session_ids: list[str]) -> set[tuple[str, int]]:
        """(session id, segment) of every archived profile of these sessions (one query per thousand)."""
        def q(m: Models) -> set[tuple[str, int]]:
            P = m.SegmentProfile
            keys: set[tuple[str, int]] = set()
            for part in id_runs(str(sid) for sid in session_ids):
                keys.update(P.select(P.session_id, P.segment).where(P.session_id.in_(part)).tuples())
            return keys
        return self._writer.read(q, set())

    def segments(self, session_id: str | None = None, limit: int = 100) -> list[Row]:
        """Archived profiles, newest first."""
        def q(m: Models) -> list[Row]:
            P = m.SegmentProfile
            query = P.select()
            if session_id is not None:
                query = query.where(P.session_id == str(session_id))
            query = query.order_by(*_newest_first(P))
            out: list[Row] = []
            for r in query.limit(max(1, int(limit))):
                d = {k: getattr(r, k) for k in self._PROFILE_FIELDS}
                d["path_totals"] = d["path_totals"] or {}
                d["models"] = profile_models(d)  # rows from before 0003: their one model
                d["archived_at"] = r.archived_at
                out.append(d)
            projects: dict[str, str | None] = {}  # a stretch is shown by its session's folder, not its id
            S = m.Session
            for run in id_runs(d["session_id"] for d in out):
                projects.update((row.session_id, row.project)
                                for row in S.select(S.session_id, S.project).where(S.session_id.in_(run)))
            for d in out:
                d["project"] = projects.get(d["session_id"])
            return out
        return self._writer.read(q, [])

    def restart_figures(self, limit: int = 500) -> list[Row]:
        """The `restart_savings` of the newest archived profiles (segments' order), only that column:
        the reminder popup's usual run, read again after each archived profile."""
        def q(m: Models) -> list[Row]:
            P = m.SegmentProfile
            query = P.select(P.restart_savings).order_by(*_newest_first(P)).limit(max(1, int(limit)))
            return [{"restart_savings": r.restart_savings} for r in query]
        return self._writer.read(q, [])

    # ------------------------------------------------------------------ reminders

    def _known_reminder_set(self, session_id: str) -> set[tuple[int, int]]:
        seen = self._reminders_seen.setdefault(session_id, set())
        if session_id not in self._reminders_loaded:
            rows = self._writer.read(lambda m: [(r.segment, r.lap) for r in
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
        with self._writer.lock:
            seen = self._known_reminder_set(sid)
            if key in seen:
                return False
            seen.add(key)
            result = self._writer.submit([QueuedWrite("reminder", payload)])
        return True if result is None else bool(result[0])

    def _w_reminder(self, m: Models, session_id: str, segment: int, lap: int, call: int, at: str) -> bool:
        R = m.Reminder
        exists = R.select().where((R.session_id == session_id) & (R.segment == segment) & (R.lap == lap)).exists()
        if exists:
            return False
        R.insert(session_id=session_id, segment=segment, lap=lap, call=call, at=at).on_conflict_ignore().execute()
        return True

    def known_reminders(self, session_id: str) -> set[tuple[int, int]]:
        """(segment, lap) of every reminder recorded for the session (queued ones included)."""
        with self._writer.lock:
            self._reminders_loaded.discard(str(session_id))  # re-read: another writer may have added
            return set(self._known_reminder_set(str(session_id)))

    def reminders(self, session_id: str | None = None, since: Any = None) -> list[Row]:
        """Recorded reminders, oldest first; `since` compares their `at` time."""
        def q(m: Models) -> list[Row]:
            R = m.Reminder
            query = R.select()
            if session_id is not None:
                query = query.where(R.session_id == str(session_id))
            if since is not None:
                query = query.where(R.at >= utc_iso(since))
            return [{"session_id": r.session_id, "segment": r.segment, "lap": r.lap, "call": r.call, "at": r.at}
                    for r in query.order_by(R.at, R.id)]
        return self._writer.read(q, [])
