"""Report workers by start method: the same cold scan with forked children, spawned interpreters
(what macOS and Windows use) and one process, on a corpus built from the fixtures.

    python bench/workers.py --mb 50 --workers 2 [--repeat 3]

Prints the median wall time of each method and checks they give the same results.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # the checkout on sys.path first
from service.report import forked, scan


def timed(files: list[scan.TranscriptFile], workers: int, method: str) -> tuple[float, dict]:
    real = forked.start_method
    forked.start_method = lambda *a, **k: method  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        out = scan.scan(files, scan.ScanCache(None), workers=workers if method != "one process" else 1,
                        pool_min_bytes=0)
        return time.perf_counter() - t0, out
    finally:
        forked.start_method = real  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        corpus.build(args.mb, Path(tmp))
        files = scan.discover(next(Path(tmp).rglob("projects")))
        size = sum(Path(f.path).stat().st_size for f in files) / 1e6
        methods = (["fork"] if forked.can_fork() else []) + ["spawn", "one process"]
        results, first = {}, None
        for method in methods:
            times = []
            for _ in range(args.repeat):
                took, out = timed(files, args.workers, method)
                times.append(took)
                first = out if first is None else first
                assert out == first, f"{method} gave different results"
            results[method] = statistics.median(times)
        print(f"cold scan of {len(files)} files, {size:.1f} MB, {args.workers} workers, median of {args.repeat}:")
        for method, took in results.items():
            print(f"  {method:12s} {took:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
