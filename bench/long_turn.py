"""The service's turn records over one long turn: the cost per call must not grow with the turn.

An agent that works through hundreds of model calls after one prompt makes one turn. The service
hands every transcript entry to its turn sink (service/history/sink.py), which keeps that turn's
record for the history tools. Feeds one turn of N calls and one of 4N, each call a tool use
answered by its result, into the sink writing to a real store in a temporary folder, interleaved,
and prints the medians and their ratio.

    python bench/long_turn.py [--calls 1000] [--runs 5]    # last line: long_turn_ratio=<x>
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import alternating  # noqa: E402 (the path above first)
from service.history.sink import TurnSink  # noqa: E402
from service.store import Store  # noqa: E402


def one_turn(calls: int) -> list[dict[str, Any]]:
    """A prompt, then `calls` model calls, each using a tool whose result comes back."""
    at = "2026-11-30T10:00:00.000Z"
    base = {"sessionId": "long-turn", "cwd": "/work", "isSidechain": False, "timestamp": at}
    out: list[dict[str, Any]] = [{**base, "type": "user", "uuid": "u0", "message": {"role": "user", "content": "go"}}]
    for i in range(calls):
        last = i == calls - 1
        content = [{"type": "text", "text": "done"}] if last else \
            [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": f"/work/f{i}.py"}}]
        out.append({**base, "type": "assistant", "uuid": f"a{i}", "message": {
            "id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
            "stop_reason": "end_turn" if last else "tool_use",
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000 + i,
                      "output_tokens": 20}}})
        if not last:
            out.append({**base, "type": "user", "uuid": f"r{i}", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x = 1\n"}]}})
    return out


def feed_seconds(entries: list[dict[str, Any]], folder: Path) -> tuple[float, float]:
    store = Store(folder / "ctxlamp.db")
    try:
        sink = TurnSink(store.history.add_turn_records, clock=time.monotonic)
        session = SimpleNamespace(path=folder / "long-turn.jsonl", engine=object(), session_id="long-turn")
        t, c = time.perf_counter(), time.process_time()
        for entry in entries:
            sink(session, entry)
        sink.finish(session)
        return time.perf_counter() - t, time.process_time() - c
    finally:
        store.close()


def measure(calls: int = 1000, runs: int = 5, factor: int = 4) -> dict[str, Any]:
    def feeding(entries: list[dict[str, Any]]) -> Callable[[int], tuple[float, float]]:
        def feed(_round: int) -> tuple[float, float]:
            with tempfile.TemporaryDirectory(prefix="ctxlamp-turn-") as tmp:
                return feed_seconds(entries, Path(tmp))
        return feed

    timed = alternating(runs, {"small": feeding(one_turn(calls)), "large": feeding(one_turn(calls * factor))})
    wall = {name: [w for w, _ in got] for name, got in timed.items()}
    cpu = {name: [c for _, c in got] for name, got in timed.items()}
    med = statistics.median
    return {"calls": calls, "factor": factor, "runs": runs, "small_s": med(wall["small"]), "large_s": med(wall["large"]),
            "small_cpu_s": med(cpu["small"]), "large_cpu_s": med(cpu["large"]),
            "ratio": med(wall["large"]) / med(wall["small"])}


def format_result(r: dict[str, Any]) -> str:
    return (f"one turn of {r['calls']} calls through the service's turn sink: {r['small_s'] * 1000:.1f} ms; "
            f"{r['calls'] * r['factor']} calls: {r['large_s'] * 1000:.1f} ms; {r['factor']}x the calls cost "
            f"{r['ratio']:.2f}x the time (CPU {r['small_cpu_s'] * 1000:.1f} / {r['large_cpu_s'] * 1000:.1f} ms; "
            f"medians of {r['runs']} interleaved runs)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="calls in the shorter turn")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    r = measure(args.calls, args.runs)
    print(format_result(r))
    print(f"long_turn_ratio={r['ratio']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
