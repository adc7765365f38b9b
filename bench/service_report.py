"""What `ctxlamp report` costs when a service runs: its GET /api/v1/report, first and again.

Starts `ctxlamp serve` on a corpus, waits until its startup reading and history scan are done,
then times the report route (the command's path when a service answers) and the service's CPU
for it. The first answer pays the report's scan of every transcript (spend, channels); what
restarting would have saved comes from the service's own profiles, not a replay.

    python bench/service_report.py --corpus DIR [--runs 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.service_proc import ServiceProcess, read_proc_stat  # noqa: E402 (the path above first)


def measure(corpus: Path, runs: int) -> dict:
    firsts, agains, cpu_first, cpu_again = [], [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="ctxlamp-report-") as tmp, \
                ServiceProcess(Path(tmp) / "home", corpus / ".claude") as svc:
            svc.wait_status()
            svc.wait_idle()
            for wall, cpu in ((firsts, cpu_first), (agains, cpu_again)):
                c0, t = read_proc_stat(svc.pid)["cpu_s"], time.perf_counter()
                doc = svc.get("/api/v1/report", timeout=600)
                wall.append(time.perf_counter() - t)
                cpu.append(read_proc_stat(svc.pid)["cpu_s"] - c0)
            assert "restart_savings" in doc
    med = statistics.median
    return {"first_s": med(firsts), "again_s": med(agains), "first_cpu_s": med(cpu_first),
            "again_cpu_s": med(cpu_again), "segments": doc["restart_savings"]["segments"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    r = measure(args.corpus, args.runs)
    print(f"GET /api/v1/report after the service's startup scan, medians of {args.runs}: first {r['first_s']:.2f} s "
          f"(service CPU {r['first_cpu_s']:.2f} s), again {r['again_s']:.3f} s (CPU {r['again_cpu_s']:.3f} s); "
          f"restart savings over {r['segments']} segments")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
