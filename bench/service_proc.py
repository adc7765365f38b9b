"""`ctxlamp serve` as a child process for the service benchmarks.

Starts the real service with CTXLAMP_HOME and CLAUDE_CONFIG_DIR in temp
folders, finds it through api.json like any client, and always stops it
(SIGTERM, then SIGKILL) so no benchmark leaves a process behind.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ctxlamp_exe() -> str:
    exe = ROOT / ".venv" / "bin" / "ctxlamp"
    return str(exe) if exe.exists() else "ctxlamp"


def read_proc_stat(pid: int) -> dict:
    """CPU seconds (own and reaped children) and memory of a live process, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) "; fields[0] is the state
    utime, stime, cutime, cstime = (int(x) / ticks for x in fields[11:15])
    mem = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            mem[key] = int(value.split()[0]) / 1024  # kB -> MB
    return {"cpu_s": utime + stime, "children_cpu_s": cutime + cstime,
            "rss_mb": mem.get("VmRSS", 0.0), "hwm_mb": mem.get("VmHWM", 0.0)}


def tree_rss_mb(pid: int) -> float:
    """RSS of the process and its live children (a worker pool, if any).

    Children are listed per thread: the service starts its first pass's workers from a thread of
    its own, so every thread's list is read, not only the main thread's."""
    return _tree_sum(pid, lambda p: read_proc_stat(p)["rss_mb"])


def tree_pss_mb(pid: int) -> float:
    """PSS of the process and its live children: each shared page (the interpreter, its libraries) counted
    once over the processes that map it, where the RSS sum counts it in each: the memory they take."""
    def pss(p: int) -> float:
        for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
        return 0.0
    return _tree_sum(pid, pss)


def tree_cpu_s(pid: int, seen: dict[int, float]) -> float:
    """CPU seconds the process's tree has used so far: each process's own time, as last read while it lived
    (`seen`, kept between calls by the caller, who reads often enough). The process's children figure counts a
    child only once it is reaped, and a fork server's workers only once it reaped them and was reaped."""
    ticks = os.sysconf("SC_CLK_TCK")

    def own(p: int) -> float:
        raw = Path(f"/proc/{p}/stat").read_text()
        fields = raw[raw.rindex(")") + 2:].split()
        seen[p] = (int(fields[11]) + int(fields[12])) / ticks
        return 0.0

    _tree_sum(pid, own)
    return sum(seen.values())


def _tree_sum(pid: int, measure: Callable[[int], float]) -> float:
    total = measure(pid)
    kids: set[str] = set()
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                kids.update((task / "children").read_text().split())
            except OSError:  # the thread ended meanwhile
                pass
    except OSError:
        pass
    for kid in sorted(kids):
        try:
            total += _tree_sum(int(kid), measure)
        except (OSError, ValueError):
            pass
    return total


class ServiceProcess:
    def __init__(self, home: Path, claude_dir: Path, extra_env: dict[str, str] | None = None, exe: str | None = None):
        self.exe = exe or ctxlamp_exe()  # another checkout's, for a bench that runs two alternately
        self.home, self.claude_dir = Path(home), Path(claude_dir)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
        self.env.update(CTXLAMP_HOME=str(self.home), CLAUDE_CONFIG_DIR=str(self.claude_dir), TZ="UTC",
                        HOME=str(self.home), **(extra_env or {}))
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.api: dict | None = None
        self.log = self.home / "bench-serve.log"

    def start(self) -> "ServiceProcess":
        self.home.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([self.exe, "serve"], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def _api(self) -> dict | None:
        try:
            doc = json.loads((self.home / "api.json").read_text())
            return doc if doc.get("pid") == self.pid else None
        except (OSError, ValueError):
            return None

    def get(self, path: str, timeout: float = 5.0) -> dict:
        if self.api is None:
            raise RuntimeError("the service has not published api.json yet")
        req = urllib.request.Request(f"http://127.0.0.1:{self.api['port']}{path}",
                                     headers={"Authorization": f"Bearer {self.api['token']}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def wait_status(self, timeout: float = 120.0, step: float = 0.01) -> float:
        """Seconds from start until /api/v1/status first answers."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ctxlamp serve exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            if self.api is None:
                self.api = self._api()
            if self.api is not None:
                try:
                    self.get("/api/v1/status", timeout=timeout)
                    return time.perf_counter() - self.started
                except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                    pass
            time.sleep(step)
        raise TimeoutError("no status from ctxlamp serve")

    def wait_idle(self, timeout: float = 600.0, step: float = 0.1, leaving: str | None = None) -> float:
        """Seconds from start until the service reports its startup scan done (or the `leaving` state left)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            try:
                scan = self.get("/api/v1/status", timeout=timeout)["service"].get("scan") or {}
                if (scan.get("state") != leaving) if leaving else (scan.get("state") == "idle"):
                    return time.perf_counter() - self.started
            except (urllib.error.URLError, ConnectionError, OSError, ValueError, KeyError):
                pass
            time.sleep(step)
        raise TimeoutError("the service's scan did not finish")

    def wait_idle_told(self, timeout: float = 600.0) -> float:
        """Seconds from start until the service says its startup scan is done, learnt as the window learns it:
        from the event stream. Asking /api/v1/status 50 times a second to see it sooner took 2.5 ms of the
        service's CPU each time: an eighth of a core the service's own reading then lacked."""
        from service.client.api import ApiClient

        if self.api is None:
            raise RuntimeError("wait_status first")
        at: list[float] = []

        def already_idle(_sock) -> None:  # subscribed first, then asked once: no event is missed
            if ((self.get("/api/v1/status", timeout=timeout)["service"].get("scan") or {}).get("state")) == "idle":
                at.append(time.perf_counter() - self.started)

        for event, data in ApiClient(info=self.api, timeout=timeout).events(on_open=already_idle):
            if at:
                return at[0]
            if event == "service" and isinstance(data, dict) and (data.get("scan") or {}).get("state") == "idle":
                return time.perf_counter() - self.started
        raise RuntimeError("the service's event stream ended before its scan was done")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only what it started
            self.proc.wait(timeout=5)

    def __enter__(self) -> "ServiceProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
