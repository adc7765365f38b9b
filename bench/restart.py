"""A service's restart over a history it has read, and a report run alone after it.

What a user meets at every login: the first pass is done, and the start reads its recent sessions
again from byte zero (their live engines) and finds nothing else to read. One home per checkout gets
a first start, then `--runs` restarts are timed in turns (bench/rounds.py), each from the launch to
the `idle` event: its CPU and peak memory too. Then, in turns, `ctxlamp report --json --no-service`
in the same home right after the newest transcript's modification time moved a second on (the bench
moves it: the report reads that session again, as after a day's work with no service up). Then, in
turns, the first report run alone after the service: its restart cache and summary removed, which the
service does not write (its own reports take the figures from the History), so the report replays every
main transcript without scanning it (decision 510).
Use a dated corpus (`bench/first_pass.py --dated`), else every transcript is recent.

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
from bench.peers import base_env, timed  # noqa: E402
from bench.rounds import alternating  # noqa: E402
from bench.service_proc import ServiceProcess, read_proc_stat  # noqa: E402


def start(exe: str, corpus: Path, home: Path) -> dict:
    """One start of `exe`'s service over `home`, until it says idle."""
    with ServiceProcess(home, corpus / ".claude", exe=exe) as svc:
        svc.wait_status()
        idle = svc.wait_idle_told()
        st = read_proc_stat(svc.pid)
    return {"idle_s": idle, "cpu_s": st["cpu_s"] + st["children_cpu_s"], "hwm_mb": st["hwm_mb"]}


def report_after_change(exe: str, corpus: Path, home: Path) -> dict:
    """The report alone, right after the newest transcript changed (its mtime one second on)."""
    newest = max((corpus / ".claude" / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    st = newest.stat()
    os.utime(newest, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    return report_alone(exe, corpus, home)


def first_report_alone(exe: str, corpus: Path, home: Path) -> dict:
    """The report alone in a home the service filled, as the first time (no restart cache, no summary)."""
    for name in ("report-restart.json", "report-last.json"):
        (home / "cache" / name).unlink(missing_ok=True)
    return report_alone(exe, corpus, home)


def report_alone(exe: str, corpus: Path, home: Path) -> dict:
    """`ctxlamp report --json --no-service` in `home`, timed."""
    r = timed([exe, "report", "--json", "--no-service"], {**base_env(corpus), "CTXLAMP_HOME": str(home)})
    return {"wall_s": r.wall_s, "cpu_s": r.cpu_s, "hwm_mb": r.rss_mb}


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
        restarts = alternating(args.runs, {name: (lambda r, n=name: start(exes[n], args.corpus, homes[n]))
                                           for name in codes})
        reports = alternating(args.runs, {name: (lambda r, n=name: report_after_change(exes[n], args.corpus, homes[n]))
                                          for name in codes})
        firsts = alternating(args.runs, {name: (lambda r, n=name: first_report_alone(exes[n], args.corpus, homes[n]))
                                         for name in codes})
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for what, results, wall in (("restart to idle", restarts, "idle_s"),
                                ("report after a change", reports, "wall_s"),
                                ("first report alone after the service", firsts, "wall_s")):
        for name, runs in results.items():
            med = {k: statistics.median(r[k] for r in runs) for k in (wall, "cpu_s", "hwm_mb")}
            walls = ", ".join(f"{r[wall]:.2f}" for r in runs)
            print(f"{name:>12}: {what} {med[wall]:.3f} s, its CPU {med['cpu_s']:.3f} s, "
                  f"peak {med['hwm_mb']:.1f} MB  (runs: {walls})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
