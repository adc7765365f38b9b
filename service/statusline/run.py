"""`ctxlamp statusline`: the line Claude Code shows under its prompt, in tens of milliseconds.

Claude Code runs its status-line command after each update (debounced ~300 ms) without
waiting for the previous run, so a slow command piles up. Rules here:
- standard library only, and few modules of it (no json package, no http.client, no pathlib, no service.engine);
- a run never waits on another: a non-blocking lock per session; when it is taken, or the
  service does not answer within SERVICE_TIMEOUT_S, the session's last line is printed;
- everything ends within HARD_LIMIT_S; the exit status is 0 and no traceback ever reaches the
  terminal: the worst case is a line built from Claude Code's own input (or just "ctxlamp").
Two round trips on one connection: the service proves it is this user's own (service/client/proof.py),
then POST /api/v1/statusline carries what Claude Code told us (the service keeps it) and answers
with the session's lamp and the last turn's share of the 5-hour window.
"""

import os
import sys
import time

from service.client.privdir import make_private_dirs, write_private
from service.statusline import fastjson, line as line_mod
from service.statusline.reading import parse, safe_session_id
from service.client.where import runtime_dir

TYPE_CHECKING = False  # typing's own flag costs an import on the status line's clock
if TYPE_CHECKING:
    from typing import Any

HARD_LIMIT_S = 1.0
STDIN_WAIT_S = 0.3       # Claude Code writes the JSON at once; a terminal or a stuck writer gets this long
SERVICE_TIMEOUT_S = 0.3  # then the last line is printed; the service answers in about a millisecond
STDIN_CAP = 1 << 20      # a bigger input is not Claude Code's status JSON: read and dropped
STALE_CACHE_S = 7 * 86400
PLAIN = "ctxlamp"


def _options(argv: list[str]) -> "dict[str, Any]":
    opts: dict[str, Any] = {"wrap": None, "color": not os.environ.get("NO_COLOR")}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--wrap" and i + 1 < len(argv):
            opts["wrap"] = argv[i + 1]
            i += 1
        elif arg.startswith("--wrap="):
            opts["wrap"] = arg[7:]
        elif arg == "--no-color":
            opts["color"] = False
        i += 1
    return opts


def read_stdin(until: float) -> tuple[bytes, bool]:
    """(bytes, too_big). Stops at EOF or `until`; past STDIN_CAP it keeps draining (so the writer
    never blocks on a full pipe) but keeps nothing."""
    try:
        if os.isatty(0):
            return b"", False
    except (OSError, ValueError):
        return b"", False
    try:
        import select
    except ImportError:  # pragma: no cover
        return sys.stdin.buffer.read(STDIN_CAP + 1)[:STDIN_CAP], False
    chunks: list[bytes] = []
    size, too_big = 0, False
    while True:
        left = until - time.monotonic()
        if left <= 0:
            break
        try:
            ready, _, _ = select.select([0], [], [], left)
            if not ready:
                break
            data = os.read(0, 1 << 20)
        except (OSError, ValueError):
            break
        if not data:
            break
        if too_big:
            continue
        size += len(data)
        if size > STDIN_CAP:
            chunks, too_big = [], True
        else:
            chunks.append(data)
    return b"".join(chunks), too_big


def _try_lock(path: str) -> int | None:
    """An fd holding an exclusive lock on `path`, or None when another run holds it."""
    try:
        import fcntl
    except ImportError:
        return _try_range_lock(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)  # never through a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _try_range_lock(path: str) -> int | None:
    """Windows: a one-byte range lock, dropped when the fd closes or the run dies; -1 (no lock)
    where neither kind exists: runs do not coordinate (each still ends within its deadline)."""
    try:
        import msvcrt
    except ImportError:
        return -1
    ranges: Any = msvcrt  # typeshed declares its functions for Windows only; this runs wherever it imports
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)  # never through a link
    try:
        ranges.locking(fd, ranges.LK_NBLCK, 1)
    except OSError:
        os.close(fd)
        return None
    return fd


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(65536).decode("utf-8", "replace").rstrip("\n") or None
    except OSError:
        return None


def _write_text(path: str, text: str) -> None:
    try:
        write_private(path, text.encode("utf-8"), durable=False)  # never through a planted link
    except OSError:
        pass


def _prune(folder: str, now: float) -> None:
    """Lines and locks of sessions not seen for a week go (only when a new session's file is made)."""
    try:
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            try:
                if now - os.stat(path).st_mtime > STALE_CACHE_S:
                    os.unlink(path)
            except OSError:
                pass
    except OSError:
        pass


def ask_service(folder: str, reading: dict, timeout: float) -> "dict[str, Any] | str":
    """The service's answer (a dict), "down" (nothing listens, or a listener that is not this user's
    service) or "slow" (no answer in time). The listener proves itself first (service/client/proof.py)."""
    try:
        with open(os.path.join(folder, "api.json"), "rb") as fh:
            info = fastjson.loads(fh.read(8192))
        port, token, key = int(info["port"]), str(info["token"]), info.get("proof_key")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "down"
    from service.client import proof

    nonce = proof.new_nonce()
    host = f"Host: 127.0.0.1:{port}\r\n"
    try:
        import _socket  # the C module: socket.py's enums cost more than the whole request
        sock_mod: Any = _socket
    except ImportError:  # pragma: no cover
        import socket
        sock_mod = socket
    s = sock_mod.socket(sock_mod.AF_INET, sock_mod.SOCK_STREAM)
    try:
        s.settimeout(max(0.01, timeout))
        try:
            s.connect(("127.0.0.1", port))
        except TimeoutError:
            return "slow"
        except OSError:
            return "down"
        said = _answer_of(_exchange(s, f"GET {proof.PATH}?nonce={nonce} HTTP/1.1\r\n{host}\r\n".encode("latin-1")))
        if not isinstance(said, dict) or not proof.holds(key, nonce, port, said.get("proof")):
            return "down"  # not this user's service: neither the token nor the reading goes out
        body = fastjson.dumps(reading).encode("ascii")
        head = (f"POST /api/v1/statusline HTTP/1.1\r\n{host}Authorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        answer = _answer_of(_exchange(s, head.encode("latin-1") + body))
    except TimeoutError:
        return "slow"
    except OSError:
        return "down"
    finally:
        s.close()
    return answer if isinstance(answer, dict) else "down"


def _exchange(s: "Any", request: bytes) -> bytes:
    """Send `request` and read one whole answer (its head and the body its Content-Length names)."""
    s.sendall(request)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            length = _content_length(data[:end])
            if length is not None and len(data) >= end + 4 + length:
                return data[:end + 4 + length]
        if len(data) > 1 << 20:
            return b""  # no answer of ours is this big


def _answer_of(data: bytes) -> object:
    """The JSON of a 200 answer, else None."""
    head_end = data.find(b"\r\n\r\n")
    if not data.startswith(b"HTTP/1.") or head_end < 0 or data[9:12] != b"200":
        return None
    try:
        return fastjson.loads(data[head_end + 4:])
    except ValueError:
        return None


def _content_length(head: bytes) -> int | None:
    for raw in head.split(b"\r\n")[1:]:
        name, _, value = raw.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def _local_facts(reading: dict) -> dict:
    """What Claude Code's own input tells, for when the service cannot add to it."""
    cache = reading.get("prompt_cache") or {}
    return {"session": None, "service": "down", "limits": reading.get("rate_limits") or {},
            "cache_expires_at": cache.get("expires_at"),
            # its word on warmth counts where it saw caching at all (a provider without caching is never "warm")
            "cache_warm": cache.get("warm") if cache.get("caching_observed") is not False else None,
            "recache_tokens": cache.get("recache_tokens_if_cold"),
            "context_pct": (reading.get("context_window") or {}).get("used_percentage")}


def _merge(facts: dict, answer: dict) -> dict:
    out = dict(facts, service="up", session=answer.get("session") if isinstance(answer.get("session"), dict) else None)
    if not out["limits"] and isinstance(answer.get("limits"), dict):
        out["limits"] = answer["limits"]
    if out["cache_expires_at"] is None:
        out["cache_expires_at"] = answer.get("cache_expires_at")
    out["turn"] = answer.get("turn")
    out["handoff"] = answer.get("handoff") is True
    return out


class _Wrapped:
    """The user's own status-line command, run beside ours with the same stdin, within our deadline."""

    def __init__(self, command: str, stdin: bytes, cache: str | None) -> None:
        import subprocess

        self.cache = cache
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            proc = self.proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            return
        import threading

        self.out: list[bytes] = []
        to_them, from_them = proc.stdin, proc.stdout
        assert to_them is not None and from_them is not None  # both asked for as pipes

        def feed_and_read() -> None:  # a thread: a command that ignores stdin must not block us
            try:
                to_them.write(stdin)
                to_them.close()
            except OSError:
                pass
            try:
                self.out.append(from_them.read(65536))
            except (OSError, ValueError):
                pass

        self.reader = threading.Thread(target=feed_and_read, daemon=True)
        self.reader.start()

    def text(self, until: float) -> str:
        if self.proc is None:
            return ""
        self.reader.join(max(0.0, until - time.monotonic()))
        if self.reader.is_alive() or not self.out:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            return (_read_text(self.cache) if self.cache else None) or ""
        text = self.out[0].decode("utf-8", "replace").rstrip("\n")
        if self.cache:
            _write_text(self.cache, text)
        return text


def build_line(argv: list[str], start: float) -> str:
    opts = _options(argv)
    raw, too_big = read_stdin(start + STDIN_WAIT_S)
    obj = None
    if raw and not too_big:
        try:
            obj = fastjson.loads(raw)
        except (ValueError, RecursionError):
            obj = None
    reading = parse(obj)
    facts = _local_facts(reading)
    color = opts["color"]
    folder = runtime_dir()
    state = os.path.join(folder, "statusline") if folder else None
    key = safe_session_id(reading.get("session_id")) or "_"
    if state:
        try:
            make_private_dirs(state)
        except OSError:
            state = None
    wrapped = None
    if opts["wrap"]:
        wrapped = _Wrapped(opts["wrap"], b"" if too_big else raw,
                           os.path.join(state, key + ".theirs") if state else None)
    line = None
    if state:
        cache = os.path.join(state, key + ".line")
        lock = _try_lock(os.path.join(state, key + ".lock"))
        if lock is None:  # another run is asking: never wait on it
            line = _read_text(cache) or line_mod.render(dict(facts, service="busy"), color=color)
        else:
            left = min(SERVICE_TIMEOUT_S, start + HARD_LIMIT_S - 0.2 - time.monotonic())
            answer = ask_service(folder or "", reading, left)  # `state` is set only under a folder
            if answer == "slow":
                line = _read_text(cache) or line_mod.render(dict(facts, service="busy"), color=color)
            elif isinstance(answer, dict):
                fmt = answer["format"] if isinstance(answer.get("format"), str) else line_mod.DEFAULT_FORMAT
                line = line_mod.render(_merge(facts, answer), fmt, color=color)
                before = _read_text(cache)
                if before is None:
                    _prune(state, time.time())
                if line != before:  # most runs print what the last one did: a read, not a write and a rename
                    _write_text(cache, line)
            if lock is not None and lock >= 0:
                os.close(lock)
    if line is None:
        line = line_mod.render(facts, color=color)
    if wrapped is not None:
        theirs = wrapped.text(start + HARD_LIMIT_S - 0.1)
        if theirs:
            line = f"{line}  {theirs}"
    return line


def main(argv: list[str]) -> int:
    start = time.monotonic()
    try:
        text = build_line(argv, start)
    except BaseException:  # never a traceback in Claude Code's status line
        text = PLAIN
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    return 0
