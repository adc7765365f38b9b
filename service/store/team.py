"""The team view's part of the store: the outbox (figures the team server has not confirmed yet;
service/team/ decides what goes in)."""
from __future__ import annotations

from typing import Any, Sequence

from service.store.common import Models, Operation, Row, QueuedWrite, spread
from service.store.writer import Writer

DELETED = "deleted"  # the digest of a row to delete on the server
_CHUNK = 400         # rows per INSERT (SQLite's bound-variable limit)


class TeamOutbox:
    """The store's part for the team outbox (service/team/outbox.py decides what goes in)."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        writer.register({"team_outbox": Operation(spread(self._w_team_outbox))})

    def team_outbox(self, member: str) -> list[Row] | None:
        """The member's outbox rows; None when the database cannot be read."""
        def q(m: Models) -> list[Row]:
            O = m.TeamOutbox
            return [{"kind": r.kind, "key": r.key, "payload": r.payload, "digest": r.digest, "confirmed": r.confirmed}
                    for r in O.select().where(O.member == str(member))]
        return self._writer.read(q, None)

    def team_outbox_write(self, member: str, *, put: Sequence[Row] = (), confirm: Sequence[Sequence[Any]] = (),
                          drop: Sequence[Sequence[Any]] = ()) -> bool:
        """Stage rows, mark sent versions confirmed and forget confirmed deletions, in one transaction.

        False when the write could not be made now (it stays queued like any other).
        """
        payload = {"member": str(member), "put": list(put), "confirm": list(confirm), "drop": list(drop)}
        return self._writer.submit([QueuedWrite("team_outbox", payload)]) is not None

    def _w_team_outbox(self, m: Models, member: str, put: list[Row], confirm: list[list[Any]],
                       drop: list[list[Any]]) -> None:
        import peewee as pw

        O = m.TeamOutbox
        rows = [{"member": member, "kind": r["kind"], "key": r["key"], "payload": r["payload"], "digest": r["digest"]}
                for r in put]
        for i in range(0, len(rows), _CHUNK):
            (O.insert_many(rows[i:i + _CHUNK])
             .on_conflict(conflict_target=[O.member, O.kind, O.key], preserve=[O.payload, O.digest])
             .execute())
        for i in range(0, len(confirm), _CHUNK // 2):  # only the version that was sent becomes confirmed
            versions = pw.ValuesList([tuple(c) for c in confirm[i:i + _CHUNK // 2]])
            (O.update(confirmed=O.digest)
             .where((O.member == member) & pw.Tuple(O.kind, O.key, O.digest).in_(versions)).execute())
        for kind, key in drop:
            O.delete().where((O.member == member) & (O.kind == kind) & (O.key == key) & (O.digest == DELETED)).execute()
