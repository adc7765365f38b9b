"""A user's very first `ctxlamp report` against a cold one, on the same corpus.

Very first: a fresh CTXLAMP_HOME, nothing set up, only what the install shipped
(the parsed o200k table in resources/). Cold: a fresh CTXLAMP_HOME whose
tokenizer folder was set up by an earlier run, and no scan cache. Runs are
interleaved; the medians of wall and CPU time are printed.

    python bench/first_run.py --corpus /tmp/corpus --runs 5
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.peers import base_env, ctxlamp_cmd, timed

# What an earlier run leaves in the data folder: o200k's file and the parsed table beside it.
SET_UP = ("import sys; from pathlib import Path; from service.engine_setup import tokenizer as ts; "
          "f = Path(sys.argv[1]); ts.ensure_o200k_cache(f); ts._save_table(f, ts._encoding_from_file(f))")


def measure(corpus: Path, runs: int) -> dict:
    env = base_env(corpus)
    out = {"very_first": [], "cold": []}
    with tempfile.TemporaryDirectory(prefix="ctxlamp-first-") as tmp:
        tokenizer = Path(tmp) / "set-up" / "tiktoken"
        subprocess.run([sys.executable, "-c", SET_UP, str(tokenizer)], check=True, cwd=ROOT)
        timed([*ctxlamp_cmd(), "--no-service"], {**env, "CTXLAMP_HOME": str(tokenizer.parent)})  # untimed: page cache
        for i in range(runs):
            for kind in ("very_first", "cold"):
                home = Path(tmp) / f"{kind}-{i}"
                if kind == "cold":
                    shutil.copytree(tokenizer, home / "tiktoken")
                out[kind].append(timed([*ctxlamp_cmd(), "--no-service"], {**env, "CTXLAMP_HOME": str(home)}))
    return {kind: {"wall_s": statistics.median(r.wall_s for r in rs), "cpu_s": statistics.median(r.cpu_s for r in rs)}
            for kind, rs in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder holding .claude/projects")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    result = measure(args.corpus, args.runs)
    for kind, fig in result.items():
        print(f"{kind:>10}: wall {fig['wall_s']:.3f} s, cpu {fig['cpu_s']:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
