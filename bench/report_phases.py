"""Where a cold `ctxlamp report` spends its time, phase by phase.

Runs the same steps as service/report/build.py's build_report (no caches),
each timed on its own, in fresh processes so every phase starts cold:
imports, discovery and fingerprints, the tokenizer load (a cold report pays it
once, in the parent, while its workers scan: o200k's table and the Python counter
for small texts), the scan serially and with forked workers, the
spend tally (fed while the workers scan), what is left of the summary
after the last file (with the collector paused, as the report runs it), and
serializing / reading the scan cache; and the floor under any Python report: every byte
read once by a bare interpreter in two processes.

    python bench/report_phases.py --corpus DIR
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PHASES = r'''
import json, os, sys, time
t0 = time.perf_counter()
from pathlib import Path
import orjson
from service.report import scan
from service.report.summary import build_summary, spend_tally
from service.report.build import load_prices
out = {"imports_s": time.perf_counter() - t0}
root, workers = Path(sys.argv[1]), int(sys.argv[2])
t = time.perf_counter()
files = scan.discover(root)
fps = {tf.path: scan.fingerprint(tf.path) for tf in files}
out["discover_s"] = time.perf_counter() - t
if sys.argv[3] == "1":  # the tokenizer alone, in this process
    from service.engine_setup.tokenizer import encode_len
    t = time.perf_counter(); encode_len("x"); out["tokenizer_load_s"] = time.perf_counter() - t
t = time.perf_counter()
c0 = os.times()
res = scan.scan(files, scan.ScanCache(None), workers=workers, fingerprints=fps)
c1 = os.times()
out["scan_s"] = time.perf_counter() - t
out["scan_cpu_s"] = (c1.user + c1.system + c1.children_user + c1.children_system) - (c0.user + c0.system + c0.children_user + c0.children_system)
prices = load_prices()
if sys.argv[4] == "1":  # the restart replay (docs/measurement.md 14) from the scan's own read, as the report runs it
    from service.engine_setup import tokenizer
    mains = frozenset(tf.path for tf in files if not tf.subagent)
    spent = [0.0]
    counted = []
    encode_len = tokenizer.encode_len
    def timed_encode_len(text):
        counted.append(text)
        t = time.perf_counter()
        try:
            return encode_len(text)
        finally:
            spent[0] += time.perf_counter() - t
    tokenizer.encode_len = timed_encode_len  # seen by this process only (one process: all of it)
    import service.engine_setup.engines as engines
    engines._counter = None  # the process's one counter (decision 445) is made again around the timed count
    t = time.perf_counter(); c0 = os.times()
    replayed = {}
    scan.scan(files, scan.ScanCache(None), workers=workers, fingerprints=fps, replay=(prices, mains), replayed=replayed)
    c1 = os.times()
    out["replay_s"] = time.perf_counter() - t
    out["replay_cpu_s"] = (c1.user + c1.system + c1.children_user + c1.children_system) - (c0.user + c0.system + c0.children_user + c0.children_system)
    out["replay_tokenizer_s"] = spent[0]
    out["replayed_files"] = len(replayed)
    # Two costs no Python report can shed, each alone: decoding the lines the engine reads (parse_line, as
    # every reader does), and tiktoken counting the distinct texts the replay counted, its encoder built.
    from service.engine.parse import SKIP_AT, parse_line
    lines = [line for path in sorted(mains) for line in Path(path).read_bytes().split(b"\n")
             if line.strip() and not SKIP_AT.match(line)]
    c0 = time.process_time()
    for line in lines:
        try:
            parse_line(line)
        except ValueError:
            pass
    out["decode_cpu_s"] = time.process_time() - c0
    # the same texts by the Python counter in a fresh state (its table, pattern and pieces built as it goes), then
    # again warm, and by tiktoken, its encoder's build apart (decision 490)
    from service.engine_setup import o200k_count
    table = tokenizer._load_table(tokenizer.default_cache_dir())
    c0 = time.process_time()
    o200k_count._bmp = None  # its pattern over str built again, as a fresh process does
    python_counter = o200k_count.O200kCounter(o200k_count.SortedRanks(table["tokens"], table["ranks"]), table["pat_str"])
    by_python = [python_counter.count(text) for text in counted]
    out["python_cold_cpu_s"] = time.process_time() - c0
    c0 = time.process_time()
    for text in counted:
        python_counter.count(text)
    out["python_warm_cpu_s"] = time.process_time() - c0
    tokenizer._encoding = None
    c0 = time.process_time()
    enc = tokenizer.load_o200k()
    out["tiktoken_build_cpu_s"] = time.process_time() - c0
    c0 = time.process_time()
    by_tiktoken = [len(enc.encode_ordinary(text)) for text in counted]
    out["tokens_cpu_s"] = time.process_time() - c0
    out["tokens_chars"] = sum(map(len, counted))
    out["python_differs"] = sum(a is not None and a != b for a, b in zip(by_python, by_tiktoken))
    try:  # another exact o200k counter, timed where it is installed, never a dependency (decision 508)
        import riptoken
    except ImportError:
        riptoken = None
    if riptoken is not None:
        c0 = time.process_time()
        rip = riptoken.CoreBPE(enc._mergeable_ranks, enc._special_tokens, enc._pat_str)
        out["riptoken_build_cpu_s"] = time.process_time() - c0
        c0 = time.process_time()
        by_rip = [len(rip.encode_ordinary(text)) for text in counted]
        out["riptoken_cpu_s"] = time.process_time() - c0
        out["riptoken_differs"] = sum(a != b for a, b in zip(by_rip, by_tiktoken))
with scan.collector_paused():
    tally = spend_tally(prices.lookup)
    t = time.perf_counter()
    for path in sorted(res):
        tally.add(path, res[path])
    out["tally_s"] = time.perf_counter() - t
    t = time.perf_counter(); build_summary(res, prices.lookup, tally=tally); out["summary_s"] = time.perf_counter() - t
t = time.perf_counter()
blob = orjson.dumps({"files": {k: {"fp": fps[k], "result": v} for k, v in res.items()}})
out["cache_dump_s"] = time.perf_counter() - t
t = time.perf_counter(); orjson.loads(blob); out["cache_load_s"] = time.perf_counter() - t
out["cache_mb"] = len(blob) / (1 << 20)
out["calls"] = sum(len(r["calls"]) for r in res.values())
out["files"] = len(files)
print(json.dumps(out))
'''


# The floor under any Python report: a bare interpreter (-S) that reads every transcript once, in two
# processes, and only counts the usage fields: no parsing, no sums. What a report does beyond it is its own.
_FLOOR = r'''
import os, sys
files = sorted(os.path.join(d, f) for d, _, names in os.walk(sys.argv[1]) for f in names if f.endswith(".jsonl"))
def count(paths):
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            n += fh.read().count(b'"usage"')
    return n
pid = os.fork()
if pid == 0:
    count(files[1::2]); os._exit(0)
count(files[0::2]); os.waitpid(pid, 0)
'''


def byte_floor(corpus: Path, runs: int = 5) -> float:
    """Median wall seconds of _FLOOR over the corpus, interpreter start included."""
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-c", _FLOOR, str(corpus / ".claude" / "projects")], check=True)
        walls.append(time.perf_counter() - t)
    return statistics.median(walls)


def phases(corpus: Path, workers: int, tokenizer_first: bool, tokenizer_dir: Path, replay: bool = False) -> dict:
    with tempfile.TemporaryDirectory(prefix="ctxlamp-phases-") as home:  # a fresh data dir, as a cold run has,
        if tokenizer_dir.is_dir():  # with the tokenizer set up, as bench/peers.py (the install ships the table)
            shutil.copytree(tokenizer_dir, Path(home) / "tiktoken")
        env = {**os.environ, "CTXLAMP_HOME": home}
        proc = subprocess.run([sys.executable, "-c", _PHASES, str(corpus / ".claude" / "projects"), str(workers),
                               "1" if tokenizer_first else "0", "1" if replay else "0"], capture_output=True, text=True, cwd=ROOT, env=env,
                              timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(corpus: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="ctxlamp-phases-tok-") as home:
        subprocess.run([sys.executable, "-c", "from service.engine_setup.tokenizer import encode_len; encode_len('x')"],
                       check=True, cwd=ROOT, env={**os.environ, "CTXLAMP_HOME": home})
        tok = Path(home) / "tiktoken"
        return {"serial_with_tokenizer_first": phases(corpus, 1, True, tok),
                "serial": phases(corpus, 1, False, tok),
                "workers": phases(corpus, os.cpu_count() or 1, False, tok),
                "replay_serial": phases(corpus, 1, False, tok, replay=True),
                "floor_s": byte_floor(corpus)}


def format_phases(r: dict) -> str:
    a, s, p = r["serial_with_tokenizer_first"], r["serial"], r["workers"]
    rows = ["| phase | seconds |", "|---|---:|",
            f"| imports (cli, channels, orjson) | {s['imports_s']:.3f} |",
            f"| discover + fingerprint {s['files']} files | {s['discover_s']:.3f} |",
            f"| tokenizer load (o200k table + the Python counter) | {a['tokenizer_load_s']:.3f} |",
            f"| scan, one process, tokenizer already loaded | {a['scan_s']:.3f} (CPU {a['scan_cpu_s']:.3f}) |",
            f"| scan, one process, tokenizer loaded on the first edit | {s['scan_s']:.3f} (CPU {s['scan_cpu_s']:.3f}) |",
            f"| scan, {os.cpu_count()} forked workers, as `ctxlamp report` runs it (the parent loads the tokenizer meanwhile and counts the edits) | {p['scan_s']:.3f} (CPU {p['scan_cpu_s']:.3f}) |",
            f"| spend tally over {s['calls']} calls (the report feeds it while its workers scan) | {s['tally_s']:.3f} |",
            f"| the rest of the summary, after the last file | {s['summary_s']:.3f} |",
            f"| scan cache: serialize (done as results arrive) / read ({s['cache_mb']:.1f} MB) | {s['cache_dump_s']:.3f} / {s['cache_load_s']:.3f} |"]
    floor = r["floor_s"]
    r = r.get("replay_serial")
    if r:
        rows.append(f"| scan with the restart replay of {r['replayed_files']} main transcripts from the same read, one "
                    f"process (the report's workers each do a share) | {r['replay_s']:.3f} (CPU {r['replay_cpu_s']:.3f}; "
                    f"counting tokens {r['replay_tokenizer_s']:.3f}) |")
        rows.append(f"| of it, alone: decoding the lines the engine reads (the parser every reader uses) / tiktoken "
                    f"counting the {r['tokens_chars'] / 1e6:.1f} M characters the replay counted, its encoder built "
                    f"| CPU {r['decode_cpu_s']:.3f} / {r['tokens_cpu_s']:.3f} |")
        rows.append(f"| those characters counted by tiktoken: its encoder's build / the count; by the Python counter: "
                    f"from a fresh state / warm ({r['python_differs']} counts differ) | CPU {r['tiktoken_build_cpu_s']:.3f} "
                    f"/ {r['tokens_cpu_s']:.3f}; {r['python_cold_cpu_s']:.3f} / {r['python_warm_cpu_s']:.3f} |")
        if "riptoken_cpu_s" in r:
            rows.append(f"| the same by riptoken (installed for the bench only): its build / the count "
                        f"({r['riptoken_differs']} counts differ from tiktoken's) | CPU {r['riptoken_build_cpu_s']:.3f} "
                        f"/ {r['riptoken_cpu_s']:.3f} |")
    rows.append(f"| the floor: a bare interpreter reads every byte once in two processes and counts `\"usage\"`, "
                f"nothing parsed (median of 5, interpreter start included) | {floor:.3f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    args = ap.parse_args(argv)
    print(format_phases(measure(args.corpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
