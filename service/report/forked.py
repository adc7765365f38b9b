"""Map a function over jobs in forked child processes, each result sent back as soon as it is ready.

Why not multiprocessing.Pool, for a scan that takes half a second:
- its imports and start took 11 ms before the first file was read;
- chunked tasks (needed to keep its per-task cost down) held the last results back
  until a whole chunk was done;
- a worker killed from outside leaves it waiting forever.
Here each child takes the next job number from a shared pipe (callers order jobs biggest
first, so the children finish together) and writes each pickled, length-prefixed
result to its own pipe. A thread per child reads that pipe, so a child never waits
while the parent is busy.

`pool` picks the way for the system (`start_method`): forked children where fork is safe
(Linux, BSD); fresh interpreters (`SpawnedMap`, `service/report/spawned.py`) where fork is
missing (Windows) or unsafe after system frameworks are loaded (macOS); in-process in a frozen
build, which cannot start `python -m`. Every way gives the same results.
"""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from queue import Empty, SimpleQueue
from typing import IO, Any, Self

_NUMBER = 4    # bytes of a job number in the job pipe
_LENGTH = 8    # bytes of a frame's header: 7 of length, 1 error flag


class WorkerFailed(RuntimeError):
    """A child raised, or died before sending all its results."""


def available() -> bool:
    """A pool of workers can run here (by fork, or by spawn where fork is missing)."""
    return True


def can_fork() -> bool:
    return hasattr(os, "fork")


def start_method(platform: str = sys.platform, *, has_fork: bool | None = None,
                 frozen: bool | None = None) -> str:
    """'fork', 'spawn' or 'serial' for this system (arguments: another system's, in tests)."""
    if frozen if frozen is not None else getattr(sys, "frozen", False):
        return "serial"
    if not (has_fork if has_fork is not None else can_fork()):
        return "spawn"
    if platform == "darwin" or platform.startswith("win"):
        return "spawn"
    return "fork"


# Below this much unscanned history one process is as fast as forked workers: they cost forks and
# pickled results, and hide the tokenizer load (cold reports: 8 MB took 0.11 s either way, 16 MB 0.13 s
# alone, 0.12 s in two).
POOL_MIN_BYTES = 8 * 1024 * 1024
# Spawned workers start an interpreter and import the scan (0.5 s on a loaded 2-core machine) where
# forked ones start at once: below this much unscanned history one process is as fast. A guess for
# an idle desktop, to measure there with bench/workers.py.
SPAWN_MIN_BYTES = 64 * 1024 * 1024


def min_bytes(fork_min: int, method: str | None = None) -> int:
    """The least unscanned bytes for which a pool started by `method` pays (`fork_min` for fork)."""
    method = method or start_method()
    if method == "fork":
        return fork_min
    if method in ("spawn", "fork-server"):
        return max(fork_min, SPAWN_MIN_BYTES)
    return sys.maxsize  # serial: the caller's own loop does the same work without a pool


def pool(func: Callable[[Any], Any], jobs: Sequence[Any], workers: int,
         init: Callable[[], None] | None = None, *, method: str | None = None,
         server: subprocess.Popen | None = None) -> WorkerMap:
    """func(job) for every job in `workers` processes, started the way this system allows.

    For 'spawn' and 'fork-server' (a fresh interpreter that forks the workers: for a caller that runs
    threads, on a system with fork), `func` and `init` must pickle (module-level functions,
    functools.partial). `server`: a fork server `start_fork_server` started ahead of the jobs.
    """
    method = method or start_method()
    if method == "fork":
        return ForkedMap(func, jobs, workers, init)
    if method == "spawn":
        return SpawnedMap(func, jobs, workers, init)
    if method == "fork-server":
        return SpawnedMap(func, jobs, workers, init, fork_server=True, server=server)
    if method == "serial":
        return SerialMap(func, jobs, init)
    raise ValueError(f"unknown start method {method!r}")


def start_fork_server(workers: int, preload: str | None = None) -> subprocess.Popen:
    """A fork server (service/report/spawned.py) in a process group of its own. Started ahead of its jobs,
    `preload` imported meanwhile: hand it to `pool` (method 'fork-server'), or `dismiss` it. It forks at
    most `workers`, fewer for fewer jobs."""
    from service.client.own_python import module_argv

    argv = module_argv("service.report.spawned", "--fork", str(workers), *(("--preload", preload) if preload else ()))
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)


def dismiss(server: subprocess.Popen) -> None:
    """A started fork server that got no jobs: its input closed before the first frame, it ends at once."""
    try:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(5)
    except (OSError, subprocess.TimeoutExpired):
        server.kill()
        server.wait()
    finally:
        server.stdout.close()  # type: ignore[union-attr]


class _ProcessMap:
    """What the forked and the spawned pools share: results in completion order from their reader threads
    (`_results`: ("result", pickled) | ("error", text) | ("ended", why)), and killing the workers left when
    the caller stops early."""

    _children: Sequence[Any]
    _results: Any
    expected: int
    received: int

    def __iter__(self) -> Iterator[Any]:
        for body in self.frames():
            yield pickle.loads(body)

    def frames(self) -> Iterator[bytes]:
        """The results as their workers pickled them, in the order they finish."""
        ended = 0
        while self.received < self.expected:
            kind, payload = self._results.get()
            if kind == "result":
                self.received += 1
                yield payload
            elif kind == "error":
                raise WorkerFailed(payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload)
            else:  # a child ended
                ended += 1
                if ended == len(self._children) and self.received < self.expected:
                    raise WorkerFailed(f"a worker process ended early ({payload}); "
                                       f"{self.expected - self.received} of {self.expected} jobs were not done")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.received < self.expected:
            self._kill()  # their reader threads reap them

    def _kill(self) -> None:
        raise NotImplementedError


class ForkedMap(_ProcessMap):
    """func(job) for every job, from `workers` forked children, in the order they finish.

    The children start at once, so the caller can do its own work before it
    iterates. `init` runs once in each child before its first job. Leaving the
    `with` block before every result was read (an error, say) kills them.
    """

    def __init__(self, func: Callable[[Any], Any], jobs: Sequence[Any], workers: int,
                 init: Callable[[], None] | None = None):
        self.expected = len(jobs)
        self.received = 0
        self._results: SimpleQueue = SimpleQueue()
        self._children: list[tuple[int, int]] = []  # (pid, read end of its result pipe)
        job_r, job_w = os.pipe()
        try:
            for _ in range(max(1, min(workers, len(jobs)))):
                r, w = os.pipe()
                _widen(w)
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    os.close(job_w)
                    for _, other in self._children:
                        os.close(other)
                    _child(func, jobs, init, job_r, w)  # never returns
                os.close(w)
                self._children.append((pid, r))
        except BaseException:
            os.close(job_w)
            self._kill()
            for pid, r in self._children:
                os.close(r)
                os.waitpid(pid, 0)
            raise
        finally:
            os.close(job_r)
        threading.Thread(target=_hand_out, args=(job_w, len(jobs)), daemon=True).start()
        self._readers = [threading.Thread(target=_receive, args=(pid, r, self._results), daemon=True)
                         for pid, r in self._children]
        for reader in self._readers:
            reader.start()

    def join(self) -> None:
        """Wait until every child has ended and was reaped (a process that exits next leaves none behind)."""
        for reader in self._readers:
            reader.join()

    def _kill(self) -> None:
        for pid, _ in self._children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


class SerialMap:
    """The same iteration in this process (a frozen build cannot start `python -m` workers)."""

    def __init__(self, func: Callable[[Any], Any], jobs: Sequence[Any],
                 init: Callable[[], None] | None = None) -> None:
        self.func, self.jobs, self.init = func, jobs, init
        self.expected = len(jobs)
        self.received = 0

    def __iter__(self) -> Iterator[Any]:
        if self.init is not None:
            self.init()
        for job in self.jobs:
            result = self.func(job)
            self.received += 1
            yield result

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class SpawnedMap(_ProcessMap):
    """func(job) for every job in `workers` fresh interpreters, in the order they finish.

    Each child gets the pickled (func, init), then jobs one at a time from a shared queue,
    two in flight so it never waits for the parent (biggest first, as with ForkedMap).
    A thread per child feeds it and reads its results. Leaving the `with` block early kills them.

    `fork_server`: one fresh interpreter takes every job, runs `init` once and forks the `workers`
    (service/report/spawned.py): for a caller that runs threads, where forking itself is unsafe but
    fork exists. The workers then share the interpreter's start, its imports and what `init` built.
    """

    IN_FLIGHT = 2

    def __init__(self, func: Callable[[Any], Any], jobs: Sequence[Any], workers: int,
                 init: Callable[[], None] | None = None, *, fork_server: bool = False,
                 server: subprocess.Popen | None = None) -> None:
        self.expected = len(jobs)
        self.received = 0
        self._results: SimpleQueue[tuple[str, Any]] = SimpleQueue()
        self._todo: SimpleQueue[Any] = SimpleQueue()
        for job in jobs:
            self._todo.put(job)
        header = pickle.dumps((func, init), protocol=5)  # fails here, in the caller, if func cannot pickle
        workers = max(1, min(workers, len(jobs)))
        self._group = fork_server  # the server and the workers it forks: one process group, stopped together
        self._in_flight = sys.maxsize if fork_server else self.IN_FLIGHT  # the server forks once it has every job
        self._children: list[Any] = []
        try:
            if fork_server:  # one, maybe started ahead: it forks no more workers than jobs
                self._children.append(server if server is not None else start_fork_server(workers))
            else:
                from service.client.own_python import module_argv

                argv = module_argv("service.report.spawned")
                flags = getattr(subprocess, "CREATE_NO_WINDOW", 0)  # Windows: no console window flashes up
                for _ in range(workers):
                    self._children.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                           creationflags=flags))
        except BaseException:
            self._kill()
            raise
        for child in self._children:
            threading.Thread(target=self._serve, args=(child, header), daemon=True).start()

    def _serve(self, child: Any, header: bytes) -> None:
        stdin: IO[bytes] = child.stdin
        sent = done = 0
        more = True
        try:
            write_frame(stdin, header)
            while True:
                while more and sent - done < self._in_flight:
                    try:
                        job = self._todo.get_nowait()
                    except Empty:
                        stdin.close()  # the child ends after its last result
                        more = False
                        break
                    write_frame(stdin, pickle.dumps(job, protocol=5))
                    sent += 1
                if not more and done == sent:
                    break
                frame = read_frame(child.stdout)
                if frame is None:
                    break
                body, flag = frame
                self._results.put(("error" if flag else "result", body))
                if flag:
                    break
                done += 1
        except OSError:
            pass  # the child died: its end is reported below
        finally:
            try:
                stdin.close()
            except OSError:
                pass
            code = child.wait()
            child.stdout.close()
            self._results.put(("ended", f"exit status {code}" if code >= 0 else f"killed by signal {-code}"))

    def _kill(self) -> None:
        for child in self._children:
            try:
                if self._group:
                    os.killpg(child.pid, signal.SIGKILL)  # the server's forked workers with it
                else:
                    child.kill()
            except OSError:
                pass


WorkerMap = ForkedMap | SpawnedMap | SerialMap


def _widen(fd: int) -> None:
    """A 1 MB result pipe (Linux), so a child does not wait while the parent's reader waits for the GIL."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass  # the default size works, a little slower


def _hand_out(job_w: int, count: int) -> None:
    """Job numbers into the shared pipe. Writes of at most 4096 bytes (PIPE_BUF) are atomic,
    so the pipe always holds whole numbers and a child's 4-byte read takes exactly one."""
    try:
        data = b"".join(i.to_bytes(_NUMBER, "little") for i in range(count))
        for at in range(0, len(data), 4096):
            os.write(job_w, data[at:at + 4096])
    except OSError:
        pass  # the children are gone: the parent is already stopping them
    finally:
        os.close(job_w)


def read_frame(pipe: IO[bytes]) -> tuple[bytes, int] | None:
    """(body, error flag) of the next result (or, to a spawned worker, job), or None at the end of the stream."""
    head = pipe.read(_LENGTH)
    if len(head) < _LENGTH:
        return None
    size = int.from_bytes(head[:-1], "little")
    body = pipe.read(size)
    if len(body) < size:
        return None
    return body, head[-1]


def write_frame(pipe: IO[bytes], body: bytes, flag: int = 0) -> None:
    pipe.write(len(body).to_bytes(_LENGTH - 1, "little") + bytes((flag,)))
    pipe.write(body)
    pipe.flush()


def _receive(pid: int, fd: int, results: SimpleQueue) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while (frame := read_frame(pipe)) is not None:
            body, flag = frame
            results.put(("error" if flag else "result", body))
    _, status = os.waitpid(pid, 0)
    results.put(("ended", _describe(status)))


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _child(func, jobs, init, job_r: int, w: int) -> None:
    code = 0
    try:
        with os.fdopen(w, "wb") as out:
            try:
                if init is not None:
                    init()
                while True:
                    number = os.read(job_r, _NUMBER)
                    if len(number) < _NUMBER:
                        break
                    write_frame(out, pickle.dumps(func(jobs[int.from_bytes(number, "little")]), protocol=5))
            except BaseException:  # the parent raises it, with the child's traceback
                code = 1
                write_frame(out, traceback.format_exc().encode("utf-8", "replace"), 1)
    except BaseException:
        code = 1
    finally:
        os._exit(code)  # no atexit handlers or stdio flushes of the parent's state
