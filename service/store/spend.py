"""Spend per day, session and model, and the scan progress that produced it (one batch)."""
from __future__ import annotations

from typing import Any

import peewee as pw

from service.store.common import (Models, Operation, Payload, Row, day_text, norm_project, QueuedWrite, insert_rows, log,
                                  newest, spread)
from service.store.writer import Writer

_TOKEN_COLUMNS = {
    "in": "tok_in", "input": "tok_in", "input_tokens": "tok_in",
    "cw5": "tok_cw5", "cache_write_5m": "tok_cw5", "ephemeral_5m_input_tokens": "tok_cw5",
    "cw1h": "tok_cw1h", "cache_write_1h": "tok_cw1h", "ephemeral_1h_input_tokens": "tok_cw1h",
    "cr": "tok_cr", "cache_read": "tok_cr", "cache_read_input_tokens": "tok_cr",
    "out": "tok_out", "output": "tok_out", "output_tokens": "tok_out",
}
_SPEND_COLUMNS = ("tok_in", "tok_cw5", "tok_cw1h", "tok_cr", "tok_out")


def _merge_spend(old: Payload, new: Payload) -> Payload:
    out = dict(old)
    out["tokens"] = {c: old["tokens"].get(c, 0) + new["tokens"].get(c, 0) for c in _SPEND_COLUMNS}
    out["usd"] = old["usd"] + new["usd"]
    if new.get("project"):
        out["project"] = new["project"]
    return out


class Spend:
    """The store's part for spend rows and the history scan's progress (written in one batch)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        writer.register({
            "spend": Operation(spread(self._w_spend), _merge_spend),
            "scan": Operation(spread(self._w_scan), newest, self._w_scans),
        })

    # ------------------------------------------------------------------ spend

    def add_spend(self, day: Any, session_id: str, model: str, project: str | None, is_subagent: bool,
                  tokens: dict[str, Any], usd: float) -> None:
        """Add tokens (keys in/cw5/cw1h/cr/out, or their long names) and USD to a day's row."""
        try:
            cols = {c: 0 for c in _SPEND_COLUMNS}
            for name, value in (tokens or {}).items():
                column = _TOKEN_COLUMNS.get(str(name))
                if column is not None and value:
                    cols[column] += int(value)
            payload = {"day": day_text(day), "session_id": str(session_id), "model": str(model or "unknown"),
                       "project": norm_project(project), "is_subagent": bool(is_subagent),
                       "tokens": cols, "usd": float(usd or 0.0)}
        except Exception as exc:
            log.error("add_spend ignored bad input: %s", exc)
            return
        key = (payload["day"], payload["session_id"], payload["model"], payload["is_subagent"])
        self._writer.submit([QueuedWrite("spend", payload, key)])

    def _w_spend(self, m: Models, day: str, session_id: str, model: str, project: str | None, is_subagent: bool,
                 tokens: dict[str, int], usd: float) -> None:
        S = m.DailySpend
        update = {getattr(S, c): getattr(S, c) + getattr(pw.EXCLUDED, c) for c in _SPEND_COLUMNS}
        update[S.usd] = S.usd + pw.EXCLUDED.usd
        update[S.project] = pw.fn.COALESCE(pw.EXCLUDED.project, S.project)
        (S.insert(day=day, session_id=session_id, model=model, project=project, is_subagent=is_subagent,
                  usd=usd, **tokens)
         .on_conflict(conflict_target=[S.day, S.session_id, S.model, S.is_subagent], update=update)
         .execute())

    def spend_rows(self, since: Any = None, until: Any = None) -> list[Row]:
        """Daily spend rows with `since <= day <= until` (days as YYYY-MM-DD)."""
        def q(m: Models) -> list[Row]:
            S = m.DailySpend
            query = S.select()
            if since is not None:
                query = query.where(S.day >= day_text(since))
            if until is not None:
                query = query.where(S.day <= day_text(until))
            return [{"day": r.day, "session_id": r.session_id, "model": r.model, "project": r.project,
                     "is_subagent": bool(r.is_subagent), "usd": r.usd,
                     "tokens": {"in": r.tok_in, "cw5": r.tok_cw5, "cw1h": r.tok_cw1h, "cr": r.tok_cr,
                                "out": r.tok_out}}
                    for r in query.order_by(S.day, S.session_id, S.model, S.is_subagent)]
        return self._writer.read(q, [])

    # ------------------------------------------------------------------ scan state

    @staticmethod
    def _scan_dict(r: Any) -> Row:
        return {"path": r.path, "inode": r.inode, "size": r.size, "mtime": r.mtime, "offset": r.offset}

    def get_scan_state(self, path: str) -> Row | None:
        """Where the history scan stopped in `path` (queued progress included), or None."""
        key = str(path)
        queued = [p for p in self._writer.pending_payloads("scan") if p["path"] == key]
        if queued:
            return dict(queued[-1])
        return self._writer.read(lambda m: (lambda r: None if r is None else self._scan_dict(r))(
            m.ScanState.get_or_none(m.ScanState.path == key)), None)

    def scan_states(self) -> dict[str, Row]:
        found = self._writer.read(lambda m: {r.path: self._scan_dict(r) for r in m.ScanState.select()}, {})
        for p in self._writer.pending_payloads("scan"):
            found[p["path"]] = dict(p)
        return found

    def set_scan_state(self, path: str, *, inode: int | None, size: int, mtime: float | None, offset: int) -> None:
        try:
            payload = {"path": str(path), "inode": None if inode is None else int(inode), "size": int(size),
                       "mtime": None if mtime is None else float(mtime), "offset": int(offset)}
        except Exception as exc:
            log.error("set_scan_state ignored bad input: %s", exc)
            return
        self._writer.submit([QueuedWrite("scan", payload, (payload["path"],))])

    def _w_scan(self, m: Models, path: str, inode: int | None, size: int, mtime: float | None, offset: int) -> None:
        self._scan_insert(m, {"path": path, "inode": inode, "size": size, "mtime": mtime, "offset": offset}).execute()

    def _w_scans(self, m: Models, payloads: list[Payload]) -> None:
        newest_states = {p["path"]: p for p in payloads}  # a path's last state wins, as one by one
        insert_rows(lambda state: self._scan_insert(m, state), list(newest_states.values()))

    @staticmethod
    def _scan_insert(m: Models, state: Payload) -> Any:  # a peewee ModelInsert
        S = m.ScanState
        return S.insert(state).on_conflict(conflict_target=[S.path], preserve=[S.inode, S.size, S.mtime, S.offset])
