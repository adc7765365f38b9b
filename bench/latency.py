"""Append-to-snapshot latency of the live service.

Starts `ctxlamp serve` on temp folders, subscribes to its SSE stream, and
appends a real transcript line by line at a steady rate (default 20 lines/s,
about what Claude Code writes while streaming a busy turn). For each line the
time from the write to the next `snapshot` event is one sample.

    .venv/bin/python bench/latency.py [--rate 20] [--lines 400] [--file FIXTURE.jsonl]

Prints p50/p95/max in milliseconds and the service's CPU time (LATENCY_DEBUG=1: the slow samples).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.corpus import long_session

DEFAULT = long_session()


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=20.0, help="lines per second")
    ap.add_argument("--lines", type=int, default=400, help="lines to append (the file's first N)")
    ap.add_argument("--file", type=Path, default=DEFAULT)
    args = ap.parse_args()

    from service.client.api import ApiClient

    tmp = Path(tempfile.mkdtemp(prefix="ctxlamp-latency-"))
    home, claude = tmp / "home", tmp / "claude"
    proj = claude / "projects" / "-bench"
    proj.mkdir(parents=True)
    home.mkdir()
    env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude)}
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (home / "api.json").exists():
            if time.monotonic() > deadline or proc.poll() is not None:
                print("service did not start", file=sys.stderr)
                return 1
            time.sleep(0.05)
        info = json.loads((home / "api.json").read_text())
        client = ApiClient(info)
        arrivals: list[float] = []
        ready = threading.Event()

        def listen():
            for event, _ in client.events():
                if event == "service":
                    ready.set()
                elif event == "snapshot":
                    arrivals.append(time.perf_counter())

        threading.Thread(target=listen, daemon=True).start()
        ready.wait(10)
        lines = args.file.read_bytes().splitlines(keepends=True)[: args.lines]
        dst = proj / args.file.name
        writes: list[float] = []
        period = 1.0 / args.rate
        cpu0 = _cpu(proc.pid)
        with open(dst, "ab") as out:
            start = time.perf_counter()
            for i, line in enumerate(lines):
                target = start + i * period
                delay = target - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                writes.append(time.perf_counter())  # before the write: a fast service can answer before it returns
                out.write(line)
                out.flush()
        time.sleep(1.0)
        cpu = _cpu(proc.pid) - cpu0
        samples = []
        j = 0
        for k, w in enumerate(writes):
            nxt = writes[k + 1] if k + 1 < len(writes) else float("inf")
            while j < len(arrivals) and arrivals[j] < w:
                j += 1
            if j < len(arrivals) and arrivals[j] < nxt + 1.0:
                samples.append((arrivals[j] - w) * 1000)
        size = sum(len(x) for x in lines)
        print(f"{len(lines)} lines ({size / 1e6:.1f} MB) at {args.rate:g} lines/s from {args.file.name}")
        print(f"snapshots: {len(arrivals)}; samples: {len(samples)}")
        if samples:
            print(f"append -> snapshot latency ms: p50 {pct(samples, 50):.1f}  p95 {pct(samples, 95):.1f}  "
                  f"max {max(samples):.1f}")
        print(f"service CPU during the run: {cpu:.2f} s over {len(lines) / args.rate:.1f} s")
        if os.environ.get("LATENCY_DEBUG"):
            slow = [(i, round(x, 1), len(lines[i])) for i, x in enumerate(samples) if x > 20]
            print("slow samples (line, ms, bytes):", slow[:40])
        return 0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main())
