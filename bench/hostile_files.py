"""Hostile files beside a good transcript: the service's memory, /status latency and stop time, and the report's.

For each hostile file (default config: lines up to 128 MB), in a fresh folder
with one good transcript: `ctxlamp serve` is started (the 200 MB transcript is
moved in after that, so /status is measured while it is read), /api/v1/status
polled every 0.1 s for `--watch` seconds (slowest answer kept), VmHWM (peak
RSS) read from /proc, then SIGTERM and the time to exit; `ctxlamp report
--json --no-service` is timed with its peak RSS (with its forked workers,
sampled every 20 ms). "none" is the good folder alone.

    python bench/hostile_files.py [--watch 5] [--only fifo,endless_line_1GB]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.service_proc import tree_rss_mb
from service.client.api import ApiClient
from tests.support import transcripts as T
from tests.support.servicectl import running_service


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


KINDS = {
    "none": lambda d: None,
    "fifo": lambda d: os.mkfifo(d / "x.jsonl"),
    "symlink_to_dev_zero": lambda d: (d / "z.jsonl").symlink_to("/dev/zero"),
    "symlink_loop": lambda d: ((d / "a.jsonl").symlink_to(d / "b.jsonl"), (d / "b.jsonl").symlink_to(d / "a.jsonl")),
    "folder": lambda d: (d / "x.jsonl").mkdir(),
    "endless_line_1GB": lambda d: _sparse(d / "y.jsonl", 1 << 30),
    "valid_transcript_200MB": lambda d: T.write_big_tool_session(d / "v.jsonl", 200),
    "denied_as_nobody": lambda d: ((d / "w.jsonl").write_bytes(T.to_bytes(T.growing_session(3, prefix="w"))),
                                   (d / "w.jsonl").chmod(0)),
}
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]  # when root runs the bench
APPEARS_WHILE_SERVING = {"valid_transcript_200MB"}  # moved in after the start: /status measured during its read


def _proc_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def measure(kind: str, watch: float) -> dict:
    base = Path(tempfile.mkdtemp(prefix="ctxlamp-hostile-bench-"))
    try:
        home, claude = base / "home", base / "claude"
        project = claude / "projects" / "-home-user-proj"
        project.mkdir(parents=True)
        home.mkdir()
        (project / f"{T.SID}.jsonl").write_bytes(T.to_bytes(T.growing_session(12, reads=4)))
        env = dict(os.environ, CTXLAMP_HOME=str(home), CLAUDE_CONFIG_DIR=str(claude), HOME=str(home))
        # the tokenizer set up first, as after a first run
        subprocess.run([sys.executable, "-m", "service.cli", "replay", str(project / f"{T.SID}.jsonl"), "--jsonl"],
                       cwd=ROOT, env=env, capture_output=True, check=True)
        later = base / "later"
        later.mkdir()
        KINDS[kind](later if kind in APPEARS_WHILE_SERVING else project)
        prefix = AS_NOBODY if kind.endswith("_as_nobody") and os.geteuid() == 0 else []
        if prefix:
            base.chmod(0o755)
            for root, dirs, files in os.walk(base):
                for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                    shutil.chown(name, "nobody", "nogroup")
        with running_service(env, home, timeout=120, prefix=tuple(prefix)) as (proc, info):
            client = ApiClient(info, timeout=30)
            for path in later.iterdir():
                path.rename(project / path.name)
            slowest, answers = 0.0, 0
            end = time.monotonic() + watch
            while time.monotonic() < end:
                t = time.monotonic()
                client.get("/api/v1/status")
                slowest = max(slowest, time.monotonic() - t)
                answers += 1
                time.sleep(0.1)
            status = client.get("/api/v1/status")
            peak = _proc_kb(proc.pid, "VmHWM") / 1024
            now = _proc_kb(proc.pid, "VmRSS") / 1024
            t = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
            stop = time.monotonic() - t
        t = time.monotonic()
        with tempfile.TemporaryFile() as out_file:
            rep = subprocess.Popen([*prefix, sys.executable, "-m", "service.cli", "report", "--json", "--no-service"],
                                   cwd=ROOT, env=env, stdout=out_file, stderr=subprocess.DEVNULL)
            report_peak = 0.0
            while rep.poll() is None:  # the report and its forked workers
                try:
                    report_peak = max(report_peak, tree_rss_mb(rep.pid))
                except (OSError, KeyError, ValueError):
                    pass
                time.sleep(0.02)
            report_s = time.monotonic() - t
            out_file.seek(0)
            out = out_file.read()
        doc = json.loads(out)
        return {"kind": kind, "status_answers": answers, "slowest_status_s": round(slowest, 3),
                "rss_peak_mb": round(peak), "rss_end_mb": round(now), "stop_s": round(stop, 2), "exit": code,
                "skipped": [r["reason"] for r in status["service"]["skipped_files"]],
                "report_s": round(report_s, 2), "report_rss_peak_mb": round(report_peak),
                "report_total_usd": doc["spend"]["total_usd"], "report_calls": doc["spend"]["calls"],
                "report_skipped": [r["reason"] for r in doc["data_quality"]["skipped_files"]],
                "report_long_lines": doc["data_quality"]["long_lines"]}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--watch", type=float, default=5.0)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    kinds = [k for k in KINDS if not args.only or k in args.only.split(",")]
    for kind in kinds:
        print(json.dumps(measure(kind, args.watch)), flush=True)


if __name__ == "__main__":
    main()
