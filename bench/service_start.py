"""`ctxlamp serve` over a large history: start to first status, and memory after.

With a corpus of `--mb` (default 500 MB) already in CLAUDE_CONFIG_DIR/projects,
and the tokenizer set up as after the first run:
- time from starting the process to the first answer of /api/v1/status (the API
  opens before the recent sessions are read), and until they are all read
  (`scan.state` leaves `catching_up`); also the first status of a very first
  start, which builds the tokenizer's table;
- time until the service reports its startup scan done, and until its CPU goes
  quiet (less than 1% of a core over a second, three times in a row);
- RSS then (VmRSS; VmHWM is the peak; the tree adds any live child processes).

`--live-hours 0` makes every transcript an old one: the start then reads them all
with the history scan (a first start over an old history) instead of as live sessions.

    python bench/service_start.py --mb 500 [--corpus DIR] [--live-hours H]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import build
from bench.service_proc import ServiceProcess, read_proc_stat, tree_rss_mb


def wait_quiet(pid: int, started: float, timeout: float = 600.0, quiet_pct: float = 1.0, runs: int = 3) -> float:
    """Seconds from `started` until the process used < quiet_pct % CPU over `runs` consecutive seconds."""
    deadline = time.perf_counter() + timeout
    streak, prev = 0, read_proc_stat(pid)
    while time.perf_counter() < deadline:
        time.sleep(1.0)
        cur = read_proc_stat(pid)
        used = (cur["cpu_s"] + cur["children_cpu_s"]) - (prev["cpu_s"] + prev["children_cpu_s"])
        prev = cur
        streak = streak + 1 if used * 100 < quiet_pct else 0
        if streak >= runs:
            return time.perf_counter() - started - runs
    raise TimeoutError("the service did not go quiet")


def measure(corpus: Path, live_hours: float | None = None) -> dict:
    """A start as after the first run (whatever the first run left in the data folder), plus the
    first status of a very first start (an empty data folder; the install ships the tokenizer's table)."""
    projects = corpus / ".claude" / "projects"
    size = sum(p.stat().st_size for p in projects.rglob("*.jsonl"))
    files = sum(1 for _ in projects.rglob("*.jsonl"))
    with tempfile.TemporaryDirectory(prefix="ctxlamp-start-") as tmp:
        with ServiceProcess(Path(tmp) / "first", corpus / ".claude") as svc:
            first_run_status = svc.wait_status()  # the table is written before the API opens
        if (Path(tmp) / "first" / "tiktoken").is_dir():  # left only where no table was shipped
            shutil.copytree(Path(tmp) / "first" / "tiktoken", Path(tmp) / "home" / "tiktoken")
        if live_hours is not None:
            (Path(tmp) / "home").mkdir(exist_ok=True)
            (Path(tmp) / "home" / "config.toml").write_text(f"[sessions]\nlive_hours = {live_hours:g}\n")
        with ServiceProcess(Path(tmp) / "home", corpus / ".claude") as svc:
            first_status = svc.wait_status()
            caught_up = svc.wait_idle(step=0.02, leaving="catching_up")
            scan_done = svc.wait_idle()
            quiet = wait_quiet(svc.pid, svc.started)
            st = read_proc_stat(svc.pid)
            tree = tree_rss_mb(svc.pid)
            sessions = len(svc.get("/api/v1/status")["sessions"])
    return {"corpus_mb": size / (1 << 20), "files": files, "first_status_s": first_status,
            "first_run_status_s": first_run_status,
            "caught_up_s": caught_up, "scan_done_s": scan_done, "quiet_s": quiet, "rss_mb": st["rss_mb"], "hwm_mb": st["hwm_mb"],
            "tree_rss_mb": tree, "cpu_s": st["cpu_s"] + st["children_cpu_s"], "live_sessions": sessions}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--corpus", type=Path, help="an existing corpus (DIR/.claude/projects); else one is built")
    ap.add_argument("--live-hours", type=float, help="[sessions] live_hours for the timed start (0: all old)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxlamp-corpus-") as tmp:
        corpus = args.corpus or Path(tmp)
        if args.corpus is None:
            build(args.mb, corpus)
        r = measure(corpus, args.live_hours)
    print(f"{r['files']} transcripts, {r['corpus_mb']:.0f} MB: first status after {r['first_status_s']:.2f} s "
          f"(very first start, an empty data folder: {r['first_run_status_s']:.2f} s), "
          f"recent sessions read after {r['caught_up_s']:.1f} s, scan done after {r['scan_done_s']:.1f} s, CPU quiet after {r['quiet_s']:.1f} s "
          f"({r['cpu_s']:.1f} s CPU); {r['live_sessions']} live sessions")
    print(f"service_rss_mb={r['rss_mb']:.0f} (peak {r['hwm_mb']:.0f}, with children {r['tree_rss_mb']:.0f})")
    print(f"start_to_first_status_s={r['first_status_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
