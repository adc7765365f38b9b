"""Handoffs (a task carried to a new session by token) and the lineage they start."""
from __future__ import annotations

import re
import secrets
from typing import Any, Iterable

from service.store.common import (Models, Operation, Row, cut_text, norm_project, QueuedWrite, path_list, session_lineage,
                                  spread, utc_iso)
from service.store.writer import Writer

TASK_MAX = 500             # the handoff's task preview
BODY_MAX = 100_000         # a handoff body larger than this is cut
TOKEN_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"  # no 0/o, 1/l/i: tokens are read aloud and retyped
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Handoffs:
    """The store's part for handoffs and the lineage they start."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        writer.register({
            "handoff_save": Operation(spread(self._w_handoff_save)),
            "handoff_load": Operation(spread(self._w_handoff_load)),
        })

    # ------------------------------------------------------------------ handoffs and lineage

    @staticmethod
    def _handoff_dict(h: Any) -> Row:
        return {"token": h.token, "task": h.task, "body": h.body, "paths": h.paths or [], "project": h.project,
                "created_at": h.created_at, "delivered_at": h.delivered_at, "from_session": h.from_session,
                "delivered_to_session": h.delivered_to_session, "lineage_id": h.lineage_id}

    def _token_taken(self, token: str) -> bool:
        if any(p["row"]["token"] == token for p in self._writer.pending_payloads("handoff_save")):
            return True
        return bool(self._writer.read(lambda m: m.Handoff.select().where(m.Handoff.token == token).exists(), False))

    def _new_token(self) -> str:
        for _ in range(8):
            token = "h-" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(6))
            if not self._token_taken(token):
                return token
        return "h-" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(10))

    def save_handoff(self, task: str, body: str, paths: Iterable[str] | None, project: str | None,
                     from_session: str | None = None) -> Row:
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
            lineage = self._writer.read(lambda m: session_lineage(m, from_sid), None)
            if lineage is None:
                mine = [p["row"]["lineage_id"] for p in self._writer.pending_payloads("handoff_save")
                        if p["row"]["from_session"] == from_sid]
                lineage = mine[-1] if mine else None
        row = {
            "token": self._new_token(), "task": cut_text(task_text, TASK_MAX), "body": cut_text(body_text, BODY_MAX),
            "paths": path_list(paths), "project": norm_project(project), "created_at": utc_iso(),
            "delivered_at": None, "from_session": from_sid, "delivered_to_session": None,
            "lineage_id": lineage or ("l-" + secrets.token_hex(6)),
        }
        result = self._writer.submit([QueuedWrite("handoff_save", {"row": row})])
        return dict(row, stored=result is not None)

    def _w_handoff_save(self, m: Models, row: Row) -> bool:
        m.Lineage.insert(id=row["lineage_id"], created_at=row["created_at"]).on_conflict_ignore().execute()
        m.Handoff.insert(**row).execute()
        if row["from_session"]:
            T = m.TurnRecord
            (T.update(lineage_id=row["lineage_id"])
             .where((T.session_id == row["from_session"]) & T.lineage_id.is_null()).execute())
        return True

    def _matches_project(self, value: str | None, project: str | None) -> bool:
        return project is None or value == norm_project(project)

    def recent(self, project: str | None = None, undelivered: bool = False, limit: int = 50) -> list[Row]:
        """Handoffs newest first (queued ones included), optionally one project's and undelivered only."""
        limit = max(1, int(limit))

        def q(m: Models) -> list[Row]:
            H = m.Handoff
            query = H.select()
            if project is not None:
                query = query.where(H.project == norm_project(project))
            if undelivered:
                query = query.where(H.delivered_at.is_null())
            return [self._handoff_dict(h) for h in query.order_by(H.created_at.desc(), H.id.desc()).limit(limit)]

        found = self._writer.read(q, [])
        loaded = {p["token"] for p in self._writer.pending_payloads("handoff_load")}
        queued = [dict(p["row"]) for p in self._writer.pending_payloads("handoff_save")
                  if self._matches_project(p["row"]["project"], project)
                  and not (undelivered and p["row"]["token"] in loaded)]
        tokens = {h["token"] for h in found}
        merged = [h for h in queued if h["token"] not in tokens] + found
        if undelivered:
            merged = [h for h in merged if h["delivered_at"] is None and h["token"] not in loaded]
        merged.sort(key=lambda h: h["created_at"] or "", reverse=True)
        return merged[:limit]

    def undelivered_handoffs(self, project: str | None, limit: int = 3) -> list[Row]:
        """What the SessionStart hook offers: the project's handoffs not yet loaded, newest first."""
        return self.recent(project=project, undelivered=True, limit=limit)

    def _find_handoff(self, token: str) -> Row | None:
        for p in self._writer.pending_payloads("handoff_save"):
            if p["row"]["token"] == token:
                return dict(p["row"])
        return self._writer.read(lambda m: (lambda h: None if h is None else self._handoff_dict(h))(
            m.Handoff.get_or_none(m.Handoff.token == token)), None)

    def load_handoff(self, token: str, session_id: str) -> Row | None:
        """Deliver a handoff into `session_id` and link that session into its lineage.

        Returns the handoff (`stored` False while the delivery is queued), or None
        when the token is malformed or unknown. The first delivery's time and
        session are kept; a later load still links its session into the lineage.
        """
        token = str(token or "").strip()
        if not TOKEN_RE.match(token) or not session_id:
            return None
        sid, at = str(session_id), utc_iso()
        result = self._writer.submit([QueuedWrite("handoff_load", {"token": token, "session_id": sid, "at": at})])
        if result is not None:
            landed = result[0]  # the handoff, or None for an unknown token
            return dict(landed, stored=True) if isinstance(landed, dict) else None
        h = self._find_handoff(token)
        if h is None:
            return None
        if h["delivered_at"] is None:
            h.update(delivered_at=at, delivered_to_session=sid)
        return dict(h, stored=False)

    def _w_handoff_load(self, m: Models, token: str, session_id: str, at: str) -> Row | None:
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
        loads = [p for p in self._writer.pending_payloads("handoff_load") if p["session_id"] == sid]
        if loads:
            h = self._find_handoff(loads[-1]["token"])
            if h is not None:
                return None if h["lineage_id"] is None else str(h["lineage_id"])
        return self._writer.read(lambda m: (lambda r: r.lineage_id if r is not None else None)(
            m.Session.get_or_none(m.Session.session_id == sid)), None)
