"""One service per user: a lock the kernel drops when the process dies (even on kill -9).

Three ways, chosen by what the interpreter has (`lock_kind`):
- `fcntl`: an flock on `service.lock` in the runtime dir (Linux, macOS, BSD);
- `msvcrt`: a one-byte `msvcrt.locking` range of that file (Windows);
- `socket`: neither module (an unusual Python build, or a test that removes both): a
  listening TCP socket on 127.0.0.1, on a port derived from a secret key kept beside the lock
  file (0600, made once) and the lock file's real path. Only one socket can listen on an
  address and port, and the kernel closes it when the process dies. Any local user can reach
  127.0.0.1, so: the ports are derived from the key (another user cannot know which to hold),
  a holder proves it is one by answering a fresh challenge with an HMAC under the key (another
  user cannot answer for it), its answering thread serves many connections at once without
  waiting on any (a flood cannot silence it), and the real path is used (a data folder reached
  through a link is the same lock). A port taken by some other program is skipped for the next
  of a few derived ports; after binding, the holder looks at the others and gives way to an
  older holder (so two services starting at once never both keep a port).

The file holds the owner's pid for the message a second `ctxlamp serve` prints; with the
`socket` kind the pid also comes from the holder's answer.
"""
from __future__ import annotations

import errno
import hashlib
import hmac
import importlib
import os
import secrets
import selectors
import socket
import stat
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
_HELLO = b"ctxlamp-lock/2"
_KEY_SUFFIX = ".key"
_KEY_HEX = 64            # 32 bytes of key, as hex text
_ASK_TIMEOUT_S = 2.0     # a holder busy at its start (its service reading transcripts) still answers in time
_ANSWER_WITHIN_S = 2.0   # a connection to the holder that has not asked by then is closed
_MAX_ASKERS = 256        # connections the holder keeps at once; past that the oldest is closed


class LockUnavailable(RuntimeError):
    """The lock cannot be taken or checked (its key is not private, or every derived port is taken)."""


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
        try:  # held open, so not replaced whole as write_private does; never opened through a planted link
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LockUnavailable(f"the service lock {self.path} is a link; remove it") from None
            raise
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
        key = lock_key(path)
        return any(_ask(port, _identity(path), key) is not None for port in ports_for(path))
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
def _real(path: Path) -> bytes:
    """The lock file's real path: one lock per data folder however it is reached (a link, `..`)."""
    return os.fsencode(os.path.realpath(path))


def _identity(path: Path) -> str:
    """Names the lock (not the user's path) in the challenge."""
    return hashlib.sha256(_real(path)).hexdigest()[:16]


def lock_key(path: Path) -> bytes:
    """The lock's secret: `<lock file>.key` beside it, made once (created exclusively, 0600, no link
    followed); LockUnavailable when the file is not the user's own private file."""
    key_path = path.with_name(path.name + _KEY_SUFFIX)
    make_private_dirs(key_path.parent)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
    except FileExistsError:
        return _read_key(key_path, nofollow)
    key = secrets.token_bytes(_KEY_HEX // 2)
    try:
        os.write(fd, key.hex().encode("ascii"))
    finally:
        os.close(fd)
    return key


def _read_key(key_path: Path, nofollow: int) -> bytes:
    deadline = time.monotonic() + 2.0  # another ctxlamp may be writing it this moment
    while True:
        try:
            fd = os.open(key_path, os.O_RDONLY | nofollow)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LockUnavailable(f"the service lock's key {key_path} is a link; remove it") from None
            raise
        try:
            info = os.fstat(fd)
            text = os.read(fd, _KEY_HEX + 1)
        finally:
            os.close(fd)
        getuid = getattr(os, "getuid", None)
        if os.name == "posix" and (not stat.S_ISREG(info.st_mode) or (getuid and info.st_uid != getuid())
                                   or info.st_mode & 0o077):
            raise LockUnavailable(f"the service lock's key {key_path} is not a private file of this user "
                                  "(another user could know it); remove it")
        if len(text) == _KEY_HEX:
            try:
                return bytes.fromhex(text.decode("ascii"))
            except ValueError:
                pass
        if time.monotonic() > deadline:
            raise LockUnavailable(f"the service lock's key {key_path} is damaged; remove it (no service may run)")
        time.sleep(0.01)


def ports_for(path: Path, key: bytes | None = None) -> list[int]:
    """The ports a lock on `path` may listen on, in the order they are tried (known to the key's holder only)."""
    digest = hmac.new(key if key is not None else lock_key(path), b"ports:" + _real(path), hashlib.sha256).digest()
    ports: list[int] = []
    for i in range(0, len(digest), 2):
        port = _PORT_BASE + int.from_bytes(digest[i:i + 2], "big") % _PORT_SPAN
        if port not in ports:
            ports.append(port)
        if len(ports) == _PORT_TRIES:
            break
    return ports


def _proof(key: bytes, nonce: bytes, identity: str, pid: int, since_ns: int) -> str:
    return hmac.new(key, b"%s %s %d %d" % (nonce, identity.encode(), pid, since_ns), hashlib.sha256).hexdigest()


def _ask(port: int, identity: str, key: bytes, timeout: float = _ASK_TIMEOUT_S) -> tuple[int, int] | None:
    """(pid, since_ns) of the ctxlamp holder of `identity` listening on `port`, else None: the holder
    must answer a fresh challenge with the key's HMAC, which only a process of this user can."""
    nonce = secrets.token_hex(16).encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
            conn.sendall(b"%s %s %s\n" % (_HELLO, identity.encode(), nonce))
            data = b""
            while not data.endswith(b"\n") and len(data) < 300:
                part = conn.recv(300)
                if not part:
                    break
                data += part
    except OSError:
        return None
    fields = data.split()
    if len(fields) != 4 or fields[0] != _HELLO:
        return None
    try:
        pid, since_ns = int(fields[1]), int(fields[2])
    except ValueError:
        return None
    if not hmac.compare_digest(fields[3], _proof(key, nonce, identity, pid, since_ns).encode()):
        return None
    return pid, since_ns


def _listen(port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):  # Windows: no other socket may share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
        elif os.name == "posix":  # a closed connection's TIME_WAIT must not block the next start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError:
        sock.close()
        return None
    return sock


class _Asker:
    """One connection to the holder: its challenge as it arrives, then the asker's close."""

    def __init__(self, conn: socket.socket, deadline: float) -> None:
        self.conn = conn
        self.deadline = deadline
        self.buffer = b""
        self.answered = False


class _SocketHolder:
    """A listening socket that answers each connection's challenge: who holds the lock, proved with the key.

    One thread serves every connection through a selector and waits on none, so connections that
    never ask (a flood) cost a slot each until their deadline, and the oldest gives way past the cap.
    """

    def __init__(self, sock: socket.socket, identity: str, key: bytes) -> None:
        self.sock = sock
        self.since_ns = time.time_ns()
        self.port: int = sock.getsockname()[1]
        self._closed = False
        self._identity = identity
        self._key = key
        self._thread = threading.Thread(target=self._answer, name="ctxlamp-lock", daemon=True)
        self._thread.start()

    @classmethod
    def take(cls, path: Path) -> _SocketHolder:
        identity, key = _identity(path), lock_key(path)
        ports = ports_for(path, key)
        for port in ports:
            sock = _listen(port)
            if sock is None:
                found = _ask(port, identity, key)
                if found is not None:
                    raise AlreadyRunning(found[0], path)
                continue  # some other program's port: the next one
            holder = cls(sock, identity, key)
            for other in ports:  # a service that bound another port at the same time: the older stays
                if other == port:
                    continue
                found = _ask(other, identity, key)
                if found is not None and (found[1], found[0]) < (holder.since_ns, os.getpid()):
                    holder.close()
                    raise AlreadyRunning(found[0], path)
            return holder
        raise LockUnavailable(f"no free port for the service lock on 127.0.0.1 (tried {', '.join(map(str, ports))}: "
                              "other programs hold them all)")

    def _answer(self) -> None:
        sel = selectors.DefaultSelector()
        self.sock.setblocking(False)
        sel.register(self.sock, selectors.EVENT_READ, None)
        askers: dict[socket.socket, _Asker] = {}  # oldest first
        try:
            while not self._closed:
                now = time.monotonic()
                due = min((a.deadline for a in askers.values()), default=None)
                for sk, _ in sel.select(None if due is None else max(0.0, due - now)):
                    if sk.data is None:
                        self._accept(sel, askers)
                    else:
                        self._serve(sel, askers, sk.data)
                now = time.monotonic()
                for asker in [a for a in askers.values() if a.deadline <= now]:
                    self._drop(sel, askers, asker)
        except (OSError, ValueError):
            pass  # the listening socket was closed: the lock is released
        finally:
            for asker in list(askers.values()):
                self._drop(sel, askers, asker)
            sel.close()

    def _accept(self, sel: selectors.BaseSelector, askers: dict[socket.socket, _Asker]) -> None:
        for _ in range(64):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            if self._closed:
                conn.close()
                return
            if len(askers) >= _MAX_ASKERS:
                self._drop(sel, askers, next(iter(askers.values())))
            conn.setblocking(False)
            asker = _Asker(conn, time.monotonic() + _ANSWER_WITHIN_S)
            askers[conn] = asker
            sel.register(conn, selectors.EVENT_READ, asker)

    def _serve(self, sel: selectors.BaseSelector, askers: dict[socket.socket, _Asker], asker: _Asker) -> None:
        try:
            part = asker.conn.recv(300)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            part = b""
        if not part or asker.answered:  # the asker closed (first: no TIME_WAIT stays on our port), or chatters
            self._drop(sel, askers, asker)
            return
        asker.buffer += part
        if b"\n" not in asker.buffer:
            if len(asker.buffer) > 300:
                self._drop(sel, askers, asker)
            return
        fields = asker.buffer.split()
        if len(fields) != 3 or fields[0] != _HELLO or fields[1] != self._identity.encode() or len(fields[2]) > 64:
            self._drop(sel, askers, asker)
            return
        pid = os.getpid()
        proof = _proof(self._key, fields[2], self._identity, pid, self.since_ns)
        try:
            asker.conn.send(b"%s %d %d %s\n" % (_HELLO, pid, self.since_ns, proof.encode()))  # fits any buffer
        except OSError:
            self._drop(sel, askers, asker)
            return
        asker.answered = True

    @staticmethod
    def _drop(sel: selectors.BaseSelector, askers: dict[socket.socket, _Asker], asker: _Asker) -> None:
        askers.pop(asker.conn, None)
        try:
            sel.unregister(asker.conn)
        except (KeyError, ValueError):
            pass
        asker.conn.close()

    def close(self) -> None:
        """Wake the answering thread with a connection of our own (closing a socket another
        thread waits on in select() does not wake it everywhere), then close."""
        self._closed = True
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
        except OSError:
            pass
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)
        self.sock.close()
