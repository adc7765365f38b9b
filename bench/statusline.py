"""`ctxlamp statusline` against a running service: wall time and CPU per run.

Starts `ctxlamp serve` on temp folders with one synthetic live session, then runs the
status-line command N times one after another (as Claude Code does, one per update), each
fed a status JSON with plan limits, and reports p50/p95/max wall time and CPU (user+system of
the child, from wait4) per run. Forms: `script` is what `ctxlamp install` writes
(`python -S .../service/statusline/fast.py`), `module` is `python -m service.cli statusline`.

    .venv/bin/python bench/statusline.py [--runs 100] [--form script|module]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.service_proc import ServiceProcess  # noqa: E402
from tests.support import transcripts as T  # noqa: E402

SID = T.SID


class SourceService(ServiceProcess):
    """The service of this checkout (not whatever `ctxlamp` is on PATH)."""

    def start(self) -> "SourceService":
        self.home.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve"], env=self.env, cwd=ROOT,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self


def write_session(claude: Path, calls: int = 40) -> None:
    folder = claude / "projects" / "-home-user-proj"
    folder.mkdir(parents=True, exist_ok=True)
    entries = [T.prompt("start", 0)]
    entries += [T.call(f"msg_{i}", 5 + i * 4, cr=15000 + i * 2500, cw5=2500, out=300) for i in range(calls)]
    (folder / f"{SID}.jsonl").write_bytes(b"".join((json.dumps(e) + "\n").encode() for e in entries))


def status_json(i: int) -> bytes:
    now = int(time.time())
    return json.dumps({
        "session_id": SID, "transcript_path": "/x.jsonl", "cwd": "/home/user/proj", "version": "2.1.328",
        "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
        "cost": {"total_cost_usd": 1.0 + i / 100, "total_duration_ms": 1000 * i},
        "context_window": {"total_input_tokens": 60000 + i, "context_window_size": 200000, "used_percentage": 30},
        "prompt_cache": {"warm": True, "expires_at": now + 240, "ttl": 300, "requests": i, "misses": 1},
        "rate_limits": {"five_hour": {"used_percentage": 30 + i / 10, "resets_at": now + 7200},
                        "seven_day": {"used_percentage": 12, "resets_at": now + 400000}},
    }).encode()


def command(form: str) -> list[str]:
    if form == "script":
        return [sys.executable, "-S", str(ROOT / "service" / "statusline" / "fast.py")]
    return [sys.executable, "-m", "service.cli", "statusline"]


def run_once(cmd: list[str], env: dict, data: bytes) -> tuple[float, float, bytes]:
    """(wall s, CPU s of the child, its output)."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child: stdin from the pipe, stdout to a file we read back
        os.dup2(r, 0)
        os.close(w)
        os.execve(cmd[0], cmd, env)
    os.close(r)
    os.write(w, data)
    os.close(w)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, b""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def measure(runs: int = 100, form: str = "script") -> dict:
    """Start a service, run the command `runs` times; wall and CPU figures in ms."""
    # An installed package has its bytecode compiled (pip does it); this checkout may run with
    # PYTHONDONTWRITEBYTECODE, which would time the compiler instead: compile what the command imports.
    import compileall

    compileall.compile_dir(str(ROOT / "service" / "statusline"), quiet=1)
    compileall.compile_file(str(ROOT / "service" / "__init__.py"), quiet=1)
    compileall.compile_file(str(ROOT / "service" / "cli.py"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="ctxlamp-bench-sl-") as tmp:
        home, claude = Path(tmp) / "home", Path(tmp) / "claude"
        write_session(claude)
        with SourceService(home, claude, {"CTXLAMP_LIVE_HOURS": "1000000"}) as svc:
            svc.wait_status()
            svc.wait_idle()
            env = dict(svc.env, PYTHONPATH=str(ROOT))
            cmd = command(form)
            devnull = os.open(os.devnull, os.O_WRONLY)
            saved = os.dup(1)
            os.dup2(devnull, 1)  # the children's lines go nowhere; the figures are printed after
            try:
                for i in range(3):  # warm: the page cache
                    run_once(cmd, env, status_json(i))
                walls, cpus = [], []
                for i in range(runs):
                    wall, cpu, _ = run_once(cmd, env, status_json(i))
                    walls.append(wall)
                    cpus.append(cpu)
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(devnull)
            check = subprocess.run(cmd, env=env, input=status_json(0), capture_output=True, timeout=5)
            five = svc.get("/api/v1/status")["limits"]["five_hour"]["used_percentage"]
    return {"form": form, "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)),
            "runs": runs, "wall_p50_ms": 1000 * statistics.median(walls), "wall_p95_ms": 1000 * pct(walls, 0.95),
            "wall_max_ms": 1000 * max(walls), "cpu_p50_ms": 1000 * statistics.median(cpus),
            "cpu_p95_ms": 1000 * pct(cpus, 0.95), "cpu_mean_ms": 1000 * statistics.fmean(cpus),
            "line": check.stdout.decode().strip(), "five_hour_seen": five, "loadavg_after": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--form", choices=("script", "module"), default="script")
    args = ap.parse_args()
    r = measure(args.runs, args.form)
    print(f"statusline ({r['form']}: {r['command']}), {r['runs']} runs, service up")
    print(f"  wall  p50 {r['wall_p50_ms']:.1f} ms  p95 {r['wall_p95_ms']:.1f} ms  max {r['wall_max_ms']:.1f} ms")
    print(f"  cpu   p50 {r['cpu_p50_ms']:.1f} ms  p95 {r['cpu_p95_ms']:.1f} ms  mean {r['cpu_mean_ms']:.1f} ms per run")
    print(f"  line: {r['line']}")
    print(f"  limits seen by the service: five_hour {r['five_hour_seen']}%")
    print(f"  load average after: {' '.join(f'{x:.2f}' for x in r['loadavg_after'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
