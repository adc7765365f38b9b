"""One service per user: a lock the kernel drops when the process dies (even on kill -9).

Three ways, chosen by what the interpreter has (`lock_kind`):
- `fcntl`: an flock on `service.lock` in the runtime dir (Linux, macOS, BSD);
- `msvcrt`: a one-byte `msvcrt.locking` range of that file (Windows);
- `socket`: neither module (an unusual Python build, or a test that removes both): a
  listening TCP socket on 127.0.0.1, on a port derived from the lock file's path. Only one
  socket can listen on an address and port, and the kernel closes it when the process dies.
  The holder answers every connection with who it is, so a port taken by some other program
  is told apart from a running service; then the next of a few derived ports is tried, and
  after binding, the holder looks at the others and gives way to an older holder (so two
  services starting at once never both keep a port).

The file holds the owner's pid for the message a second `ctxlamp serve` prints; with the
`socket` kind the pid also comes from the holder's answer.
"""
from __future__ import annotations

import hashlib
import importlib
import os
import socket
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Self

from service.client.privdir import make_private_dirs

KINDS = ("fcntl", "msvcrt", "socket")
_MSVCRT_BYTE = 1 << 20   # the locked byte: beyond the pid text, so a reader is never refused
_PORT_BASE = 20000
_PORT_SPAN = 30000       # derived ports fall in 20000-49999 (below most systems' ephemeral range)
_PORT_TRIES = 6
_HELLO = b"ctxlamp-lock/1"


class AlreadyRunning(RuntimeError):
    def __init__(self, pid: int | None, path: Path) -> None:
        self.pid = pid
        self.path = path
        who = f"pid {pid}" if pid else "another process"
        super().__init__(f"ctxlamp service already running ({who}; lock {path})")


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def lock_kind() -> str:
    """The lock this interpreter can hold: fcntl where present, msvcrt on Windows, else socket."""
    if _module("fcntl") is not None:
        return "fcntl"
    if _module("msvcrt") is not None:
        return "msvcrt"
    return "socket"


class ServiceLock:
    """`kind` and `module` are for tests: a branch chosen by hand, or a stand-in module."""

    def __init__(self, path: Path, *, kind: str | None = None, module: Any = None) -> None:
        if kind is not None and kind not in KINDS:
            raise ValueError(f"lock kind must be one of {KINDS}")
        self.path = path
        self.kind = kind or lock_kind()
        self._mod: Any = module if module is not None else (
            _module(self.kind) if self.kind != "socket" else None)
        self._fd: int | None = None
        self._holder: _SocketHolder | None = None

    def acquire(self) -> Self:
        make_private_dirs(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if self.kind == "fcntl":
                try:
                    self._mod.flock(fd, self._mod.LOCK_EX | self._mod.LOCK_NB)
                except BlockingIOError:
                    raise AlreadyRunning(read_pid(self.path), self.path) from None
            elif self.kind == "msvcrt":
                os.lseek(fd, _MSVCRT_BYTE, os.SEEK_SET)
                try:
                    self._mod.locking(fd, self._mod.LK_NBLCK, 1)
                except OSError:
                    raise AlreadyRunning(read_pid(self.path), self.path) from None
            else:
                self._holder = _SocketHolder.take(self.path)
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Unlock; the file stays (removing it would race a starting service)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            if self.kind == "fcntl":
                self._mod.flock(fd, self._mod.LOCK_UN)
            elif self.kind == "msvcrt":
                os.lseek(fd, _MSVCRT_BYTE, os.SEEK_SET)
                self._mod.locking(fd, self._mod.LK_UNLCK, 1)
            elif self._holder is not None:
                self._holder.close()
                self._holder = None
        finally:
            os.close(fd)

    def __enter__(self) -> Self:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def is_held(path: Path, *, kind: str | None = None, module: Any = None) -> bool:
    """True when a live service holds the lock (for `status` and the desktop)."""
    kind = kind or lock_kind()
    if kind == "socket":
        return any(_ask(port, _identity(path)) is not None for port in ports_for(path))
    mod: Any = module if module is not None else _module(kind)
    try:
        fd = os.open(path, os.O_RDWR if kind == "msvcrt" else os.O_RDONLY)
    except OSError:
        return False
    try:
        if kind == "fcntl":
            try:
                mod.flock(fd, mod.LOCK_SH | mod.LOCK_NB)
            except BlockingIOError:
                return True
            return False
        os.lseek(fd, _MSVCRT_BYTE, os.SEEK_SET)
        try:
            mod.locking(fd, mod.LK_NBLCK, 1)
        except OSError:
            return True
        mod.locking(fd, mod.LK_UNLCK, 1)
        return False
    finally:
        os.close(fd)


# ---- the socket kind ---------------------------------------------------------------------------
def _identity(path: Path) -> str:
    """Names the lock (not the user's path) in a holder's answer."""
    return hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:16]


def ports_for(path: Path) -> list[int]:
    """The ports a lock on `path` may listen on, in the order they are tried."""
    digest = hashlib.sha256(b"ports:" + os.fsencode(os.path.abspath(path))).digest()
    ports: list[int] = []
    for i in range(0, len(digest), 2):
        port = _PORT_BASE + int.from_bytes(digest[i:i + 2], "big") % _PORT_SPAN
        if port not in ports:
            ports.append(port)
        if len(ports) == _PORT_TRIES:
            break
    return ports


def _ask(port: int, identity: str, timeout: float = 0.5) -> tuple[int, int] | None:
    """(pid, since_ns) of the ctxlamp holder of `identity` listening on `port`, else None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
            data = b""
            while not data.endswith(b"\n") and len(data) < 200:
                part = conn.recv(200)
                if not part:
                    break
                data += part
    except OSError:
        return None
    fields = data.split()
    if len(fields) != 4 or fields[0] != _HELLO or fields[1].decode("ascii", "replace") != identity:
        return None
    try:
        return int(fields[2]), int(fields[3])
    except ValueError:
        return None


def _listen(port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):  # Windows: no other socket may share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
        elif os.name == "posix":  # a closed connection's TIME_WAIT must not block the next start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(8)
    except OSError:
        sock.close()
        return None
    return sock


class _SocketHolder:
    """A listening socket that answers each connection with who holds the lock."""

    def __init__(self, sock: socket.socket, identity: str) -> None:
        self.sock = sock
        self.since_ns = time.time_ns()
        self.port: int = sock.getsockname()[1]
        self._closed = False
        self.hello = f"{_HELLO.decode()} {identity} {os.getpid()} {self.since_ns}\n".encode()
        self._thread = threading.Thread(target=self._answer, name="ctxlamp-lock", daemon=True)
        self._thread.start()

    @classmethod
    def take(cls, path: Path) -> _SocketHolder:
        identity = _identity(path)
        ports = ports_for(path)
        for port in ports:
            sock = _listen(port)
            if sock is None:
                found = _ask(port, identity)
                if found is not None:
                    raise AlreadyRunning(found[0], path)
                continue  # some other program's port: the next one
            holder = cls(sock, identity)
            for other in ports:  # a service that bound another port at the same time: the older stays
                if other == port:
                    continue
                found = _ask(other, identity)
                if found is not None and (found[1], found[0]) < (holder.since_ns, os.getpid()):
                    holder.close()
                    raise AlreadyRunning(found[0], path)
            return holder
        raise OSError(f"no free port for the service lock on 127.0.0.1 (tried {', '.join(map(str, ports))})")

    def _answer(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed: the lock is released
            if self._closed:
                conn.close()
                return
            try:
                conn.settimeout(1.0)
                conn.sendall(self.hello)
                conn.recv(1)  # the asker closes first, so no TIME_WAIT stays on our port
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        """Wake the answering thread with a connection of our own (closing a socket another
        thread waits on in accept() does not wake it everywhere), then close."""
        self._closed = True
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
        except OSError:
            pass
        self.sock.close()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)

