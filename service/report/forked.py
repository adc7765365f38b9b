"""Map a function over jobs in forked child processes, each result sent back as soon as it is ready.

Why not multiprocessing.Pool, for a scan that takes half a second:
- its imports and start took 11 ms before the first file was read;
- chunked tasks (needed to keep its per-task cost down) held the last results back
  until a whole chunk was done;
- a worker killed from outside leaves it waiting forever.
Here each child takes the next job number from a shared pipe (callers order jobs biggest
first, so the children finish together) and writes each pickled, length-prefixed
result to its own pipe. A thread per child reads that pipe, so a child never waits
while the parent is busy. POSIX only (os.fork); callers run serially elsewhere.
"""
from __future__ import annotations

import os
import pickle
import signal
import threading
import traceback
from queue import SimpleQueue
from typing import Any, Callable, Iterator, Sequence

_NUMBER = 4    # bytes of a job number in the job pipe
_LENGTH = 8    # bytes of a result's length prefix


class WorkerFailed(RuntimeError):
    """A child raised, or died before sending all its results."""


def available() -> bool:
    return hasattr(os, "fork")


class ForkedMap:
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
        for pid, r in self._children:
            threading.Thread(target=_receive, args=(pid, r, self._results), daemon=True).start()

    def __iter__(self) -> Iterator[Any]:
        ended = 0
        while self.received < self.expected:
            kind, payload = self._results.get()
            if kind == "result":
                self.received += 1
                yield pickle.loads(payload)
            elif kind == "error":
                raise WorkerFailed(payload)
            else:  # a child ended
                ended += 1
                if ended == len(self._children) and self.received < self.expected:
                    raise WorkerFailed(f"a worker process ended early ({payload}); "
                                       f"{self.expected - self.received} of {self.expected} jobs were not done")

    def __enter__(self) -> "ForkedMap":
        return self

    def __exit__(self, *exc) -> None:
        if self.received < self.expected:
            self._kill()  # their reader threads reap them

    def _kill(self) -> None:
        for pid, _ in self._children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


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


def _receive(pid: int, fd: int, results: SimpleQueue) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while True:
            head = pipe.read(_LENGTH)
            if len(head) < _LENGTH:
                break
            size = int.from_bytes(head[:-1], "little")
            body = pipe.read(size)
            if len(body) < size:
                break
            results.put(("error" if head[-1] else "result", body))
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
                    _send(out, pickle.dumps(func(jobs[int.from_bytes(number, "little")]), protocol=5), 0)
            except BaseException:  # the parent raises it, with the child's traceback
                code = 1
                _send(out, traceback.format_exc().encode("utf-8", "replace"), 1)
    except BaseException:
        code = 1
    finally:
        os._exit(code)  # no atexit handlers or stdio flushes of the parent's state


def _send(out, body: bytes, error: int) -> None:
    out.write(len(body).to_bytes(_LENGTH - 1, "little") + bytes((error,)))
    out.write(body)
    out.flush()
