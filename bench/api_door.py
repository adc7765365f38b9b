"""The local API's door under a hostile local user: what the status line's request costs meanwhile.

Starts `ctxlamp serve` under a descriptor limit (soft = hard, so the service cannot raise it) and
measures, each time over fresh connections as the status line makes them:
- GET /api/v1/status latency with N idle sockets held open (more than the limit allows);
- the latency of M clients arriving at once (a barrier), against the status line's 0.3 s budget;
- when slow clients (one header byte a second) are dropped;
- the service's CPU while the idle sockets sit there.

    .venv/bin/python bench/api_door.py [--limit 256] [--idle 300] [--together 100] [--slow 20]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.servicectl import fd_limited, running_service
from tests.support.harness import one_session_home


def ask(port: int, token: str, timeout: float = 5.0) -> float:
    """Seconds for one GET /api/v1/status over a fresh connection (raises when it fails)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                  "Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(data[:100])
    return time.monotonic() - t0


def cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"p50 {statistics.median(values) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {values[-1] * 1000:.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=256)
    ap.add_argument("--idle", type=int, default=300)
    ap.add_argument("--together", type=int, default=100)
    ap.add_argument("--slow", type=int, default=20)
    args = ap.parse_args()
    home, env = one_session_home(Path(tempfile.mkdtemp(prefix="ctxlamp-door-")), 40)
    with running_service(env, home, prefix=fd_limited(args.limit)) as (proc, info):
        port, token = info["port"], info["token"]
        print(f"ctxlamp serve pid {proc.pid}, descriptor limit {args.limit}")
        print(f"status alone (20 requests): {ms([ask(port, token) for _ in range(20)])}")

        idle, t0 = [], time.monotonic()
        for _ in range(args.idle):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        took = time.monotonic() - t0
        cpu0 = cpu_s(proc.pid)
        print(f"{args.idle} idle sockets opened in {took:.3f} s; status meanwhile (20 requests): "
              f"{ms([ask(port, token) for _ in range(20)])}")
        time.sleep(2)
        print(f"service CPU while they sit 2 s: {cpu_s(proc.pid) - cpu0 - 0.0:.2f} s (incl. the 20 requests)")
        for s in idle:
            s.close()

        barrier = threading.Barrier(args.together)
        times: list[float] = []
        failed = []

        def one() -> None:
            barrier.wait()
            try:
                times.append(ask(port, token))
            except (OSError, RuntimeError) as exc:
                failed.append(exc)

        threads = [threading.Thread(target=one) for _ in range(args.together)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        within = sum(1 for t in times if t <= 0.3)
        print(f"{args.together} clients at once: {ms(times)}; {within}/{args.together} within 0.3 s, "
              f"{len(failed)} failed")

        ends: list[float] = []
        t0 = time.monotonic()

        def slow() -> None:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            try:
                while time.monotonic() - t0 < 30:
                    s.sendall(b"X")
                    s.settimeout(1.0)
                    try:
                        if s.recv(1) == b"":
                            break
                    except TimeoutError:
                        pass
            except OSError:
                pass
            ends.append(time.monotonic() - t0)
            s.close()

        threads = [threading.Thread(target=slow) for _ in range(args.slow)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"{args.slow} slow clients (a byte a second) closed after {min(ends):.1f} .. {max(ends):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
