"""A report worker started as a fresh interpreter (`python -m service.report.spawned`), for systems
where forking is missing (Windows) or unsafe (macOS, once system frameworks are loaded).

It imports only what its job needs: the function arrives pickled by reference (its module is
imported, nothing else of ctxlamp), then the init, then jobs, one frame each on stdin. Each
result goes back as a frame on stdout: 7 bytes of length, 1 byte error flag, the pickle. stdout
is taken for frames at once; anything the job prints goes to stderr.
"""
from __future__ import annotations

import os
import pickle
import sys
import traceback
from typing import IO, Any

LENGTH = 8  # bytes of a frame's header: 7 of length, 1 error flag


def read_frame(pipe: IO[bytes]) -> tuple[bytes, int] | None:
    """(body, flag), or None at the end of the stream."""
    head = pipe.read(LENGTH)
    if len(head) < LENGTH:
        return None
    size = int.from_bytes(head[:-1], "little")
    body = pipe.read(size)
    if len(body) < size:
        return None
    return body, head[-1]


def write_frame(pipe: IO[bytes], body: bytes, flag: int = 0) -> None:
    pipe.write(len(body).to_bytes(LENGTH - 1, "little") + bytes((flag,)))
    pipe.write(body)
    pipe.flush()


def main() -> int:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not break a frame
    jobs_in = sys.stdin.buffer
    try:
        first = read_frame(jobs_in)
        if first is None:
            return 0
        func, init = pickle.loads(first[0])
        if init is not None:
            init()
        while (frame := read_frame(jobs_in)) is not None:
            result: Any = func(pickle.loads(frame[0]))
            write_frame(out, pickle.dumps(result, protocol=5))
    except BrokenPipeError:
        return 1  # the parent is gone or stopped us
    except BaseException:  # noqa: BLE001 - any failure goes to the parent, which raises it with this traceback
        try:
            write_frame(out, traceback.format_exc().encode("utf-8", "replace"), 1)
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
