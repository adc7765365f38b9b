"""ctxlamp's report against the tools users would pick instead, in one run.

Installs pinned peers into a cache folder (never into the project):
- ccusage, the static Rust binary npm serves for Linux
  (`@ccusage/ccusage-linux-x64@20.0.24`), run as `ccusage claude daily --json --offline`;
- claude-monitor 4.0.0 from PyPI in its own venv, driven through its own loader
  and daily aggregator by bench/claude_monitor_daily.py (it has no one-shot mode).
Then runs them and `ctxlamp report --json` on the same corpus, interleaved, several
times, and reports median wall time, CPU time (user+sys of the child and the
children it waited for, from os.wait4) and peak RSS (ru_maxrss of the command as
GNU time reports it: the largest single process of the tree, not the sum of a
worker pool).

ctxlamp runs cold (a fresh CTXLAMP_HOME with the tokenizer set up, as after the first
run: no scan cache) and then warm (the
same home again: an unchanged history), and as users run it: with a `ctxlamp serve` started
on the corpus beforehand, its startup reading done, answering the command. Every tool gets HOME and
CLAUDE_CONFIG_DIR pointed at the corpus and TZ=UTC (ctxlamp's days are UTC).
Every timed run follows an untimed run of the same command (ctxlamp's cold one in a throwaway home), so
every tool reads its own files and the corpus from a warm page cache each time: this machine's host takes
cached pages back within a minute or so (real-wild's 48 MB read again from disk in 0.4 s against 0.03 s),
and whichever tool ran first after that paid for it.

    python bench/peers.py --corpus /tmp/corpus --runs 5 [--no-monitor] [--no-service] [--json out.json]
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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from bench.bytecode import compile_checkout  # noqa: E402

CCUSAGE_PKG = "@ccusage/ccusage-linux-x64"
CCUSAGE_VERSION = "20.0.24"
MONITOR_PKG = "claude-monitor"
MONITOR_VERSION = "4.0.0"


def default_cache() -> Path:
    """$CTXLAMP_BENCH_CACHE, else ~/.cache/ctxlamp-bench (or under $XDG_CACHE_HOME)."""
    if os.environ.get("CTXLAMP_BENCH_CACHE"):
        return Path(os.environ["CTXLAMP_BENCH_CACHE"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "ctxlamp-bench"


@dataclass
class Peers:
    ccusage: Path
    monitor_python: Path

    @property
    def monitor_driver(self) -> Path:
        return ROOT / "bench" / "claude_monitor_daily.py"


def install(cache: Path, quiet: bool = True) -> Peers:
    """The pinned peers in `cache`, installed on first use (npm and PyPI clients)."""
    cache.mkdir(parents=True, exist_ok=True)
    npm_dir = cache / f"ccusage-{CCUSAGE_VERSION}"
    binary = npm_dir / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
    if not binary.is_file():
        subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(npm_dir),
                        f"{CCUSAGE_PKG}@{CCUSAGE_VERSION}"], check=True,
                       stdout=subprocess.DEVNULL if quiet else None)
    binary.chmod(0o755)  # the tarball ships it without the executable bit
    venv = cache / f"claude-monitor-{MONITOR_VERSION}"
    py = venv / "bin" / "python"
    if not (venv / ".installed").is_file():
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        f"{MONITOR_PKG}=={MONITOR_VERSION}"], check=True)
        (venv / ".installed").write_text(f"{MONITOR_PKG}=={MONITOR_VERSION}\n")
    return Peers(ccusage=binary, monitor_python=py)


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    rss_mb: float
    out: bytes = b""


GNU_TIME = "/usr/bin/time"


def timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> Run:
    """Wall, CPU (user+sys of the child and its reaped children) and peak RSS of one command.

    Linux carries a process's pre-exec peak RSS across exec, so wait4's ru_maxrss
    of a child forked from this (large) Python would never be below our own RSS.
    When GNU time is there, it launches the command (it is small) and reports
    the command's peak; wall and CPU still come from our own wait4.
    """
    gnu = Path(GNU_TIME).exists()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(prefix="ctxlamp-bench-rss-") as rss_file:
        argv = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *cmd] if gnu else cmd
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=cwd)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        data, errors = out.read(), err.read()
        rss_kb = float(ru.ru_maxrss)
        if gnu:
            try:
                rss_kb = float(Path(rss_file.name).read_text().split()[-1])
            except (OSError, ValueError, IndexError):
                pass
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {errors.decode(errors='replace')[-2000:]}")
    return Run(wall, ru.ru_utime + ru.ru_stime, rss_kb / 1024, data)


def base_env(corpus: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
    env.update(HOME=str(corpus), CLAUDE_CONFIG_DIR=str(corpus / ".claude"), TZ="UTC", NO_COLOR="1")
    return env


def ctxlamp_cmd() -> list[str]:
    exe = ROOT / ".venv" / "bin" / "ctxlamp"
    return [str(exe) if exe.exists() else shutil.which("ctxlamp") or "ctxlamp", "report", "--json"]


def warm_timed(cmd: list[str], env: dict[str, str]) -> Run:
    """`cmd` timed right after an untimed run of it: it reads from a warm page cache (decision 499)."""
    timed(cmd, env)
    return timed(cmd, env)


def cold_timed(cmd: list[str], env: dict[str, str], homes: Path, name: str) -> Run:
    """ctxlamp's `cmd` timed in the fresh home homes/name, right after an untimed run of it in another fresh
    home: no cache of its own, a warm page cache (decision 499)."""
    timed(cmd, {**env, "CTXLAMP_HOME": str(fresh_home(homes, name + "-pre"))})
    return timed(cmd, {**env, "CTXLAMP_HOME": str(fresh_home(homes, name))})


def fresh_home(homes: Path, name: str) -> Path:
    """homes/name: no scan cache and no report cache, but the tokenizer set up as homes/warmup has it (a cold
    report run there first), as after a user's first run."""
    home = homes / name
    if (homes / "warmup" / "tiktoken").is_dir():
        shutil.copytree(homes / "warmup" / "tiktoken", home / "tiktoken")
    return home


SERVED = "ctxlamp, service running"  # `ctxlamp report` as users run it: a service answers


@dataclass
class Tool:
    name: str
    runs: list[Run] = field(default_factory=list)

    def median(self, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in self.runs)

    def summary(self) -> dict:
        return {"wall_s": self.median("wall_s"), "cpu_s": self.median("cpu_s"), "rss_mb": self.median("rss_mb"),
                "walls": [round(r.wall_s, 4) for r in self.runs]}


def compare_run(corpus: Path, peers: Peers, runs: int = 5, with_monitor: bool = True, with_service: bool = True) -> dict:
    """Interleaved runs of every tool; medians, ratios and the last outputs."""
    compile_checkout(ROOT)
    env = base_env(corpus)
    projects = corpus / ".claude" / "projects"
    tools = {name: Tool(name) for name in ("ccusage", "claude-monitor", "ctxlamp cold", "ctxlamp warm", SERVED)}
    if not with_monitor:
        del tools["claude-monitor"]
    if not with_service:
        del tools[SERVED]
    cc_cmd = [str(peers.ccusage), "claude", "daily", "--json", "--offline"]
    mon_cmd = [str(peers.monitor_python), str(peers.monitor_driver), str(projects)]
    homes = Path(tempfile.mkdtemp(prefix="ctxlamp-bench-home-"))
    outputs: dict[str, bytes] = {}
    service = None
    try:
        if with_service:  # started and done with its startup reading before any round: the state users are in
            sys.path.insert(0, str(ROOT))
            from bench.service_proc import ServiceProcess

            service = ServiceProcess(homes / "service", corpus / ".claude").start()
            service.wait_status()
            service.wait_idle()
            timed(ctxlamp_cmd(), {**env, "CTXLAMP_HOME": str(service.home)})  # untimed, as every tool's first run
        def ctx_env(home: Path) -> dict[str, str]:
            return {**env, "CTXLAMP_HOME": str(home)}

        timed(ctxlamp_cmd(), ctx_env(homes / "warmup"))  # sets the tokenizer up, as a user's first run does

        load = []
        for i in range(runs):
            order = ["ccusage", "claude-monitor", "ctxlamp"] if with_monitor else ["ccusage", "ctxlamp"]
            order = order[i % len(order):] + order[:i % len(order)]  # rotate: no tool always runs first
            for name in order:
                if name == "ccusage":
                    r = warm_timed(cc_cmd, env)
                    tools["ccusage"].runs.append(r)
                    outputs["ccusage"] = r.out
                elif name == "claude-monitor":
                    r = warm_timed(mon_cmd, env)
                    tools["claude-monitor"].runs.append(r)
                    outputs["claude-monitor"] = r.out
                else:
                    r = cold_timed(ctxlamp_cmd(), env, homes, f"run{i}")
                    tools["ctxlamp cold"].runs.append(r)
                    outputs["ctxlamp"] = r.out
                    tools["ctxlamp warm"].runs.append(timed(ctxlamp_cmd(), ctx_env(homes / f"run{i}")))
                    if service is not None:
                        r = warm_timed(ctxlamp_cmd(), ctx_env(service.home))
                        tools[SERVED].runs.append(r)
                        outputs[SERVED] = r.out
            load.append(os.getloadavg()[0])
    finally:
        if service is not None:
            service.stop()
        shutil.rmtree(homes, ignore_errors=True)
    size = sum(p.stat().st_size for p in projects.rglob("*.jsonl"))
    summary = {name: t.summary() for name, t in tools.items()}
    cc = summary["ccusage"]["wall_s"]
    for name, s in summary.items():
        s["ratio_vs_ccusage"] = s["wall_s"] / cc if cc > 0 else None
        s["mb_per_s"] = size / (1 << 20) / s["wall_s"] if s["wall_s"] > 0 else None
        # the same ratio within each round: how much of it is the machine moving between rounds
        s["round_ratios"] = sorted(round(r.wall_s / c.wall_s, 3) for r, c in zip(tools[name].runs, tools["ccusage"].runs))
    return {"corpus": str(corpus), "corpus_mb": size / (1 << 20), "runs": runs, "loadavg_1m": load,
            "tools": summary, "outputs": {k: v.decode() for k, v in outputs.items()},
            "commands": {"ccusage": "HOME=<corpus> CLAUDE_CONFIG_DIR=<corpus>/.claude TZ=UTC "
                                    "ccusage claude daily --json --offline",
                         "claude-monitor": "<venv>/bin/python bench/claude_monitor_daily.py <corpus>/.claude/projects",
                         "ctxlamp cold": "CTXLAMP_HOME=<fresh dir, tokenizer set up> .venv/bin/ctxlamp report --json",
                         "ctxlamp warm": "the same again with the same CTXLAMP_HOME (unchanged history)",
                         SERVED: "CTXLAMP_HOME=<the home of a `ctxlamp serve` started on the corpus, its startup "
                                 "reading done> .venv/bin/ctxlamp report --json"}}


def format_table(result: dict) -> str:
    rows = ["| tool | median wall s | MB/s | median CPU s | peak RSS MB | wall / ccusage | per round (min .. max) |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for name, s in result["tools"].items():
        rr = s.get("round_ratios") or []
        spread = f"{rr[0]:.2f} .. {rr[-1]:.2f}" if rr and name != "ccusage" else ""
        rows.append(f"| {name} | {s['wall_s']:.3f} | {s['mb_per_s']:.0f} | {s['cpu_s']:.3f} | {s['rss_mb']:.0f} | "
                    f"{s['ratio_vs_ccusage']:.2f} | {spread} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder laid out as DIR/.claude/projects")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=default_cache(),
                    help="where the peers are installed (default $CTXLAMP_BENCH_CACHE or ~/.cache/ctxlamp-bench)")
    ap.add_argument("--no-monitor", action="store_true", help="skip claude-monitor")
    ap.add_argument("--no-service", action="store_true", help="skip the report a running service answers")
    ap.add_argument("--json", type=Path, help="write the full result (with outputs) here")
    args = ap.parse_args(argv)
    peers = install(args.cache)
    result = compare_run(args.corpus, peers, args.runs, with_monitor=not args.no_monitor,
                         with_service=not args.no_service)
    print(f"corpus {result['corpus_mb']:.1f} MB, {args.runs} interleaved runs, "
          f"1-min loadavg {min(result['loadavg_1m']):.2f}..{max(result['loadavg_1m']):.2f}")
    print(format_table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    ratio = result["tools"]["ctxlamp cold"]["ratio_vs_ccusage"]
    print(f"ratio_vs_ccusage={ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
