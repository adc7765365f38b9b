"""The engine's per-entry work in the report's replay, counted in instructions so that small changes show.

On a shared 2-core machine a CPU-time difference of a few percent is lost in the noise; the
instructions Valgrind's callgrind counts are the same from run to run (a hash seed fixed) to a
tenth of a percent. The workload is the replay `ctxlamp report` runs over each main transcript
(service/report/restart.py's Replay, fed whole buffers as the scan's workers feed it), over a
spread of the corpus's main transcripts (every seventh file, up to --mb), read into memory first.
It is run twice: the first pass warms the token counts (tiktoken, a floor), so the second is the
engine, its parser and the replay's own loop. The figure is the second pass's instructions: the
whole process with both passes less the whole process with the first only.

    python bench/replay_work.py --corpus DIR/.claude/projects [--mb 60] [--cpu-runs 5]

`--scan` adds the report's scan of each file, the replay fed from its split (what a report's worker
does with a main transcript); `--history` is what the service's first pass does with an old main
transcript (the scan, the engine keeping whole profiles, the turn records). `--cpu-runs` also gives the warm pass's CPU time over the whole corpus (min and median), for scale.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORK = r'''
import os, sys
from pathlib import Path
from service.engine import LineSplitter
from service.engine_setup.engines import shared_counter
from service.engine_setup.tokenizer import encode_len
from service.report import scan
from service.report.build import load_prices
from service.report.restart import Replay
root, limit, passes, cpu_runs = Path(sys.argv[1]), int(sys.argv[2]) << 20, int(sys.argv[3]), int(sys.argv[4])
with_scan = sys.argv[5] in ("scan", "history")
with_history = sys.argv[5] == "history"
mains = sorted((tf for tf in scan.discover(root) if not tf.subagent), key=lambda tf: tf.path)
prices = load_prices()
bufs, total = [], 0
for i, tf in enumerate(mains):
    if limit and (i % 7 or total > limit):
        continue
    with open(tf.path, "rb") as fh:
        raw = fh.read()
    data, stop = LineSplitter().feed_buffer(raw)
    bufs.append((tf, raw if with_scan else data, stop))
    total += stop
encode_len("x")
shared_counter().count("warm")

def replay_all():
    for tf, data, stop in bufs:
        if with_history:  # as the service's first pass reads an old main transcript: whole profiles, turn records
            from service.daemon.first_pass import _HistoryReplay
            from service.engine import EngineConfig

            history = _HistoryReplay(tf.path, prices, EngineConfig(), True)
            scan.scan_chunks([data], tf, scan.SizeMemo(), defer_tokens=True, replay=history.replay)
            history.close(os.stat(tf.path))
            continue
        replay = Replay(tf.path, prices)
        if with_scan:  # as a report's worker reads a main transcript: the scan and the replay from one split
            scan.scan_chunks([data], tf, scan.SizeMemo(), defer_tokens=True, replay=replay)
        else:
            replay.feed_buffer(data, stop, 0)
            replay.at_end(0, 0)
        replay.segments()

for _ in range(passes):
    replay_all()
times = []
for _ in range(cpu_runs):
    t0 = os.times()
    replay_all()
    t1 = os.times()
    times.append(t1.user + t1.system - t0.user - t0.system)
print(len(bufs), total, *times)
'''


def _instructions(corpus: str, mb: int, passes: int, what: str) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          "-c", _WORK, corpus, str(mb), str(passes), "0", what],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True).stderr
    found = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if found is None:
        raise SystemExit("callgrind gave no instruction count:\n" + out[-2000:])
    return int(found.group(1).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="a projects folder (bench/corpus.py's .claude/projects)")
    ap.add_argument("--mb", type=int, default=60, help="megabytes of main transcripts replayed under callgrind")
    ap.add_argument("--cpu-runs", type=int, default=0, help="also time this many warm passes over the whole corpus")
    ap.add_argument("--scan", action="store_true", help="the report's scan of each file too, the replay fed from its split")
    ap.add_argument("--history", action="store_true",
                    help="the service's first pass instead: the scan, whole profiles and the turn records")
    args = ap.parse_args()
    what = "history" if args.history else "scan" if args.scan else "replay"
    if shutil.which("valgrind"):
        run, setup = _instructions(args.corpus, args.mb, 2, what), _instructions(args.corpus, args.mb, 1, what)
        print(f"warm {what} of ~{args.mb} MB: {run - setup:,} instructions (callgrind)")
    else:
        print("valgrind not found: no instruction count")
    if args.cpu_runs:
        out = subprocess.run([sys.executable, "-c", _WORK, args.corpus, "0", "1", str(args.cpu_runs), what], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
        times = [float(t) for t in out[2:]]
        print(f"warm {what} of all {out[0]} main transcripts ({int(out[1]) >> 20} MB): CPU min {min(times):.3f} s, "
              f"median {statistics.median(times):.3f} s over {len(times)} runs")


if __name__ == "__main__":
    main()
