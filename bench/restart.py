"""A service's restart over a history it has read: to `idle`, its CPU, its peak memory.

What a user meets at every login: the first pass is done, and the start reads its recent sessions
again from byte zero (their live engines) and finds nothing else to read. One home per checkout gets
a first start, then `--runs` restarts are timed in turns (bench/rounds.py), each from the launch to
the `idle` event. Use a dated corpus (`bench/first_pass.py --dated`), else every transcript is recent.

    python bench/restart.py --corpus DIR [--runs 5] [--code DIR ...]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bytecode import compile_checkout  # noqa: E402
from bench.rounds import alternating  # noqa: E402
from bench.service_proc import ServiceProcess, read_proc_stat  # noqa: E402


def start(exe: str, corpus: Path, home: Path) -> dict:
    """One start of `exe`'s service over `home`, until it says idle."""
    with ServiceProcess(home, corpus / ".claude", exe=exe) as svc:
        svc.wait_status()
        idle = svc.wait_idle_told()
        st = read_proc_stat(svc.pid)
    return {"idle_s": idle, "cpu_s": st["cpu_s"] + st["children_cpu_s"], "hwm_mb": st["hwm_mb"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder holding .claude/projects")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--code", type=Path, action="append", default=[], help="another checkout to run alongside")
    args = ap.parse_args(argv)
    codes = {"this": ROOT, **{other.name: other for other in args.code}}
    for root in codes.values():
        compile_checkout(root)
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory(prefix="ctxlamp-restart-") as tmp:
        exes = {name: str(root / ".venv" / "bin" / "ctxlamp") for name, root in codes.items()}
        homes = {name: Path(tmp) / name for name in codes}
        for name, exe in exes.items():
            start(exe, args.corpus, homes[name])  # the first start: its first pass, the caches
        results = alternating(args.runs, {name: (lambda r, n=name: start(exes[n], args.corpus, homes[n]))
                                          for name in codes})
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("idle_s", "cpu_s", "hwm_mb")}
        walls = ", ".join(f"{r['idle_s']:.2f}" for r in runs)
        print(f"{name:>12}: restart to idle {med['idle_s']:.3f} s, its CPU {med['cpu_s']:.3f} s, "
              f"peak {med['hwm_mb']:.1f} MB  (runs: {walls})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
