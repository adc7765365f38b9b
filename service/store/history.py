"""Turn records and the history search over them (pages, words, paths) for the MCP tools."""
from __future__ import annotations

import json
import math
import re
import sqlite3
from typing import Any, Iterable

import peewee as pw

import models

from service.store.common import (Models, Operation, Payload, Row, cut_text, QueuedWrite, insert_rows, path_list, log,
                                  session_lineages, spread, utc_iso)
from service.store.writer import Writer, fault_kind

PROMPT_PREVIEW_MAX = 500   # characters of a prompt kept for history search
MAX_SEARCH_WORDS = 16
MAX_PAGE_SIZE = 100


def _fts_query(words: list[str]) -> str:
    """Each word becomes a quoted FTS5 string (prefix-matched), ANDed: the caller's text is never syntax."""
    return " AND ".join('"' + w.replace('"', '""') + '"*' for w in words)


def _search_words(query: Any) -> list[str]:
    words = []
    for word in str(query or "").split():
        word = "".join(ch for ch in word if ch.isprintable())  # NUL and controls would cut the query short
        if any(ch.isalnum() for ch in word) and word not in words:
            words.append(word[:64])
        if len(words) >= MAX_SEARCH_WORDS:
            break
    return words


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like(column: Any, pattern: str, *, ilike: bool = False) -> pw.Expression:
    """`column LIKE pattern ESCAPE '\\'` with the pattern passed as is (not through the JSON field's encoder)."""
    value = pw.NodeList((pw.Value(pattern, converter=False), pw.SQL("ESCAPE '\\'")))
    # Lower-case operators on purpose: peewee rewrites "LIKE" to GLOB on SQLite.
    return pw.Expression(column, "ilike" if ilike else "like", value)


def _slash(path: str) -> str:
    return path.replace("\\", "/")


def _path_matches(stored: str, wanted: str) -> bool:
    """`wanted` is the stored path, or (relative) a run of its trailing or inner components.

    An absolute `wanted` matches itself and anything below it; a relative one
    (`store.py`, `service/store.py`, `service`) matches where its components
    appear whole in the stored path.
    """
    s = _slash(stored)
    w = _slash(wanted).rstrip("/")
    while w.startswith("./"):
        w = w[2:]
    if not w:
        return False
    if w.startswith("/") or re.match(r"^[A-Za-z]:/", w):
        return s == w or s.startswith(w + "/")
    return ("/" + w + "/") in ("/" + s.strip("/") + "/")


def _merge_turns(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Two queued batches of turns as one, each turn's newest row kept (a long outage queues each
    turn once, as single upserts do)."""
    rows = {(r["session_id"], r["segment"], r["turn_index"]): r for r in (*old["rows"], *new["rows"])}
    return {"rows": list(rows.values())}


class History:
    """The store's part for turn records and the history page, search and locate the MCP tools read."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        writer.register({
            "turns": Operation(spread(self._w_turns), _merge_turns, self._w_turns_many),
            "forget_prompts": Operation(spread(self._w_forget_prompts)),
        })

    # ------------------------------------------------------------------ turn records

    def add_turn_record(self, session_id: str, segment: int, turn: int, at: Any, *,
                        prompt_preview: str | None = None, paths_read: Iterable[str] = (),
                        paths_changed: Iterable[str] = (), tokens: int = 0, cost_usd: float = 0.0,
                        lineage_id: str | None = None) -> None:
        """Record (or replace) one turn; its lineage is the session's when not given.

        With `store_prompts=False` no prompt text is stored at all.
        """
        payload = self._turn_payload(session_id, segment, turn, at, prompt_preview=prompt_preview,
                                     paths_read=paths_read, paths_changed=paths_changed, tokens=tokens,
                                     cost_usd=cost_usd, lineage_id=lineage_id)
        if payload is not None:
            self._submit_turns([payload])

    def add_turn_records(self, turns: Iterable[dict[str, Any]]) -> None:
        """Record (or replace) several turns in one transaction: each a dict of add_turn_record's
        arguments by name (a reader writes the turns of a whole piece of transcript at once)."""
        rows = [p for p in (self._turn_payload(**t) for t in turns) if p is not None]
        if rows:
            self._submit_turns(rows)

    def _submit_turns(self, rows: list[dict[str, Any]]) -> None:
        self._writer.submit([QueuedWrite("turns", {"rows": rows}, ("queued",))])  # one key: queued batches merge

    def _turn_payload(self, session_id: str, segment: int, turn: int, at: Any, *,
                      prompt_preview: str | None = None, paths_read: Iterable[str] = (),
                      paths_changed: Iterable[str] = (), tokens: int = 0, cost_usd: float = 0.0,
                      lineage_id: str | None = None) -> dict[str, Any] | None:
        """One turn's row, checked; None (logged) for input that does not fit it."""
        try:
            return {
                "session_id": str(session_id), "segment": int(segment), "turn_index": int(turn),
                "at": utc_iso(at) if at is not None else None,
                "prompt_preview": cut_text(prompt_preview, PROMPT_PREVIEW_MAX) if self._writer.store_prompts else None,
                "paths_read": path_list(paths_read), "paths_changed": path_list(paths_changed),
                "tokens": int(tokens or 0), "cost_usd": float(cost_usd or 0.0), "lineage_id": lineage_id,
            }
        except Exception as exc:
            log.error("add_turn_record ignored bad input: %s", exc)
            return None

    def _w_turns(self, m: Models, rows: list[dict[str, Any]]) -> None:
        """Upsert the rows (the last of equal keys wins), the sessions' lineages looked up together."""
        T = m.TurnRecord
        lineages = session_lineages(m, (row["session_id"] for row in rows if not row["lineage_id"]))
        newest_rows: dict[tuple[str, int, int], dict[str, Any]] = {}
        for row in rows:
            sid = row["session_id"]
            if not row["lineage_id"]:
                row = {**row, "lineage_id": lineages[sid]}
            newest_rows[(sid, row["segment"], row["turn_index"])] = row
        insert_rows(lambda row: T.insert(row).on_conflict(
            conflict_target=[T.session_id, T.segment, T.turn_index],
            preserve=[T.at, T.prompt_preview, T.paths_read, T.paths_changed, T.tokens, T.cost_usd],
            update={T.lineage_id: pw.fn.COALESCE(pw.EXCLUDED.lineage_id, T.lineage_id)}), list(newest_rows.values()))

    def _w_turns_many(self, m: Models, payloads: list[Payload]) -> None:
        self._w_turns(m, [row for payload in payloads for row in payload["rows"]])

    def forget_prompts(self) -> None:
        """Erase every stored prompt preview (for when the user turns `history.store_prompts` off)."""
        self._writer.submit([QueuedWrite("forget_prompts", {})])

    def _w_forget_prompts(self, m: Models) -> None:
        m.TurnRecord.update(prompt_preview=None).where(m.TurnRecord.prompt_preview.is_null(False)).execute()

    # ------------------------------------------------------------------ history (the MCP tools' data)

    @staticmethod
    def _turn_dict(t: Any) -> Row:
        return {"session_id": t.session_id, "segment": t.segment, "turn": t.turn_index, "at": t.at,
                "prompt_preview": t.prompt_preview, "paths_read": t.paths_read or [],
                "paths_changed": t.paths_changed or [], "tokens": t.tokens, "cost_usd": t.cost_usd,
                "lineage_id": t.lineage_id}

    @staticmethod
    def _lineage_order(T: Any) -> tuple[Any, ...]:
        return (pw.fn.COALESCE(T.at, ""), T.session_id, T.segment, T.turn_index)

    def _positions(self, m: Models, lineage_id: str) -> dict[int, int]:
        """Row id -> 1-based position in the lineage's deterministic order."""
        T = m.TurnRecord
        ids = T.select(T.id).where(T.lineage_id == lineage_id).order_by(*self._lineage_order(T)).tuples()
        return {row_id: i for i, (row_id,) in enumerate(ids, start=1)}

    @staticmethod
    def _page_size(page_size: Any) -> int:
        return min(MAX_PAGE_SIZE, max(1, int(page_size)))

    def history_page(self, lineage_id: str, page: int, page_size: int = 10) -> Row:
        """Page `page` (1-based, oldest turns first) of the lineage's turn records.

        Oldest first keeps every full page stable as the lineage grows.
        """
        size = self._page_size(page_size)
        page = max(1, int(page or 1))
        empty: Row = {"lineage_id": lineage_id, "page": page, "page_size": size, "pages": 0, "total": 0, "turns": []}

        def q(m: Models) -> Row:
            T = m.TurnRecord
            where = T.lineage_id == str(lineage_id)
            total = T.select().where(where).count()
            rows = (T.select().where(where).order_by(*self._lineage_order(T))
                    .offset((page - 1) * size).limit(size))
            turns = []
            for i, t in enumerate(rows, start=(page - 1) * size + 1):
                turns.append(dict(self._turn_dict(t), position=i, page=page))
            return dict(empty, total=total, pages=math.ceil(total / size), turns=turns)

        return self._writer.read(q, empty) if lineage_id else empty

    def history_search(self, lineage_id: str, query: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[Row], int]:
        """Turns of the lineage matching every word of `query` (prefix match), best first.

        Returns (hits, total matches); each hit names its `page` for history_page.
        The caller's words are quoted one by one, so no input is read as FTS syntax.
        On PostgreSQL (or SQLite without FTS5) each word is matched with (I)LIKE.
        """
        words = _search_words(query)
        if not lineage_id or not words:
            return [], 0
        size, limit = self._page_size(page_size), max(1, int(limit))

        def q(m: Models) -> tuple[list[Row], int]:
            T = m.TurnRecord
            db = self._writer.db
            assert db is not None  # the read path opened it before calling q
            order: list[tuple[int, str | None]] | None = None
            if self._writer.fts:
                sql = (f"SELECT t.id, snippet({models.TURN_FTS_TABLE}, -1, '[', ']', '…', 12) "
                       f"FROM {models.TURN_FTS_TABLE} JOIN turn_record t ON t.id = {models.TURN_FTS_TABLE}.rowid "
                       f"WHERE {models.TURN_FTS_TABLE} MATCH ? AND t.lineage_id = ? "
                       f"ORDER BY bm25({models.TURN_FTS_TABLE}), t.at, t.id")
                try:
                    order = [(r[0], r[1]) for r in db.execute_sql(sql, (_fts_query(words), str(lineage_id)))]  # type: ignore[no-untyped-call]  # peewee has no annotations
                except (pw.OperationalError, sqlite3.OperationalError) as exc:
                    if fault_kind(exc) != "other":
                        raise  # the database itself is failing
                    log.warning("full-text query %r was refused (%s); searching without the index", words, exc)
            if order is None:
                # No FTS5 (PostgreSQL, or an SQLite built without it): every word as a substring.
                cond = T.lineage_id == str(lineage_id)
                ilike = not models.is_sqlite(db)
                for w in words:
                    pattern = "%" + _like_escape(w) + "%"
                    cond &= (_like(T.prompt_preview, pattern, ilike=ilike) | _like(T.paths_read, pattern, ilike=ilike)
                             | _like(T.paths_changed, pattern, ilike=ilike))
                order = [(t.id, None) for t in T.select(T.id).where(cond).order_by(*self._lineage_order(T))]
            total = len(order)
            chosen = order[:limit]
            rows = {t.id: t for t in T.select().where(T.id.in_([i for i, _ in chosen]))} if chosen else {}
            positions = self._positions(m, str(lineage_id)) if chosen else {}
            hits = []
            for row_id, snippet in chosen:
                pos = positions.get(row_id, 1)
                hits.append(dict(self._turn_dict(rows[row_id]), snippet=snippet, position=pos,
                                 page=(pos - 1) // size + 1))
            return hits, total

        return self._writer.read(q, ([], 0))

    def history_locate(self, lineage_id: str, path: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[Row], int]:
        """Turns of the lineage that read or changed `path`, oldest first: (hits, total).

        `path` may be absolute (that file, or anything under that folder) or a
        remembered tail such as `store.py` or `service/store.py`.
        """
        wanted = _slash(str(path or "").strip().strip("'\"")).rstrip("/")
        while wanted.startswith("./"):
            wanted = wanted[2:]
        if not lineage_id or not wanted:
            return [], 0
        size, limit = self._page_size(page_size), max(1, int(limit))
        tail = wanted.rsplit("/", 1)[-1]
        needle = json.dumps(tail, ensure_ascii=False)[1:-1]  # how the tail appears inside the stored JSON

        def q(m: Models) -> tuple[list[Row], int]:
            T = m.TurnRecord
            pattern = "%" + _like_escape(needle) + "%"
            cond = (T.lineage_id == str(lineage_id)) & (_like(T.paths_read, pattern) | _like(T.paths_changed, pattern))
            matches = []
            for t in T.select().where(cond).order_by(*self._lineage_order(T)):
                read = [p for p in (t.paths_read or []) if _path_matches(p, wanted)]
                changed = [p for p in (t.paths_changed or []) if _path_matches(p, wanted)]
                if read or changed:
                    matches.append((t, read, changed))
            positions = self._positions(m, str(lineage_id)) if matches else {}
            hits = []
            for t, read, changed in matches[:limit]:
                pos = positions.get(t.id, 1)
                hits.append(dict(self._turn_dict(t), matched_read=read, matched_changed=changed,
                                 position=pos, page=(pos - 1) // size + 1))
            return hits, len(matches)

        return self._writer.read(q, ([], 0))
