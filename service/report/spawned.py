"""A report worker started as a fresh interpreter (`python -m service.report.spawned`), for systems
where forking is missing (Windows) or unsafe (macOS, once system frameworks are loaded).

It imports only what its job needs: the function arrives pickled by reference (its module is
imported, nothing else of ctxlamp), then the init, then jobs, one frame each on stdin. Each
result goes back as a frame on stdout: 7 bytes of length, 1 byte error flag, the pickle. stdout
is taken for frames at once; anything the job prints goes to stderr.

With `--fork N` it is a fork server: it takes every job first, runs the init once, then forks up to
N workers (service/report/forked.py's ForkedMap; this interpreter runs no other thread when it
forks, so that is safe where the caller's process is not) and sends their results on. The
workers share what the init and the imports built instead of each starting an interpreter and
importing the readers again.

`--preload MODULE` imports the module before the first frame arrives, and calls its `preload(forks)` if it
has one (`forks`: the workers that will share what it builds, 0 when this interpreter runs the jobs): a
caller that starts the interpreter ahead of its jobs (`forked.start_fork_server`) has it ready, imports
done, when they come.
"""
from __future__ import annotations

import importlib
import os
import pickle
import sys
import traceback
from typing import IO, Any

from service.report.forked import ForkedMap, read_frame, write_frame

def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    options = dict(zip(args[::2], args[1::2]))
    forks = int(options.get("--fork", 0))
    if "--preload" in options:
        module = importlib.import_module(options["--preload"])
        getattr(module, "preload", lambda forks: None)(forks)  # what the module would build in every worker, once
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not break a frame
    jobs_in = sys.stdin.buffer
    try:
        first = read_frame(jobs_in)
        if first is None:
            return 0
        func, init = pickle.loads(first[0])
        if forks:
            return _fork_server(func, init, forks, jobs_in, out)
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


def _fork_server(func: Any, init: Any, forks: int, jobs_in: IO[bytes], out: IO[bytes]) -> int:
    jobs = []
    while (frame := read_frame(jobs_in)) is not None:
        jobs.append(pickle.loads(frame[0]))
    if init is not None:
        init()
    with ForkedMap(func, jobs, forks) as results:
        for body in results.frames():
            write_frame(out, body)
    results.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
