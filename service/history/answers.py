"""The history answers behind GET /api/v1/history/{page,search,locate}.

The caller names only its session: the lineage is the one of the handoff
delivered into that session (Store.lineage_of), never a guess, and a session
that loaded nothing is told so. Paging is deterministic (oldest turn first,
fixed page size). Every search or locate answer carries `next`: which page to
open for a hit, how many matches were left out and how to narrow them, or which
tool to try on a miss. A page simply arrives.

`reads` is a `HistoryReads`: the Store itself, or the service's persistence (where
a failing database raises Unavailable, a 503).
"""
from __future__ import annotations

from typing import Any, Protocol

from service.client.textsafe import printable

PAGE_SIZE = 10
SHOWN = 10
# A turn as answered: transcripts are outside text (a path or a prompt may carry ESC, BEL or OSC
# sequences) and a turn may have read thousands of files, so every text is filtered and cut and
# each list of paths is cut, the rest counted; a page then stays a few hundred kB at most.
MAX_PAGE = 1_000_000  # beyond any lineage; a bigger number overflowed the database's offset
PATHS_SHOWN = 20
PATH_CHARS = 300
TEXT_CHARS = 500
_TEXTS = ("session_id", "at", "lineage_id", "prompt_preview", "snippet")


class HistoryReads(Protocol):
    """The store's history reads (service/store/history.py and handoffs.py)."""

    def lineage_of(self, session_id: str) -> str | None: ...

    def history_page(self, lineage_id: str, page: int, page_size: int = 10) -> dict[str, Any]: ...

    def history_search(self, lineage_id: str, query: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[dict[str, Any]], int]: ...

    def history_locate(self, lineage_id: str, path: str, limit: int = 10, *,
                       page_size: int = 10) -> tuple[list[dict[str, Any]], int]: ...

NO_LINEAGE = ("This session has not loaded a handoff, so it has no earlier sessions to look through. "
              "Load one with handoff_load(token) (the token is in the reminder at the start of the session, "
              "`load token: ...`), then ask again.")


def _lineage(reads: HistoryReads, session_id: str) -> str | None:
    return reads.lineage_of(session_id)


def shown_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn record as an answer carries it: texts filtered and cut, paths filtered, at most PATHS_SHOWN
    of each list (`paths_read_more` / `paths_changed_more` count the rest)."""
    out = dict(turn)
    for key in _TEXTS:
        if out.get(key) is not None:
            out[key] = printable(out[key], TEXT_CHARS)
    for key in ("paths_read", "paths_changed"):
        paths = out.get(key) or []
        out[key] = [printable(p, PATH_CHARS) for p in paths[:PATHS_SHOWN]]
        if len(paths) > PATHS_SHOWN:
            out[f"{key}_more"] = len(paths) - PATHS_SHOWN
    return out


def _no_lineage(**extra: Any) -> dict:
    return {"lineage_id": None, "loaded": False, "message": NO_LINEAGE, "next": NO_LINEAGE, **extra}


def page(reads: HistoryReads, session_id: str, page_no: int) -> dict:
    page_no = max(1, min(int(page_no), MAX_PAGE))
    lineage = _lineage(reads, session_id)
    if not lineage:
        return _no_lineage(page=page_no, turns=[])
    answer = dict(reads.history_page(lineage, page_no, PAGE_SIZE))
    answer["turns"] = [shown_turn(t) for t in answer.get("turns") or []]
    answer["loaded"] = True
    pages = answer.get("pages") or 0
    if not answer.get("turns"):
        answer["message"] = ("The sessions of this lineage have no recorded turns yet."
                             if not pages else f"There is no page {page_no}: the history has {pages} page(s).")
    return answer


def _pages_of(hits: list[dict]) -> list[int]:
    return sorted({int(h["page"]) for h in hits if h.get("page") is not None})


def _follow(hits: list[dict]) -> str:
    pages = _pages_of(hits)
    if len(pages) == 1:
        return f"Open history_page({pages[0]}) to read the turn{'s' if len(hits) > 1 else ''} around it."
    return "Open the page of a hit with history_page(page): pages " + ", ".join(map(str, pages)) + "."


class _Find(Protocol):
    def __call__(self, lineage_id: str, text: str, limit: int = 10, /, *,
                 page_size: int = 10) -> tuple[list[dict[str, Any]], int]: ...


def _lookup(reads: HistoryReads, session_id: str, find: _Find, field: str, value: str, on_miss: str,
            on_more: str) -> dict:
    """A search or locate answer: the hits, and what to do next (follow, narrow, or switch tools)."""
    lineage = _lineage(reads, session_id)
    if not lineage:
        return _no_lineage(**{field: value}, hits=[], total=0)
    hits, total = find(lineage, value, SHOWN, page_size=PAGE_SIZE)
    hits, total = [shown_turn(h) for h in hits], int(total)
    more = max(0, total - len(hits))
    if total == 0:
        nxt = on_miss
    elif more:
        nxt = on_more.format(more=more) + " " + _follow(hits)
    else:
        nxt = _follow(hits)
    return {"lineage_id": lineage, "loaded": True, field: printable(value, TEXT_CHARS), "total": total, "shown": len(hits),
            "more": more, "truncated": more > 0, "hits": hits, "next": nxt}


def search(reads: HistoryReads, session_id: str, query: str) -> dict:
    return _lookup(reads, session_id, reads.history_search, "query", query,
                   f"No turn of this lineage mentions {query!r}. Try other or fewer words; if you remember a file, "
                   "use history_locate(path); to browse, history_page(1).",
                   "{more} more match(es) not shown: add words to narrow the search.")


def locate(reads: HistoryReads, session_id: str, path: str) -> dict:
    return _lookup(reads, session_id, reads.history_locate, "path", path,
                   f"No turn of this lineage read or changed {path!r}. Try a shorter part of the path (the file name), "
                   "or history_search(words) if you remember what was said; to browse, history_page(1).",
                   "{more} more turn(s) touched it and are not shown: give a longer part of the path to narrow.")
