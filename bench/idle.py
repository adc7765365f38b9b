"""Idle CPU of `ctxlamp serve` watching 200 transcripts that do not change.

Builds 200 transcripts from the fixtures, starts the service, waits for its
startup scan to finish and a settle period, then reads utime+stime (and the
children's) from /proc/<pid>/stat before and after `--seconds` of nothing
happening. The product promises no CPU while idle (no polling timers).

    python bench/idle.py --seconds 300      # --seconds 10 for a smoke run
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import build
from bench.service_proc import ServiceProcess, read_proc_stat


def measure(seconds: float = 300.0, transcripts: int = 200, settle_s: float = 10.0) -> dict:
    with tempfile.TemporaryDirectory(prefix="ctxlamp-idle-") as tmp:
        corpus = Path(tmp) / "corpus"
        info = build(100_000, corpus, max_files=transcripts)
        with ServiceProcess(Path(tmp) / "home", corpus / ".claude") as svc:
            first_status = svc.wait_status()
            ready = svc.wait_idle()
            time.sleep(settle_s)
            before = read_proc_stat(svc.pid)
            t0 = time.monotonic()
            time.sleep(seconds)
            after = read_proc_stat(svc.pid)
            elapsed = time.monotonic() - t0
    cpu = (after["cpu_s"] - before["cpu_s"]) + (after["children_cpu_s"] - before["children_cpu_s"])
    return {"transcripts": info["files"], "corpus_mb": info["bytes"] / (1 << 20), "seconds": elapsed,
            "cpu_s": cpu, "cpu_pct_of_one_core": 100 * cpu / elapsed, "rss_mb": after["rss_mb"],
            "first_status_s": first_status, "scan_done_s": ready}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--transcripts", type=int, default=200)
    args = ap.parse_args(argv)
    r = measure(args.seconds, args.transcripts)
    print(f"{r['transcripts']} transcripts ({r['corpus_mb']:.0f} MB); scan done after {r['scan_done_s']:.1f} s; "
          f"idle for {r['seconds']:.0f} s: {r['cpu_s']:.3f} s CPU, RSS {r['rss_mb']:.0f} MB")
    print(f"idle_cpu_pct={r['cpu_pct_of_one_core']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
