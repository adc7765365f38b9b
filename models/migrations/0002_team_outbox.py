"""0002: the team outbox (service/team/outbox.py): figures the team server has not confirmed yet.

A frozen copy of the table at version 2, like 0001.
"""
from __future__ import annotations

import peewee as pw


def up(db: pw.Database) -> None:
    class TeamOutbox(pw.Model):
        member = pw.TextField()
        kind = pw.TextField()
        key = pw.TextField()
        payload = pw.TextField(null=True)
        digest = pw.TextField()
        confirmed = pw.TextField(null=True)

        class Meta:
            database = db
            table_name = "team_outbox"
            indexes = ((("member", "kind", "key"), True),)

    db.create_tables([TeamOutbox], safe=True)
