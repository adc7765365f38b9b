"""The window's Overview over a large history: GET /api/v1/overview cold and warm, next to /api/v1/report.

The overview sums the report's figures plus a per-day split from the report's scan
cache, so its first answer costs about a cold report; later ones read the caches.

    python bench/overview.py --mb 100 [--corpus DIR]
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
from bench.service_proc import ServiceProcess


def timed(svc: ServiceProcess, path: str) -> float:
    t = time.perf_counter()
    svc.get(path, timeout=600)
    return time.perf_counter() - t


def measure(corpus: Path) -> dict:
    projects = corpus / ".claude" / "projects"
    size = sum(p.stat().st_size for p in projects.rglob("*.jsonl"))
    with tempfile.TemporaryDirectory(prefix="ctxlamp-overview-") as tmp:
        with ServiceProcess(Path(tmp) / "home", corpus / ".claude") as svc:
            svc.wait_status()
            svc.wait_idle()
            out = {"corpus_mb": size / (1 << 20)}
            out["overview_30_cold_s"] = timed(svc, "/api/v1/overview?days=30")
            out["overview_30_warm_s"] = timed(svc, "/api/v1/overview?days=30")
            out["overview_7_s"] = timed(svc, "/api/v1/overview?days=7")
            out["report_warm_s"] = timed(svc, "/api/v1/report")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100, help="size of the corpus to build")
    ap.add_argument("--corpus", type=Path, help="use this corpus (DIR/.claude/projects) instead")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxlamp-corpus-") as tmp:
        if args.corpus is None:
            build(args.mb, Path(tmp))
        r = measure(args.corpus or Path(tmp))
    cold, warm = r["overview_30_cold_s"], r["overview_30_warm_s"]
    print(f"{r['corpus_mb']:.0f} MB: overview 30 days {cold:.2f} s cold, {warm:.2f} s warm; "
          f"7 days {r['overview_7_s']:.2f} s; report (warm) {r['report_warm_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
