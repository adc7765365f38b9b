"""The durable outbox: team rows in the local database until the team server confirms them.

Staging compares each freshly computed row with the outbox: a new or changed
row (a late transcript line revised a day) gets the new digest; a row no
longer computed becomes a deletion (payload None). A row is pending while its
digest differs from the digest the server last confirmed. Pushing sends the
pending rows as upserts, and only after the server's commit marks them
confirmed: a crash of either side in between leaves them pending, and the
next push sends them again (the upsert makes that harmless). The rows live in
the local database and are written by the store (service/store/team.py).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from service.store.team import DELETED


def digest(payload: dict | None) -> str:
    if payload is None:
        return DELETED
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def changes(current: dict[tuple[str, str], dict], stored: list[dict]) -> list[dict]:
    """The outbox rows to write so it holds `current`: new and changed rows, deletions of vanished ones."""
    known = {(r["kind"], r["key"]): r for r in stored}
    put: list[dict[str, Any]] = []
    for (kind, key), payload in current.items():
        d = digest(payload)
        old = known.get((kind, key))
        if old is None or old["digest"] != d:
            put.append({"kind": kind, "key": key, "payload": payload, "digest": d})
    for (kind, key), old in known.items():
        if (kind, key) not in current and old["digest"] != DELETED:
            put.append({"kind": kind, "key": key, "payload": None, "digest": DELETED})
    return put


def pending(stored: list[dict]) -> list[dict]:
    """Rows the server has not confirmed, in a stable order."""
    return sorted((r for r in stored if r["digest"] != r["confirmed"]), key=lambda r: (r["kind"], r["key"]))
