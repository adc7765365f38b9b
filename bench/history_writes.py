"""The service's thread's share of its first pass: writing what the workers read into the history.

The first pass's workers replay every old main transcript; the service's own thread writes each
batch of their reads (turn records, sessions, segment profiles, scan states) into its store while
the workers go on, on the same cores. This reads the corpus's old main transcripts as a worker
does (untimed), then writes them into a fresh store in the pass's batches, timed (CPU of the
writing thread, and wall).

    python bench/history_writes.py --corpus DIR [--runs 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder holding .claude/projects")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxlamp-history-writes-") as tmp:
        os.environ.update(HOME=str(args.corpus), CLAUDE_CONFIG_DIR=str(args.corpus / ".claude"), TZ="UTC",
                          CTXLAMP_HOME=str(Path(tmp) / "read"))
        from service.client.paths import app_paths
        from service.config import load
        from service.daemon import first_pass
        from service.daemon.persist import Persistence
        from service.daemon.runtime import engine_config
        from service.engine_setup.engines import load_prices
        from service.report import scan

        cfg = load(Path(tmp) / "no-config.toml")
        first_pass.init_worker({}, scan.DEFAULT_MAX_LINE, load_prices(None), engine_config(cfg), True)
        reads = []
        for tf in scan.discover(args.corpus / ".claude" / "projects"):
            if not tf.subagent:
                path, _, _, read = first_pass.read_one((tf, True))
                if read is not None:
                    reads.append((path, read))
        print(f"{len(reads)} old main transcripts: {sum(len(r.turns) for _, r in reads)} turns, "
              f"{sum(len(r.profiles) for _, r in reads)} segment profiles")
        cpus, walls = [], []
        for run in range(args.runs):
            os.environ["CTXLAMP_HOME"] = str(Path(tmp) / f"store-{run}")  # a fresh store each time
            persist = Persistence.open(app_paths(), cfg)
            cpu, wall = time.thread_time(), time.perf_counter()
            for at in range(0, len(reads), first_pass.BATCH_FILES):
                persist.record_history(reads[at:at + first_pass.BATCH_FILES])
            cpus.append(time.thread_time() - cpu)
            walls.append(time.perf_counter() - wall)
            persist.close()
        print(f"written in batches of {first_pass.BATCH_FILES} files: CPU {statistics.median(cpus):.3f} s, "
              f"wall {statistics.median(walls):.3f} s (medians of {args.runs}; CPU per run "
              f"{', '.join(f'{c:.3f}' for c in cpus)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
