"""What every part of the store shares: times and days as stored, small text helpers, the queued write."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any, Iterable

log = logging.getLogger("ctxlamp.store")


def utc_iso(value: Any = None) -> str | None:
    """ISO-8601 UTC with milliseconds and `Z` (the transcripts' format), so times sort as text.

    Accepts a datetime (naive means UTC), epoch seconds, or an ISO string; text
    that does not parse is kept as given. None means now.
    """
    if value is None:
        dt = datetime.now(timezone.utc)
    elif isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        dt = datetime.fromtimestamp(float(value), timezone.utc)
    else:
        text = str(value).strip()
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            return text
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _day(value: Any) -> str:
    if isinstance(value, datetime):
        return utc_iso(value)[:10]
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    date.fromisoformat(text[:10])  # ValueError for junk: the caller gets a dropped write, logged
    return text[:10]


def _norm_project(project: Any) -> str | None:
    if project is None or str(project).strip() == "":
        return None
    return os.path.normpath(str(project))


def _path_list(paths: Iterable[Any] | None) -> list[str]:
    out: list[str] = []
    for p in paths or ():
        text = str(p)
        if text and text not in out:
            out.append(text)
    return out


def _cut(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Op:
    """One queued write: `kind` names the `_w_<kind>` method; `key` lets equal writes merge."""

    kind: str
    payload: dict
    key: tuple | None = None


def newest(old: dict, new: dict) -> dict:
    """Merge of two queued upserts of one row: the newer wins."""
    return new
