"""Append-to-snapshot latency of `ctxlamp serve` (p50/p95/p99) with a writer at 20 lines/s.

Starts the real service (CTXLAMP_HOME and CLAUDE_CONFIG_DIR in a temp folder),
then appends the lines of a fixture transcript (fresh ids) to a new transcript
the way Claude Code does (open, append one line, close). Every written line gets
a unique "now" timestamp; a snapshot names the newest entry it has seen in
`updated_at`, so a line is reflected by the first snapshot event
(GET /api/v1/events, SSE) whose `updated_at` is at or after that line's time:
the latency is the time from the write to that event. Only lines whose time
does show up as some snapshot's `updated_at` are timed (line kinds the engine
does not date are not). With --poll, /api/v1/status is polled every 5 ms instead.

(bench/latency.py is a simpler take by the service's author: the time from each
write to the next snapshot event, whichever change it reflects.)

    python bench/snapshot_latency.py --lines 400 --rate 20
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
from datetime import datetime, timezone
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import long_session, rewrite
from bench.service_proc import ServiceProcess, read_proc_stat



def ms_key(ts: str | None) -> int | None:
    """An ISO time as integer milliseconds since the epoch (None when unreadable)."""
    if not isinstance(ts, str):
        return None
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return round(t.timestamp() * 1000)


class Arrivals:
    """(arrival time, `updated_at` in ms) of every snapshot received, in order."""

    def __init__(self):
        self.seen: list[tuple[float, int]] = []
        self.lock = threading.Lock()
        self.events = 0

    def saw(self, snap: dict) -> None:
        now = time.perf_counter()
        key = ms_key(snap.get("updated_at"))
        with self.lock:
            self.events += 1
            if key is not None:
                self.seen.append((now, key))

    def latencies_ms(self, written: dict[int, float]) -> list[float]:
        """Per written line the engine dates: from its write to the first snapshot that has seen it."""
        registered = {key for _, key in self.seen}
        out = []
        for key, t_write in sorted(written.items()):
            if key not in registered:
                continue  # a line kind that does not move `updated_at`: nothing to time
            hit = next((t for t, k in self.seen if k >= key and t >= t_write), None)
            if hit is not None:
                out.append((hit - t_write) * 1000)
        return out


def listen_sse(svc: ServiceProcess, arrivals: Arrivals, stop: threading.Event, ready: threading.Event) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", svc.api["port"], timeout=1.0)
    conn.request("GET", "/api/v1/events", headers={"Authorization": f"Bearer {svc.api['token']}",
                                                   "Accept": "text/event-stream"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"/api/v1/events answered {resp.status}")
    ready.set()
    event, data = None, []
    try:
        while not stop.is_set():
            try:
                raw = resp.fp.readline()
            except OSError:  # the 1 s read timeout: look at `stop` again
                continue
            if not raw:
                break
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif line == "":
                if event == "snapshot" and data:
                    try:
                        arrivals.saw(json.loads("\n".join(data)))
                    except ValueError:
                        pass
                event, data = None, []
    finally:
        conn.close()


def poll_status(svc: ServiceProcess, arrivals: Arrivals, stop: threading.Event, ready: threading.Event) -> None:
    ready.set()
    while not stop.is_set():
        try:
            for snap in svc.get("/api/v1/status")["sessions"]:
                arrivals.saw(snap)
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.005)


def fixture_lines(path: Path, limit: int) -> list[dict]:
    data = rewrite(path.read_bytes(), copy=4242, vary=False)
    out = []
    for line in data.split(b"\n"):
        if line.strip():
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
        if len(out) >= limit:
            break
    return out


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def measure(lines: int = 400, rate: float = 20.0, poll: bool = False, fixture: Path | None = None,
            settle_s: float = 2.0) -> dict:
    entries = fixture_lines(fixture or long_session(), lines)
    with tempfile.TemporaryDirectory(prefix="ctxlamp-latency-") as tmp:
        home, claude = Path(tmp) / "home", Path(tmp) / "claude"
        session = entries[0].get("sessionId") or "bench-latency"
        transcript = claude / "projects" / "-bench-latency" / f"{session}.jsonl"
        transcript.parent.mkdir(parents=True)
        arrivals, stop, ready = Arrivals(), threading.Event(), threading.Event()
        written: dict[int, float] = {}
        with ServiceProcess(home, claude) as svc:
            svc.wait_status()
            svc.wait_idle()
            mode = "polling /api/v1/status" if poll else "SSE /api/v1/events"
            listener = threading.Thread(target=poll_status if poll else listen_sse,
                                        args=(svc, arrivals, stop, ready), daemon=True)
            listener.start()
            if not ready.wait(10):
                raise RuntimeError("could not subscribe to the service")
            cpu0 = read_proc_stat(svc.pid)["cpu_s"]
            period, last_ms = 1.0 / rate, 0
            t_next = t_start = time.perf_counter()
            try:
                for entry in entries:
                    now_ms = max(round(time.time() * 1000), last_ms + 1)
                    last_ms = now_ms
                    if "timestamp" in entry:
                        stamp = datetime.fromtimestamp(now_ms / 1000, timezone.utc)
                        entry["timestamp"] = stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
                    line = orjson.dumps(entry) + b"\n"
                    # the clock starts before the write: the service may answer before write() returns here
                    written[now_ms] = time.perf_counter()
                    with open(transcript, "ab") as fh:  # as Claude Code appends: open, write, close
                        fh.write(line)
                    t_next += period
                    time.sleep(max(0.0, t_next - time.perf_counter()))
                writing_s = time.perf_counter() - t_start
                time.sleep(settle_s)
            finally:
                stop.set()
            st = read_proc_stat(svc.pid)
        listener.join(timeout=3)
    lat_ms = arrivals.latencies_ms(written)
    return {"mode": mode, "lines_written": len(written), "rate_per_s": rate, "snapshot_events": arrivals.events,
            "lines_timed": len(lat_ms),
            "p50_ms": percentile(lat_ms, 0.50), "p95_ms": percentile(lat_ms, 0.95),
            "p99_ms": percentile(lat_ms, 0.99), "max_ms": max(lat_ms) if lat_ms else float("nan"),
            "mean_ms": statistics.fmean(lat_ms) if lat_ms else float("nan"),
            "service_cpu_s": st["cpu_s"] - cpu0, "writing_s": writing_s, "service_rss_mb": st["rss_mb"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--rate", type=float, default=20.0, help="lines per second")
    ap.add_argument("--poll", action="store_true", help="poll /api/v1/status instead of listening to SSE")
    ap.add_argument("--fixture", type=Path, help="a transcript to replay (default: the long-session fixture)")
    args = ap.parse_args(argv)
    r = measure(args.lines, args.rate, args.poll, args.fixture)
    print(f"{r['lines_written']} lines at {r['rate_per_s']:g}/s; {r['lines_timed']} timed (the lines that move a "
          f"snapshot's updated_at); {r['snapshot_events']} snapshot events ({r['mode']}); service CPU "
          f"{r['service_cpu_s']:.2f} s while writing for {r['writing_s']:.0f} s")
    print(f"latency_p50_ms={r['p50_ms']:.1f} latency_p95_ms={r['p95_ms']:.1f} latency_p99_ms={r['p99_ms']:.1f} "
          f"max_ms={r['max_ms']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
