"""Channel events (edit, pinch, retrieval) and snapshots of external ledgers."""
from __future__ import annotations

import hashlib
import json
from typing import Any

from service.store.common import Models, Operation, Row, QueuedWrite, log, spread, utc_iso
from service.store.writer import Writer

CHANNELS = ("edit", "pinch", "retrieval")


class Ledgers:
    """The store's part for channel events and snapshots of external ledgers."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._ledger_last: dict[str, str] = {}  # source -> its last kept counters, canonical JSON
        writer.register({
            "channel": Operation(spread(self._w_channel)),
            "ledger": Operation(spread(self._w_ledger)),
        })

    # ------------------------------------------------------------------ channels and ledgers

    def add_channel_event(self, channel: str, ts: Any, source: str, fields: dict[str, Any], *,
                          session_id: str | None = None, dedup_key: str | None = None,
                          kind: str | None = None) -> bool:
        """Record one edit/pinch/retrieval event; False when it is a duplicate (same dedup key) or invalid.

        Without a dedup key the event's own content is the key, so re-reading a
        ledger or transcript never books an event twice. An event without a time
        is stamped with the time it was recorded.
        """
        if channel not in CHANNELS:
            log.error("add_channel_event ignored unknown channel %r", channel)
            return False
        try:
            row = {"channel": channel, "kind": None if kind is None else str(kind), "ts": utc_iso(ts),
                   "source": str(source),
                   "session_id": None if session_id is None else str(session_id), "fields": dict(fields or {})}
            if dedup_key is None:
                canon = json.dumps([row["channel"], row["kind"], row["ts"], row["source"], row["session_id"],
                                    row["fields"]],
                                   sort_keys=True, ensure_ascii=False, default=str)
                dedup_key = "sha1:" + hashlib.sha1(canon.encode("utf-8")).hexdigest()
            row["dedup_key"] = str(dedup_key)
            json.dumps(row["fields"])  # TypeError now, not at landing time
        except Exception as exc:
            log.error("add_channel_event ignored bad input: %s", exc)
            return False
        if any(p["row"]["dedup_key"] == row["dedup_key"] for p in self._writer.pending_payloads("channel")):
            return False
        result = self._writer.submit([QueuedWrite("channel", {"row": row})])
        return True if result is None else bool(result[0])

    def _w_channel(self, m: Models, row: Row) -> bool:
        C = m.ChannelEvent
        if C.select().where(C.dedup_key == row["dedup_key"]).exists():
            return False
        C.insert(**row).on_conflict_ignore().execute()
        return True

    def channel_events(self, channel: str, since: Any = None, until: Any = None) -> list[Row]:
        """A channel's events with since <= ts < until, oldest first."""
        def q(m: Models) -> list[Row]:
            C = m.ChannelEvent
            query = C.select().where(C.channel == channel)
            if since is not None:
                query = query.where(C.ts >= utc_iso(since))
            if until is not None:
                query = query.where(C.ts < utc_iso(until))
            return [{"channel": c.channel, "kind": c.kind, "ts": c.ts, "source": c.source, "session_id": c.session_id,
                     "fields": c.fields or {}, "dedup_key": c.dedup_key} for c in query.order_by(C.ts, C.id)]
        return self._writer.read(q, [])

    def snapshot_ledger(self, source: str, counters: dict[str, Any], ts: Any = None) -> bool:
        """Keep an external ledger's counters when they differ from the last kept; True when kept."""
        try:
            canon = json.dumps(counters, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            source = str(source)
        except Exception as exc:
            log.error("snapshot_ledger ignored bad input: %s", exc)
            return False
        with self._writer.lock:
            last = self._ledger_last.get(source)
            if last is None:
                queued = [p for p in self._writer.pending_payloads("ledger") if p["source"] == source]
                if queued:
                    last = json.dumps(queued[-1]["counters"], sort_keys=True, ensure_ascii=False,
                                      separators=(",", ":"))
                else:
                    def q(m: Models) -> str | None:
                        L = m.LedgerSnapshot
                        row = L.select().where(L.source == source).order_by(L.ts.desc(), L.id.desc()).first()
                        return None if row is None else json.dumps(row.counters, sort_keys=True,
                                                                   ensure_ascii=False, separators=(",", ":"))
                    last = self._writer.read(q, None)
            if last == canon:
                self._ledger_last[source] = canon
                return False
            self._ledger_last[source] = canon
            self._writer.submit([QueuedWrite("ledger", {"source": source, "ts": utc_iso(ts), "counters": json.loads(canon)})])
            return True

    def _w_ledger(self, m: Models, source: str, ts: str, counters: dict[str, Any]) -> None:
        m.LedgerSnapshot.insert(source=source, ts=ts, counters=counters).execute()

    def ledger_snapshots(self, source: str | None = None, since: Any = None, until: Any = None) -> list[Row]:
        def q(m: Models) -> list[Row]:
            L = m.LedgerSnapshot
            query = L.select()
            if source is not None:
                query = query.where(L.source == str(source))
            if since is not None:
                query = query.where(L.ts >= utc_iso(since))
            if until is not None:
                query = query.where(L.ts < utc_iso(until))
            return [{"source": r.source, "ts": r.ts, "counters": r.counters} for r in query.order_by(L.ts, L.id)]
        return self._writer.read(q, [])
