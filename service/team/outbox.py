"""The durable outbox: team rows in the local database until the team server confirms them.

Staging compares each freshly computed row with the outbox: a new or changed
row (a late transcript line revised a day) gets the new digest; a row no
longer computed becomes a deletion (payload None). A row is pending while its
digest differs from the digest the server last confirmed. Pushing sends the
pending rows as upserts, and only after the server's commit marks them
confirmed: a crash of either side in between leaves them pending, and the
next push sends them again (the upsert makes that harmless). The local writes
go through the store (the one writer); `read_rows`/`write_rows` are its halves.
"""
from __future__ import annotations

import hashlib
import json

DELETED = "deleted"
_CHUNK = 400  # rows per INSERT (SQLite's bound-variable limit)


def digest(payload: dict | None) -> str:
    if payload is None:
        return DELETED
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


# -- the store's halves (run inside its transaction) ---------------------------------------------

def read_rows(m, member: str) -> list[dict]:
    O = m.TeamOutbox
    return [{"kind": r.kind, "key": r.key, "payload": r.payload, "digest": r.digest, "confirmed": r.confirmed}
            for r in O.select().where(O.member == member)]


def write_rows(m, member: str, put: list[dict], confirm: list[list], drop: list[list]) -> None:
    O = m.TeamOutbox
    rows = [{"member": member, "kind": r["kind"], "key": r["key"], "payload": r["payload"], "digest": r["digest"]}
            for r in put]
    for i in range(0, len(rows), _CHUNK):
        (O.insert_many(rows[i:i + _CHUNK])
         .on_conflict(conflict_target=[O.member, O.kind, O.key], preserve=[O.payload, O.digest])
         .execute())
    import peewee as pw

    for i in range(0, len(confirm), _CHUNK // 2):  # only the version that was sent becomes confirmed
        versions = pw.ValuesList([tuple(c) for c in confirm[i:i + _CHUNK // 2]])
        (O.update(confirmed=O.digest)
         .where((O.member == member) & pw.Tuple(O.kind, O.key, O.digest).in_(versions)).execute())
    for kind, key in drop:
        O.delete().where((O.member == member) & (O.kind == kind) & (O.key == key) & (O.digest == DELETED)).execute()


# -- what a push does with them -------------------------------------------------------------------

def changes(current: dict[tuple[str, str], dict], stored: list[dict]) -> list[dict]:
    """The outbox rows to write so it holds `current`: new and changed rows, deletions of vanished ones."""
    known = {(r["kind"], r["key"]): r for r in stored}
    put = []
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
