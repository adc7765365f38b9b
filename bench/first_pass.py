"""The service's first pass beside a cold report, in alternating rounds, on the same corpus.

First pass: `ctxlamp serve` on an empty data folder (the tokenizer set up, as after the first
run) until it says its scan is `idle` (on its event stream, as the window hears it): the moment a new user's Overview and report
are complete. Its CPU to that moment (the service with the children it reaped, and its whole tree: every
process read while it lived, the fork server and the workers too); its peak memory: the service's own VmHWM, and the largest
sums of the RSS and of the PSS (shared pages counted once) of the service and its worker processes
seen while it read (sampled every 50 ms), until the report's summary it prepares after `idle` is
written.
Cold report: `ctxlamp report --json --no-service` on an empty data folder (tokenizer set up).
Each timed run follows an untimed cold report of the same build (`warm_up`): a warm page cache every time.

`--dated` first sets each transcript's modification time to its last entry's time, as a real
history has them (the corpus writes every file now, which makes all of them live sessions at a
start); only the files of the last `[sessions] live_hours` are then live.
`--code DIR` (repeatable) runs another checkout's `DIR/.venv/bin/ctxlamp` in the same rounds; `--bound`
also this checkout's first pass with the service's own counting taken out (decision 505); `--known-counts`
also its first pass with the counts its recent sessions need kept from an earlier start (decision 509).

    python bench/first_pass.py --corpus DIR [--runs 3] [--dated] [--code DIR ...] [--bound] [--known-counts]
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from calendar import timegm
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.bytecode import compile_checkout
from bench.counting_bound import UNCOUNTED
from bench.first_run import SET_UP
from bench.peers import base_env, timed
from bench.rounds import alternating
from bench.service_proc import ServiceProcess, read_proc_stat, tree_cpu_s, tree_pss_mb, tree_rss_mb

_TIME = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)')


def date_files(projects: Path) -> int:
    """Each transcript's mtime set as a real history has it: its last entry's time, moved so that the newest
    transcript was written now (the corpus dates its copies up to a year ahead). How many were dated."""
    last: dict[Path, int] = {}
    for path in projects.rglob("*.jsonl"):
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - (1 << 20)))
            stamps = _TIME.findall(f.read())
        if stamps:
            last[path] = timegm(time.strptime(stamps[-1].decode(), "%Y-%m-%dT%H:%M:%S"))
    shift = time.time() - max(last.values(), default=0)
    for path, t in last.items():
        os.utime(path, (t + shift, t + shift))
    return len(last)


# the service's log lines that mark the first pass's steps
_STEPS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO ctxlamp\.service: "
                    r"(service starting|serving on|caught up|history read in|report prepared in)")


def timeline(log: Path, launched: float) -> str:
    """Seconds from the service's launch to each step its log names (its clock, in UTC, to the millisecond)."""
    steps = []
    for line in log.read_text(errors="replace").splitlines():
        m = _STEPS.match(line)
        if m:
            at = timegm(time.strptime(m[1][:19], "%Y-%m-%d %H:%M:%S")) + int(m[1][20:]) / 1000  # the service runs in UTC
            steps.append(f"{m[2].split(' in')[0]} {at - launched:.2f}")
    return ", ".join(steps)


def warm_up(exe: str, corpus: Path, home: Path, tokenizer: Path) -> None:
    """An untimed cold report of the same build right before a timed run: the corpus and the code it imports
    are in the page cache, which this machine's host takes back within a minute or so (bench/peers.py)."""
    pre = home.with_name(home.name + "-pre")
    shutil.copytree(tokenizer, pre / "tiktoken")
    timed([exe, "report", "--json", "--no-service"], {**base_env(corpus), "CTXLAMP_HOME": str(pre)})


def first_pass(exe: str, corpus: Path, home: Path, tokenizer: Path, counts: Path | None = None) -> dict:
    warm_up(exe, corpus, home, tokenizer)
    shutil.copytree(tokenizer, home / "tiktoken")
    if counts is not None:  # `--known-counts`: the token counts an earlier start kept
        (home / "cache").mkdir(mode=0o700)
        shutil.copyfile(counts, home / "cache" / "o200k-counts.bin")
    launched = time.time()
    peak = [0.0, 0.0]
    cpu_seen: dict[int, float] = {}
    stop = threading.Event()
    with ServiceProcess(home, corpus / ".claude", exe=exe) as svc:
        def sample() -> None:
            # PSS costs the kernel about 6 ms per 150 MB process to add up (RSS 0.1 ms): taken every 50 ms it took
            # an eighth of a core from the service it measures, so it is read only when the RSS sum has grown
            # 5 MB past its last reading, and every half second
            pss_at, ticks = -1.0, 0
            while not stop.is_set():
                try:
                    rss = tree_rss_mb(svc.pid)
                    tree_cpu_s(svc.pid, cpu_seen)
                    peak[0] = max(peak[0], rss)
                    if rss >= pss_at + 5 or ticks % 10 == 0:
                        peak[1] = max(peak[1], tree_pss_mb(svc.pid))
                        pss_at = max(pss_at, rss)
                except OSError:
                    pass
                ticks += 1
                stop.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        svc.wait_status()
        idle = svc.wait_idle_told()
        at_idle = read_proc_stat(svc.pid)
        tree_cpu = tree_cpu_s(svc.pid, cpu_seen)
        # the report's summary is prepared after idle (decision 315): the peaks include it
        summary = home / "cache" / "report-last.json"
        deadline = time.monotonic() + 30
        while not summary.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        sampler.join()
        st = read_proc_stat(svc.pid)
    return {"idle_s": idle, "cpu_s": at_idle["cpu_s"] + at_idle["children_cpu_s"], "tree_cpu_s": tree_cpu,
            "hwm_mb": st["hwm_mb"],
            "tree_peak_mb": peak[0], "tree_pss_peak_mb": peak[1], "steps": timeline(home / "service.log", launched)}


def cold_report(exe: str, corpus: Path, home: Path, tokenizer: Path) -> dict:
    warm_up(exe, corpus, home, tokenizer)
    shutil.copytree(tokenizer, home / "tiktoken")
    r = timed([exe, "report", "--json", "--no-service"], {**base_env(corpus), "CTXLAMP_HOME": str(home)})
    return {"wall_s": r.wall_s, "cpu_s": r.cpu_s, "rss_mb": r.rss_mb}


# `--known-counts`: this checkout's first start with the token counts of its recent sessions known, as kept by an
# earlier start over the same corpus (decision 504): what handing the service its counts from the workers, which
# count at tiktoken's pace, could reach at best (decision 509).
KNOWN = "this, its recent sessions' counts known"


def kept_counts(exe: str, corpus: Path, home: Path, tokenizer: Path) -> Path:
    """The counts file a first start over `corpus` keeps (written as it stops), for `--known-counts`."""
    shutil.copytree(tokenizer, home / "tiktoken")
    with ServiceProcess(home, corpus / ".claude", exe=exe) as svc:
        svc.wait_status()
        svc.wait_idle_told()
    counts = home / "cache" / "o200k-counts.bin"
    if not counts.is_file():
        raise SystemExit(f"the first start kept no token counts in {counts}")
    return counts


# `--bound`: this checkout's service with its own counting taken out, as bench/counting_bound.py takes it out of
# the report (`encode_len` answers len // 4 and no counter is built: figures wrong on purpose); its fork server
# and workers, other interpreters, count as always. Against this checkout's cold report it says what the first
# pass would reach if that counting were free.
BOUND = "this, the service counting nothing"


def uncounted_service(folder: Path) -> str:
    """A command standing for `ctxlamp` that runs this checkout's service without its own counting."""
    script = folder / "ctxlamp-uncounted"
    python = shlex.quote(str(ROOT / ".venv" / "bin" / "python"))
    script.write_text(f'#!/bin/sh\nexec {python} -P -c {shlex.quote(UNCOUNTED)} "$@"\n')
    script.chmod(0o755)
    return str(script)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder holding .claude/projects")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dated", action="store_true", help="set each transcript's mtime to its last entry's time")
    ap.add_argument("--code", type=Path, action="append", default=[], help="another checkout to run alongside")
    ap.add_argument("--bound", action="store_true",
                    help="also this checkout's first pass with the service's own counting taken out")
    ap.add_argument("--known-counts", action="store_true",
                    help="also this checkout's first pass with its recent sessions' token counts known")
    args = ap.parse_args(argv)
    if args.dated:
        print(f"dated {date_files(args.corpus / '.claude' / 'projects')} transcripts")
    codes = {"this": str(ROOT / ".venv" / "bin" / "ctxlamp")}
    compile_checkout(ROOT)
    for other in args.code:
        codes[other.name] = str(other / ".venv" / "bin" / "ctxlamp")
        compile_checkout(other)
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory(prefix="ctxlamp-first-pass-") as tmp:
        tokenizer = Path(tmp) / "set-up" / "tiktoken"
        subprocess.run([sys.executable, "-c", SET_UP, str(tokenizer)], check=True, cwd=ROOT)
        jobs: dict[str, Callable[[int], dict]] = {}
        if args.bound:
            bound = uncounted_service(Path(tmp))
            jobs[f"{BOUND}: first pass"] = lambda r: first_pass(bound, args.corpus, Path(tmp) / f"bound-{r}", tokenizer)
        if args.known_counts:
            counts = kept_counts(codes["this"], args.corpus, Path(tmp) / "counts-kept", tokenizer)
            jobs[f"{KNOWN}: first pass"] = lambda r: first_pass(codes["this"], args.corpus, Path(tmp) / f"known-{r}",
                                                                tokenizer, counts)
        for name, exe in codes.items():
            jobs[f"{name}: first pass"] = lambda r, exe=exe, name=name: first_pass(
                exe, args.corpus, Path(tmp) / f"{name}-serve-{r}", tokenizer)
            jobs[f"{name}: cold report"] = lambda r, exe=exe, name=name: cold_report(
                exe, args.corpus, Path(tmp) / f"{name}-report-{r}", tokenizer)
        loads: list[float] = []

        def noting_load(job: Callable[[int], dict]) -> Callable[[int], dict]:
            def run(r: int) -> dict:
                loads.append(os.getloadavg()[0])
                return job(r)
            return run

        results = alternating(args.runs, {k: noting_load(f) for k, f in jobs.items()})
    for name, runs in results.items():
        keys = [k for k in runs[0] if k != "steps"]
        print(f"{name:>24}: " + ", ".join(f"{k} {statistics.median(r[k] for r in runs):.3f}" for k in keys)
              + f"  (runs: {', '.join(str(round(r.get('idle_s', r.get('wall_s')), 2)) for r in runs)})")
    for name in [*codes, *([BOUND] if args.bound else []), *([KNOWN] if args.known_counts else [])]:
        fp, cr = results[f"{name}: first pass"], results[f"{'this' if name in (BOUND, KNOWN) else name}: cold report"]
        ratios = sorted(a["idle_s"] / b["wall_s"] for a, b in zip(fp, cr))
        print(f"{name}: first pass to idle / cold report, per round: {', '.join(f'{x:.2f}' for x in ratios)}")
        print(f"{name}: the service's steps, seconds from its launch (its log), per round:")
        for run in fp:
            print(f"    {run['steps']}")
    print(f"1-minute load average during the rounds: {min(loads):.2f} .. {max(loads):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
