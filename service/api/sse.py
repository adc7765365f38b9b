"""Server-sent events: a hub that fans published events out to each client.

Each client has its own bounded queue; a client that falls behind by a full
queue is dropped (it reconnects and gets a fresh snapshot) rather than making
the publisher wait. Client threads block on their queue: nothing wakes while
nothing is published. A dead connection is found when the next event (or the
keepalive comment sent with it) fails to write.
"""
from __future__ import annotations

import json
import queue
import threading
from typing import Any, Mapping

QUEUE_SIZE = 256
_CLOSE = object()


def encode(event: str, data: Mapping[str, Any]) -> bytes:
    """One SSE message (data is JSON on one line)."""
    body = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return f"event: {event}\ndata: {body}\n\n".encode()


class Client:
    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_SIZE)
        self.dropped = False

    def next(self) -> bytes | None:
        """The next message to write; None when the stream should end."""
        item = self.queue.get()
        return None if item is _CLOSE else item


class Hub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: set[Client] = set()
        self.published = 0

    def subscribe(self) -> Client:
        client = Client()
        with self._lock:
            self._clients.add(client)
        return client

    def subscribe_within(self, limit: int) -> Client | None:
        """A new client, or None when `limit` clients are subscribed already (the API answers 503)."""
        with self._lock:
            if len(self._clients) >= limit:
                return None
            client = Client()
            self._clients.add(client)
        return client

    def unsubscribe(self, client: Client) -> None:
        with self._lock:
            self._clients.discard(client)

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)

    def publish(self, event: str, data: Mapping[str, Any]) -> None:
        msg = encode(event, data)
        with self._lock:
            clients = list(self._clients)
            self.published += 1
        for client in clients:
            try:
                client.queue.put_nowait(msg)
            except queue.Full:
                self._drop(client)

    def end(self, client: Client) -> None:
        """End one client's stream (its peer is gone): its thread wakes and returns."""
        self._drop(client)

    def _drop(self, client: Client) -> None:
        client.dropped = True
        self.unsubscribe(client)
        try:
            while True:
                client.queue.get_nowait()
        except queue.Empty:
            pass
        client.queue.put_nowait(_CLOSE)

    def close_all(self) -> None:
        """End every stream (shutdown)."""
        with self._lock:
            clients = list(self._clients)
            self._clients.clear()
        for client in clients:
            try:
                client.queue.put_nowait(_CLOSE)
            except queue.Full:
                self._drop(client)
