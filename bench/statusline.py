"""`ctxlamp statusline` against a running service: wall time and CPU per run.

Starts `ctxlamp serve` on temp folders with one synthetic live session, then runs the
status-line command N times one after another (as Claude Code does, one per update), each
fed a status JSON with plan limits, and reports p50/p95/max wall time and CPU (user+system of
the child, from wait4) per run. Forms: `script` is what `ctxlamp install` writes
(`python -S .../service/statusline/fast.py`), `module` is `python -m service.cli statusline`.

    .venv/bin/python bench/statusline.py [--runs 100] [--form script|module]
    .venv/bin/python bench/statusline.py --compare [--runs 100]   # p95 against `python -S -c pass`, quiet and at load 4
    .venv/bin/python bench/statusline.py --against OTHER [--runs 100]  # this checkout's line, OTHER's and the floor, in turns
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bytecode import compile_checkout
from bench.rounds import alternating
from bench.service_proc import ServiceProcess
from tests.support import transcripts as T

SID = T.SID


class SourceService(ServiceProcess):
    """The service of this checkout (not whatever `ctxlamp` is on PATH); `root` another checkout's."""

    root = ROOT

    def start(self) -> "SourceService":
        self.home.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        with open(self.log, "wb") as log:  # `-m` from the checkout: its own `service` package comes first
            self.proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve"], env=self.env, cwd=self.root,
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


@contextlib.contextmanager
def _serving_a_session(root: Path = ROOT) -> Iterator[SourceService]:
    """A service from this checkout (or `root`) over one session, done with its startup reading."""
    with tempfile.TemporaryDirectory(prefix="ctxlamp-bench-sl-") as tmp:
        home, claude = Path(tmp) / "home", Path(tmp) / "claude"
        write_session(claude)
        service = type("CheckoutService", (SourceService,), {"root": root})
        with service(home, claude, {"CTXLAMP_LIVE_HOURS": "1000000"}) as svc:
            svc.wait_status()
            svc.wait_idle()
            yield svc


@contextlib.contextmanager
def _children_print_nowhere() -> Iterator[None]:
    """The timed commands' lines go nowhere (they inherit fd 1); the figures are printed after."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def measure(runs: int = 100, form: str = "script") -> dict:
    """Start a service, run the command `runs` times; wall and CPU figures in ms."""
    compile_checkout(ROOT)
    with _serving_a_session() as svc:
        env = dict(svc.env, PYTHONPATH=str(ROOT))
        cmd = command(form)
        with _children_print_nowhere():
            for i in range(3):  # warm: the page cache
                run_once(cmd, env, status_json(i))
            walls, cpus = [], []
            for i in range(runs):
                wall, cpu, _ = run_once(cmd, env, status_json(i))
                walls.append(wall)
                cpus.append(cpu)
        check = subprocess.run(cmd, env=env, input=status_json(0), capture_output=True, timeout=5)
        five = svc.get("/api/v1/status")["limits"]["five_hour"]["used_percentage"]
    return {"form": form, "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)),
            "runs": runs, "wall_p50_ms": 1000 * statistics.median(walls), "wall_p95_ms": 1000 * pct(walls, 0.95),
            "wall_max_ms": 1000 * max(walls), "cpu_p50_ms": 1000 * statistics.median(cpus),
            "cpu_p95_ms": 1000 * pct(cpus, 0.95), "cpu_mean_ms": 1000 * statistics.fmean(cpus),
            "line": check.stdout.decode().strip(), "five_hour_seen": five, "loadavg_after": os.getloadavg()}


def _busy(n: int) -> list[subprocess.Popen]:
    """n processes that only burn CPU (the load the comparison runs under)."""
    return [subprocess.Popen([sys.executable, "-S", "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def compare(runs: int = 100, loads: tuple[int, ...] = (0, 4)) -> dict:
    """The installed command against a bare `python -S -c pass`, both through `sh -c` as Claude Code
    runs them, interleaved (the order swaps every round); once per load (that many busy processes)."""
    import shlex

    from service.statusline.settings import command as installed_command

    compile_checkout(ROOT)
    line_cmd = installed_command(python=sys.executable)
    floor_cmd = f"{shlex.quote(sys.executable)} -S -c pass"
    phases = []
    with _serving_a_session() as svc:
        env = dict(svc.env)
        env.pop("PYTHONPATH", None)
        with _children_print_nowhere():
            for load in loads:
                busy = _busy(load)
                try:
                    cmds = {"line": ["/bin/sh", "-c", line_cmd], "floor": ["/bin/sh", "-c", floor_cmd]}
                    for i in range(3):
                        for c in cmds.values():
                            run_once(c, env, status_json(i))
                    got = alternating(runs, {name: (lambda i, cmd=cmd: run_once(cmd, env, status_json(i)))
                                             for name, cmd in cmds.items()})
                    walls = {name: [wall for wall, _, _ in rows] for name, rows in got.items()}
                    cpus = {name: [cpu for _, cpu, _ in rows] for name, rows in got.items()}
                    la = os.getloadavg()
                finally:
                    _stop(busy)
                ph = {"busy": load, "loadavg_after": la}
                for name in walls:
                    ph[name] = {"p50_ms": 1000 * statistics.median(walls[name]),
                                "p95_ms": 1000 * pct(walls[name], 0.95),
                                "cpu_p50_ms": 1000 * statistics.median(cpus[name])}
                ph["p95_ratio"] = ph["line"]["p95_ms"] / ph["floor"]["p95_ms"]
                ph["p50_ratio"] = ph["line"]["p50_ms"] / ph["floor"]["p50_ms"]
                phases.append(ph)
        check = subprocess.run(["/bin/sh", "-c", line_cmd], env=env, input=status_json(0), capture_output=True,
                               timeout=5)
    return {"runs": runs, "command": line_cmd.replace(sys.executable, "<python>").replace(str(ROOT), "<checkout>"),
            "floor": "<python> -S -c pass", "phases": phases, "line": check.stdout.decode().strip()}


def against(other: Path, runs: int = 100) -> dict:
    """This checkout's status line and `other`'s (another checkout of ctxlamp, e.g. the commit before a
    change), each against its own checkout's service, and the bare interpreter, in turns."""
    compile_checkout(ROOT)
    compile_checkout(other)
    floor = [sys.executable, "-S", "-c", "pass"]
    with _serving_a_session() as mine, _serving_a_session(other) as theirs:
        envs = {"this": dict(mine.env), "other": dict(theirs.env), "floor": dict(mine.env)}
        cmds = {"this": [sys.executable, "-S", str(ROOT / "service" / "statusline" / "fast.py")],
                "other": [sys.executable, "-S", str(other / "service" / "statusline" / "fast.py")], "floor": floor}
        with _children_print_nowhere():
            for i in range(3):
                for name, c in cmds.items():
                    run_once(c, envs[name], status_json(i))
            got = alternating(runs, {name: (lambda i, name=name, c=c: run_once(c, envs[name], status_json(i)))
                                     for name, c in cmds.items()})
        lines = {name: subprocess.run(cmds[name], env=envs[name], input=status_json(0), capture_output=True,
                                      timeout=5).stdout.decode().strip() for name in ("this", "other")}
    out: dict = {"runs": runs, "loadavg_after": os.getloadavg(), "lines": lines}
    for name, rows in got.items():
        walls, cpus = [w for w, _, _ in rows], [c for _, c, _ in rows]
        out[name] = {"p50_ms": 1000 * statistics.median(walls), "p95_ms": 1000 * pct(walls, 0.95),
                     "cpu_p50_ms": 1000 * statistics.median(cpus), "cpu_mean_ms": 1000 * statistics.fmean(cpus)}
    return out


def format_compare(r: dict) -> str:
    out = [f"`sh -c '{r['command']}'` against `sh -c '{r['floor']}'`, {r['runs']} interleaved runs each:"]
    for ph in r["phases"]:
        la = " ".join(f"{x:.2f}" for x in ph["loadavg_after"])
        out.append(f"  {ph['busy']} busy processes: line p50 {ph['line']['p50_ms']:.1f} ms p95 {ph['line']['p95_ms']:.1f} ms "
                   f"(CPU {ph['line']['cpu_p50_ms']:.1f} ms); python -S -c pass p50 {ph['floor']['p50_ms']:.1f} ms (CPU {ph['floor']['cpu_p50_ms']:.1f} ms) "
                   f"p95 {ph['floor']['p95_ms']:.1f} ms; p95 ratio {ph['p95_ratio']:.2f} (p50 {ph['p50_ratio']:.2f}); "
                   f"load average after: {la}")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--form", choices=("script", "module"), default="script")
    ap.add_argument("--compare", action="store_true",
                    help="the installed command against `python -S -c pass` through sh -c, quiet and with 4 busy processes")
    ap.add_argument("--against", type=Path, help="another checkout: its status line and this one's, in turns")
    args = ap.parse_args()
    if args.against:
        r = against(args.against.resolve(), args.runs)
        print(f"{r['runs']} runs each, in turns (python -S fast.py, each against its checkout's service):")
        for name in ("this", "other", "floor"):
            f = r[name]
            print(f"  {name:5}: p50 {f['p50_ms']:.1f} ms p95 {f['p95_ms']:.1f} ms, CPU p50 {f['cpu_p50_ms']:.1f} ms "
                  f"mean {f['cpu_mean_ms']:.1f} ms; p95 ratio to the floor {f['p95_ms'] / r['floor']['p95_ms']:.2f}")
        print(f"  load average after: {' '.join(f'{x:.2f}' for x in r['loadavg_after'])}")
        for name, line in r["lines"].items():
            print(f"  {name} line: {line}")
        return 0
    if args.compare:
        r = compare(args.runs)
        print(format_compare(r))
        print(f"  line: {r['line']}")
        print("statusline_p95_ratio=" + ",".join(f"{ph['p95_ratio']:.2f}" for ph in r["phases"]))
        return 0
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
