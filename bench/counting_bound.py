"""What exact token counting costs a cold report: the report as users run it, against the same report with
its counting taken out, and ccusage `daily`, in alternating rounds on one corpus.

The restart replay counts o200k tokens of every text Read, Write and Edit put in the context (docs/
measurement.md section 5), so a cold report first builds tiktoken's encoder (0.2-0.3 s, in the parent,
before its workers fork) and its workers then count. The second command runs the same report with
`encode_len` answering len(text) // 4 and no encoder built: its figures are wrong on purpose, and its time
is what the report would take if counting cost nothing: the bound on what any faster exact counter could
give (decision 501).

Each timed run follows an untimed run of the same command (decision 499), ctxlamp's in a fresh data folder
with the tokenizer set up, as bench/peers.py runs it.

    python bench/counting_bound.py --corpus DIR [--runs 7] [--no-ccusage]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.bytecode import compile_checkout
from bench.peers import base_env, cold_timed, ctxlamp_cmd, default_cache, install, timed, warm_timed
from bench.rounds import alternating

# `ctxlamp report` with counting taken out: no encoder, no Python counter, a length for a count
UNCOUNTED = """
import sys
from service.engine_setup import tokenizer
tokenizer.encode_len = lambda text: len(text) // 4
tokenizer.load_o200k = lambda *args, **kwargs: None
tokenizer.warm = lambda: None
from service.cli import entry
sys.argv = ["ctxlamp", *sys.argv[1:]]
entry()
"""


def uncounted_cmd() -> list[str]:
    python = ROOT / ".venv" / "bin" / "python"
    return [str(python) if python.exists() else sys.executable, "-P", "-c", UNCOUNTED, "report", "--json"]


def measure(corpus: Path, runs: int, ccusage: Path | None) -> dict:
    compile_checkout(ROOT)
    env = base_env(corpus)
    homes = Path(tempfile.mkdtemp(prefix="ctxlamp-bench-bound-"))
    try:
        timed(ctxlamp_cmd(), {**env, "CTXLAMP_HOME": str(homes / "warmup")})  # the tokenizer set up

        jobs = {"cold report": lambda r: cold_timed(ctxlamp_cmd(), env, homes, f"cold-{r}"),
                "cold report, counting taken out": lambda r: cold_timed(uncounted_cmd(), env, homes, f"uncounted-{r}")}
        if ccusage is not None:
            cc_cmd = [str(ccusage), "claude", "daily", "--json", "--offline"]
            jobs["ccusage daily"] = lambda r: warm_timed(cc_cmd, env)
        got = alternating(runs, jobs)
    finally:
        shutil.rmtree(homes, ignore_errors=True)
    out = {name: {"wall_s": statistics.median(r.wall_s for r in rs), "cpu_s": statistics.median(r.cpu_s for r in rs),
                  "walls": [round(r.wall_s, 3) for r in rs]} for name, rs in got.items()}
    base = out.get("ccusage daily")
    for s in out.values():
        s["vs_ccusage"] = s["wall_s"] / base["wall_s"] if base else None
    cold, bound = out["cold report"], out["cold report, counting taken out"]
    out["counting_share"] = 1 - bound["wall_s"] / cold["wall_s"]
    return out


def format_result(out: dict) -> str:
    rows = ["| command | median wall s | median CPU s | / ccusage | runs |", "|---|---:|---:|---:|---|"]
    for name, s in out.items():
        if isinstance(s, dict):
            ratio = f"{s['vs_ccusage']:.2f}" if s["vs_ccusage"] is not None else ""
            rows.append(f"| {name} | {s['wall_s']:.3f} | {s['cpu_s']:.3f} | {ratio} | "
                        f"{', '.join(f'{w:.2f}' for w in s['walls'])} |")
    rows.append(f"\nexact counting: {out['counting_share']:.0%} of the cold report's wall time")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder laid out as DIR/.claude/projects")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cache", type=Path, default=default_cache(), help="where bench/peers.py installs ccusage")
    ap.add_argument("--no-ccusage", action="store_true", help="the two reports only")
    args = ap.parse_args(argv)
    ccusage = None if args.no_ccusage else install(args.cache).ccusage
    print(format_result(measure(args.corpus, args.runs, ccusage)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
