"""The team view's parts of the store: the outbox (figures the team server has not confirmed yet) and
applying the team schema's migrations with the models' runner (service/team/ owns what they mean)."""
from __future__ import annotations

from service.store.common import _Op

DELETED = "deleted"  # the digest of a row to delete on the server
_CHUNK = 400         # rows per INSERT (SQLite's bound-variable limit)


def migrate_schema(db, steps) -> int:
    """Bring another schema (the team's, on its server) to its newest version; the same runner as ours."""
    import models

    return models.migrate(db, steps)


class TeamParts:
    """Store methods: the team outbox (service/team/outbox.py decides what goes in)."""

    def team_outbox(self, member: str) -> list[dict] | None:
        """The member's outbox rows; None when the database cannot be read."""
        def q(m):
            O = m.TeamOutbox
            return [{"kind": r.kind, "key": r.key, "payload": r.payload, "digest": r.digest, "confirmed": r.confirmed}
                    for r in O.select().where(O.member == str(member))]
        return self._read(q, None)

    def team_outbox_write(self, member: str, *, put: list[dict] = (), confirm: list[list] = (),
                          drop: list[list] = ()) -> bool:
        """Stage rows, mark sent versions confirmed and forget confirmed deletions, in one transaction.

        False when the write could not be made now (it stays queued like any other).
        """
        payload = {"member": str(member), "put": list(put), "confirm": list(confirm), "drop": list(drop)}
        return self._submit([_Op("team_outbox", payload)]) is not None

    def _w_team_outbox(self, m, member, put, confirm, drop):
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
