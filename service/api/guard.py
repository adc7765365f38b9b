"""The local API's door: which connections get a thread, and for how long.

Any local user may open sockets to the API, token or not. So a connection costs
one descriptor and a small buffer until a whole request has arrived, never a
thread: one front thread accepts and reads every connection without blocking
(a selector), and only a complete request (headers and body, within ONE
deadline for both) goes to a worker thread. Idle or slow ("slowloris") sockets
are dropped at their deadline; past the connection cap the oldest connection
still waiting for its request makes room for the newest (one accepted within
YOUNG_S is left alone: new clients then wait in the accept queue); when the process is
out of descriptors (EMFILE) the door drops such a connection or stops accepting
for a growing pause, and never spins. Workers are started on demand (no idle
thread) up to a cap; SSE streams get their own thread (the hub caps them).

The handler is an ordinary `BaseHTTPRequestHandler` that reads its request
from memory (`BufferedHandler`) and writes to the socket. A request the server's
`quick` answers (the proof a client asks before its token, a few hundred bytes of
work) is answered by the door itself: no thread is started for it, and the
connection waits at the door for the request that follows.
"""
from __future__ import annotations

import errno
import io
import logging
import re
import selectors
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

log = logging.getLogger("ctxlamp.api")

REQUEST_DEADLINE_S = 10.0   # from a connection's acceptance (or its last answer) to its request's last byte
WRITE_TIMEOUT_S = 10.0      # a worker's answer (or an SSE event) to a peer that stops reading
MAX_HEADER_BYTES = 64 << 10
ACCEPT_QUEUE = 128          # the listen backlog: many status lines arriving together wait here, not in SYN retries
MAX_WORKERS = 16            # requests handled at once (SSE streams apart); more wait for a free worker
DESCRIPTOR_RESERVE = 64     # descriptors the rest of the service keeps (database, watcher, logs, workers)
MAX_CONNECTIONS = 512       # even with a large descriptor limit
BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 1.0
LINGER_S = 2.0              # after refusing a body: how long its rest is read and dropped, so the peer reads the answer
LINGER_BYTES = 4 << 20      # and at most this much of it
YOUNG_S = 0.25              # a connection this new is not idle yet (its request is on its way): never dropped
FULL_PAUSE_S = 0.01         # at the cap with only young connections: new ones wait in the accept queue this long
WANTED_DESCRIPTORS = 8192   # the soft limit asked for at start (never above the hard one)

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_CHUNKED = re.compile(rb"^transfer-encoding[ \t]*:", re.IGNORECASE | re.MULTILINE)
_EVENTS = re.compile(rb"^GET /api/v1/events(?:[?# ]|\r?$)")
_OUT_OF_DESCRIPTORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
              b"Content-Length: 35\r\nConnection: close\r\n\r\n{\"error\":\"request headers too large\"}")


def raise_descriptor_limit(wanted: int = WANTED_DESCRIPTORS) -> tuple[int, int]:
    """Raise the soft descriptor limit towards `wanted` (never above the hard limit); (before, after).

    Where the system has no `resource` module (Windows), (0, 0)."""
    try:
        import resource
    except ImportError:
        return 0, 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return soft, target
        except (ValueError, OSError):
            pass
    return soft, soft


def connection_cap() -> int:
    """How many connections the door holds at once: what the descriptor limit leaves, bounded."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except ImportError:
        return MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, (soft - DESCRIPTOR_RESERVE) // 2))


def request_size(buffer: bytes | bytearray, max_body: int) -> int | None:
    """Bytes of the first whole request in `buffer` (headers and the body its Content-Length names),
    None while it is incomplete. A body the handler will refuse (over `max_body`, chunked, unreadable
    length) is not waited for: the handler answers on the headers alone and closes."""
    end = _HEAD_END.search(buffer)
    if end is None:
        return None
    head = bytes(buffer[: end.end()])
    length = _LENGTH.search(head)
    body = int(length.group(1)) if length else 0
    if body > max_body or _CHUNKED.search(head):
        body = 0
    need = end.end() + body
    return need if len(buffer) >= need else None


def refused_body(request: bytes, max_body: int) -> int:
    """Bytes of body the peer may still be sending for a request whose body was not waited for
    (over `max_body`, or chunked: then as much as LINGER_BYTES); 0 when the request came whole."""
    end = _HEAD_END.search(request)
    if end is None:
        return 0
    head = request[: end.end()]
    if _CHUNKED.search(head):
        return LINGER_BYTES
    length = _LENGTH.search(head)
    body = int(length.group(1)) if length else 0
    return min(body, LINGER_BYTES) if body > max_body else 0


def drain_and_close(sock: socket.socket, unread: int, linger: float = LINGER_S) -> None:
    """Close after an answer the peer has not finished sending to: say we are done writing, then read
    and drop up to `unread` bytes (or until the peer closes, or `linger` seconds) before closing.

    Closing with unread bytes queued makes the kernel reset the connection, and a reset can reach the
    peer while it is still sending, before it reads the answer (a client saw a broken pipe in place of
    413). Bounded in bytes and time, so a peer that never stops sending holds a worker no longer."""
    try:
        sock.shutdown(socket.SHUT_WR)
        end = time.monotonic() + linger
        while unread > 0:
            left = end - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            data = sock.recv(min(65536, unread))
            if not data:
                break
            unread -= len(data)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


@dataclass(eq=False)
class Connection:
    sock: socket.socket
    addr: Any
    deadline: float
    since: float = 0.0      # accepted, or answered last (kept alive)
    buffer: bytearray = field(default_factory=bytearray)


@dataclass(frozen=True)
class Buffered:
    """What a handler is made from: the socket to answer on and its request, already read."""

    sock: socket.socket
    request: bytes


class WholeWrites(io.RawIOBase):
    """A socket's writer whose every write goes out whole or raises.

    A socket with a timeout sends what fits in its buffer and says how much; a big
    answer to a reader slower than the writer then arrived cut. `sendall` loops until
    all is sent, within the socket's timeout for the whole write (WRITE_TIMEOUT_S).
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # bytes-like, as io's writers take
        self._sock.sendall(data)
        return len(data)


class BufferedHandler(BaseHTTPRequestHandler):
    """A request handler for one request read by the door: it reads from memory, writes to the socket."""

    def setup(self) -> None:
        buffered: Buffered = self.request  # the door hands a Buffered in
        self.connection = buffered.sock
        self.rfile = io.BytesIO(buffered.request)
        self.wfile = WholeWrites(buffered.sock)  # type: ignore[assignment]  # unbuffered, every write whole

    def handle(self) -> None:
        self.handle_one_request()

    def finish(self) -> None:
        try:
            self.wfile.close()
        except OSError:
            pass


class GuardedServer:
    """A TCP listener guarded as the module docstring says; `serve_forever` runs the door's thread."""

    def __init__(self, address: tuple[str, int], handler: type[BufferedHandler], max_body: int,
                 quick: Callable[[bytes], bytes | None] | None = None) -> None:
        self.handler = handler
        self.quick = quick  # a whole request -> the whole answer the door sends itself, or None
        self.max_body = max_body
        self.listener = socket.create_server(address, backlog=ACCEPT_QUEUE)
        self.listener.setblocking(False)
        self.server_address = self.listener.getsockname()
        self.cap = connection_cap()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self.listener, selectors.EVENT_READ, "listen")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._waiting: dict[Connection, None] = {}      # connections reading their request, oldest first
        self._returned: deque[Connection] = deque()     # answered, kept alive: back to the door
        self._jobs: deque[tuple[Connection, bytes]] = deque()
        self._lock = threading.Lock()
        self._open = 0                                  # connections anywhere (door, workers, SSE)
        self._workers = 0
        self._paused_until: float | None = None         # accepting stopped (out of descriptors) until
        self._backoff = BACKOFF_FIRST_S
        self._closing = False
        self.dropped = {"deadline": 0, "cap": 0, "descriptors": 0, "too_large": 0}

    # ---- the door's thread ------------------------------------------------------------------
    def serve_forever(self) -> None:
        while not self._closing:
            events = self._selector.select(self._timeout())
            for key, _ in events:
                if key.data == "listen":
                    self._accept()
                elif key.data == "wake":
                    self._drain_wake()
                else:
                    self._read(key.data)
            self._expire()
        self._close_all()

    def _timeout(self) -> float | None:
        """Until the nearest deadline; None (sleep until something happens) when nothing waits."""
        now = time.monotonic()
        due = [c.deadline for c in self._waiting]
        if self._paused_until is not None:
            due.append(self._paused_until)
        return max(0.0, min(due) - now) if due else None

    def _accept(self) -> None:
        for _ in range(ACCEPT_QUEUE):
            with self._lock:
                full = self._open >= self.cap
            if full and not self._drop_oldest("cap"):
                self._pause_accepting(FULL_PAUSE_S)  # all busy or just arrived: the next wait in the queue
                return
            try:
                sock, addr = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_DESCRIPTORS:
                    if not self._drop_oldest("descriptors"):
                        if self._paused_until is None:
                            log.warning("out of descriptors with %d connections open: not accepting for %.2f s",
                                        self._open, self._backoff)
                        self._pause_accepting(self._backoff)
                        self._backoff = min(BACKOFF_MAX_S, self._backoff * 2)
                        return
                    continue
                return  # e.g. ECONNABORTED: that peer is gone
            self._backoff = BACKOFF_FIRST_S
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            with self._lock:
                self._open += 1
            now = time.monotonic()
            self._wait(Connection(sock, addr, now + REQUEST_DEADLINE_S, now))

    def _pause_accepting(self, pause: float) -> None:
        """Stop accepting for `pause` seconds (new clients wait in the accept queue); never spin."""
        if self._paused_until is None:
            self._selector.unregister(self.listener)
        self._paused_until = time.monotonic() + pause

    def _wait(self, conn: Connection) -> None:
        """Into the door: read until the request is whole (it may be whole already, pipelined)."""
        if request_size(conn.buffer, self.max_body) is not None:
            self._dispatch(conn)
            return
        self._waiting[conn] = None
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _read(self, conn: Connection) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._leave(conn)
            self._close(conn)
            return
        conn.buffer += data
        if request_size(conn.buffer, self.max_body) is not None:
            self._leave(conn)
            self._dispatch(conn)
        elif len(conn.buffer) > MAX_HEADER_BYTES and _HEAD_END.search(conn.buffer) is None:
            self._leave(conn)
            self.dropped["too_large"] += 1
            try:
                conn.sock.send(_TOO_LARGE)
            except OSError:
                pass
            self._close(conn)

    def _leave(self, conn: Connection) -> None:
        self._waiting.pop(conn, None)
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _drop_oldest(self, why: str) -> bool:
        """Close the connection that has waited longest for its request, if it is not young (its
        request may be on its way); False when there is none."""
        for conn in self._waiting:  # oldest first
            if why == "cap" and time.monotonic() - conn.since < YOUNG_S:
                return False
            self._leave(conn)
            self._close(conn)
            self.dropped[why] += 1
            return True
        return False

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in [c for c in self._waiting if c.deadline <= now]:
            self._leave(conn)
            self._close(conn)
            self.dropped["deadline"] += 1
        if self._paused_until is not None and now >= self._paused_until and not self._closing:
            self._paused_until = None
            self._selector.register(self.listener, selectors.EVENT_READ, "listen")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return
        while True:
            with self._lock:
                if not self._returned:
                    return
                conn = self._returned.popleft()
            conn.since = time.monotonic()
            conn.deadline = conn.since + REQUEST_DEADLINE_S
            try:
                conn.sock.setblocking(False)
            except OSError:
                self._close(conn)
                continue
            self._wait(conn)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, InterruptedError):
            pass  # a wake is pending already
        except OSError:
            pass

    # ---- workers ----------------------------------------------------------------------------
    def _dispatch(self, conn: Connection) -> None:
        size = request_size(conn.buffer, self.max_body) or 0
        request = bytes(conn.buffer[:size])
        del conn.buffer[:size]
        answer = self.quick(request) if self.quick is not None else None
        if answer is not None:
            try:
                sent = conn.sock.send(answer)  # a few hundred bytes: a fresh socket's buffer takes them whole
            except OSError:
                sent = -1
            if sent != len(answer):
                self._close(conn)
                return
            conn.since = time.monotonic()
            conn.deadline = conn.since + REQUEST_DEADLINE_S
            self._wait(conn)  # kept alive: the client's next request follows on this connection
            return
        if _EVENTS.match(request):  # a stream lives long: its own thread (the hub caps subscribers)
            threading.Thread(target=self._serve_one, args=(conn, request), name="api-sse", daemon=True).start()
            return
        with self._lock:
            if self._workers >= MAX_WORKERS:
                self._jobs.append((conn, request))
                return
            self._workers += 1
        threading.Thread(target=self._work, args=(conn, request), name="api-worker", daemon=True).start()

    def _work(self, conn: Connection, request: bytes) -> None:
        job: tuple[Connection, bytes] | None = (conn, request)
        while job is not None:
            self._serve_one(*job)
            with self._lock:
                if self._jobs:
                    job = self._jobs.popleft()
                else:
                    self._workers -= 1
                    job = None

    def _serve_one(self, conn: Connection, request: bytes) -> None:
        keep = False
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(WRITE_TIMEOUT_S)
            handler = self.handler(Buffered(conn.sock, request), conn.addr, self)  # type: ignore[arg-type]
            keep = not handler.close_connection and not self._closing
        except Exception:  # a handler's bug must never reach stderr or stop the door
            log.exception("the API could not answer a request")
        if keep:
            with self._lock:
                self._returned.append(conn)
            self._wake()
        else:
            self._close(conn, refused_body(request, self.max_body))

    def _close(self, conn: Connection, unread: int = 0) -> None:
        if unread:
            drain_and_close(conn.sock, unread)
        else:
            try:
                conn.sock.close()
            except OSError:
                pass
        with self._lock:
            self._open -= 1

    # ---- lifecycle --------------------------------------------------------------------------
    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._open

    def shutdown(self) -> None:
        """Ask the door's thread to end (it closes what waits at the door)."""
        self._closing = True
        self._wake()

    def _close_all(self) -> None:
        for conn in list(self._waiting):
            self._leave(conn)
            self._close(conn)

    def server_close(self) -> None:
        for sock in (self.listener, self._wake_r, self._wake_w):
            try:
                sock.close()
            except OSError:
                pass
        self._selector.close()

