"""Replay cost of one long segment: the time per call must not grow with the segment's length.

Builds one transcript of about 2,000 calls and one of 4x as many, both a single segment, by
repeating the real-CLI long-session fixture (tests/fixtures) without its compaction: each copy
gets fresh message, request, tool-use and entry ids (the session id stays), and its times
follow the previous copy's, so the calls keep the fixture's own pace. Then replays both as
`ctxlamp replay --jsonl` does (every event serialized), interleaved, and prints the medians
and their ratio. The token counter is warmed first, so the figures are the engine's own cost.

    python bench/long_segment.py [--calls 2000] [--runs 5]    # last line: long_segment_ratio=<x>
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import long_session
from bench.rounds import alternating
from service.engine_setup.engines import load_prices, replay_file, shared_counter

_ID = re.compile(rb'"(msg_[A-Za-z0-9_]+|req_[A-Za-z0-9_]+|toolu_[A-Za-z0-9_]+)"')
_UUID = re.compile(rb'(?<![0-9a-f])([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f])')
_TIME = re.compile(rb'"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')


def _fresh(copy: int, keep: bytes) -> Callable[[re.Match[bytes]], bytes]:
    def sub(match: re.Match[bytes]) -> bytes:
        old = match.group(1)
        if old == keep:
            return match.group(0)
        digest = hashlib.sha1(old + b"|" + str(copy).encode()).hexdigest()
        if old[:1] in (b"m", b"r", b"t") and b"_" in old:
            prefix = old.split(b"_", 1)[0]
            return b'"' + prefix + b"_" + digest[:24].encode() + b'"'
        h = digest[:32]
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}".encode()
    return sub


def _time(raw: bytes) -> datetime:
    return datetime.fromisoformat(raw.decode())  # Python 3.11 reads the "Z"


def _shifted(shift: timedelta) -> Callable[[re.Match[bytes]], bytes]:
    def sub(match: re.Match[bytes]) -> bytes:
        t = (_time(match.group(1)) + shift).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return b'"' + t.encode() + b'"'
    return sub


def one_segment(copies: int, out: Path) -> dict[str, Any]:
    """`copies` copies of the long-session fixture, compaction lines dropped, one after another in time."""
    src = long_session()
    session = src.stem.encode()
    lines = [ln for ln in src.read_bytes().splitlines(keepends=True) if b'"compact_boundary"' not in ln]
    data = b"".join(lines)
    times = [_time(m.group(1)) for m in _TIME.finditer(data)]
    span = max(times) - min(times) + timedelta(seconds=1)
    with open(out, "wb") as fh:
        for copy in range(copies):
            body = data
            if copy:
                body = _UUID.sub(_fresh(copy, session), body)
                body = _ID.sub(_fresh(copy, session), body)
                body = _TIME.sub(_shifted(span * copy), body)
            fh.write(body)
    return {"path": out, "bytes": out.stat().st_size}


def replay_seconds(path: Path) -> tuple[float, int, int, float]:
    """Wall seconds of a full replay (every event serialized), the calls, the segments seen and CPU seconds."""
    prices = load_prices()
    counter = shared_counter()
    t0 = time.perf_counter()
    c0 = time.process_time()
    calls = 0
    segments = 0
    for ev in replay_file(path, prices, counter=counter):
        orjson.dumps(ev)
        calls += ev["event"] == "call"
        if ev["event"] == "end":
            segments = len(ev["segments"])
    return time.perf_counter() - t0, calls, segments, time.process_time() - c0


def measure(calls: int = 2000, runs: int = 5, factor: int = 4) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="ctxlamp-long-"))
    try:
        per_copy = replay_seconds(one_segment(1, work / "one.jsonl")["path"])[1]  # also warms the tokenizer
        copies = max(1, round(calls / per_copy))
        small = one_segment(copies, work / "small.jsonl")
        large = one_segment(copies * factor, work / "large.jsonl")
        def replaying(path: Path) -> Callable[[int], tuple[float, int, int, float, float]]:
            return lambda _round: (*replay_seconds(path), os.getloadavg()[0])

        got = alternating(runs, {"small": replaying(small["path"]), "large": replaying(large["path"])})
        times = {name: [r[0] for r in rows] for name, rows in got.items()}
        cpu = {name: [r[3] for r in rows] for name, rows in got.items()}
        info = {name: (rows[-1][1], rows[-1][2]) for name, rows in got.items()}
        loads = [r[4] for rows in got.values() for r in rows]
        med = {k: statistics.median(v) for k, v in times.items()}
        med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
        return {"runs": runs, "factor": factor,
                "small_calls": info["small"][0], "large_calls": info["large"][0],
                "segments": (info["small"][1], info["large"][1]),
                "small_mb": small["bytes"] / (1 << 20), "large_mb": large["bytes"] / (1 << 20),
                "small_s": med["small"], "large_s": med["large"], "ratio": med["large"] / med["small"],
                "small_all": times["small"], "large_all": times["large"],
                "small_cpu_s": med_cpu["small"], "large_cpu_s": med_cpu["large"],
                "cpu_ratio": med_cpu["large"] / med_cpu["small"],
                "loadavg_1m": (min(loads), max(loads))}
    finally:
        for p in work.iterdir():
            p.unlink()
        work.rmdir()


def format_result(r: dict[str, Any]) -> str:
    return (f"one segment, {r['small_calls']} calls ({r['small_mb']:.0f} MB): {r['small_s']:.2f} s "
            f"({1e6 * r['small_s'] / r['small_calls']:.0f} us/call); {r['large_calls']} calls ({r['large_mb']:.0f} MB): "
            f"{r['large_s']:.2f} s ({1e6 * r['large_s'] / r['large_calls']:.0f} us/call); "
            f"{r['factor']}x the calls cost {r['ratio']:.2f}x the time (CPU {r['small_cpu_s']:.2f} s against "
            f"{r['large_cpu_s']:.2f} s: {r['cpu_ratio']:.2f}x; medians of {r['runs']} interleaved runs; "
            f"segments seen {r['segments'][0]}/{r['segments'][1]}; 1-minute load average "
            f"{r['loadavg_1m'][0]:.2f} .. {r['loadavg_1m'][1]:.2f})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls in the shorter segment")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    r = measure(args.calls, args.runs)
    print(format_result(r))
    print(f"long_segment_ratio={r['ratio']:.2f} cpu_ratio={r['cpu_ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
