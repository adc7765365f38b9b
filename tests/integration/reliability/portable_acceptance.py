"""Issue 24's acceptance, by hand: the service, report, status line, hook, install and uninstall in an
interpreter without fcntl, os.fork or inotify, on transcripts the scenario tests do not use.

    PYTHONPATH=$PWD/tests/posixless .venv/bin/python -m tests.integration.reliability.portable_acceptance

A service on the polling observer, a second one refused beside it, two kill -9 with the status equal
to replay after each, the report (from the service and by its own spawned workers), the status line,
the hook, install (its hook command run through sh) and uninstall. Prints each step; exits non-zero
at the first that fails.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support import transcripts as T
from tests.support.corpus import ROOT, scenario_session
from tests.support.harness import replay
from tests.support.service_proc import Svc, wait_for_snapshot

CTXLAMP = [sys.executable, "-m", "service.cli"]


def run(args: list[str], env: dict, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd="/", input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)


def main() -> int:
    if hasattr(os, "fork") or sys.modules.get("fcntl", 0) is not None:
        raise SystemExit("run with PYTHONPATH=$PWD/tests/posixless (no fcntl, no os.fork, no inotify)")
    os.environ["PYTHONPATH"] = os.pathsep.join(  # absolute, so children started elsewhere get it too
        os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    tmp = Path(tempfile.mkdtemp(prefix="ctxlamp-portable-"))
    home, claude = tmp / "home", tmp / "claude"
    proj = claude / "projects" / "-work-acceptance"
    proj.mkdir(parents=True)
    home.mkdir()
    synthetic = tmp / "synthetic.jsonl"
    synthetic.write_bytes(T.to_bytes(T.growing_session(150, reads=4)))
    rewind = sorted((ROOT / "tests" / "fixtures" / "rewind" / "projects").rglob("*.jsonl"))
    sources = [scenario_session("model-switch"), rewind[0], synthetic]
    files = [(src, proj / f"{i:08d}-aaaa-4bbb-8ccc-acceptance{i:02d}.jsonl") for i, src in enumerate(sources)]
    lines = {src: src.read_bytes().splitlines(keepends=True) for src, _ in files}

    def append(lo: float, hi: float) -> None:
        for src, dst in files:
            part = lines[src]
            with open(dst, "ab") as out:
                out.writelines(part[int(len(part) * lo):int(len(part) * hi)])

    def status_equals_replay(s: Svc, label: str) -> None:
        for _, dst in files:
            end, _, _ = replay(dst, tmp / f"replay-{label}")
            wait_for_snapshot(s, end["session_id"], end, timeout=60)
        print(f"{label}: status == replay for {len(files)} sessions")

    s = Svc(home, claude).start()
    block = s.get("/api/v1/status")["service"]
    print(f"observer: {block['observer']} ({block['observer_reason']})")
    second = run([*CTXLAMP, "serve"], s.env, timeout=60)
    print(f"second service: exit {second.returncode}: {second.stderr.strip()}")
    assert second.returncode == 1 and "already running" in second.stderr
    append(0, 0.4)
    time.sleep(3)
    for n, (lo, hi) in enumerate([(0.4, 0.7), (0.7, 1.0)], 1):
        s.stop(signal.SIGKILL)
        s = Svc(home, claude).start()
        append(lo, hi)
        status_equals_replay(s, f"after kill -9 #{n}")
    env = s.env
    for args in (["report", "--json"], ["report", "--json", "--no-service"]):
        rep = run([*CTXLAMP, *args], env, timeout=300)
        assert rep.returncode == 0 and json.loads(rep.stdout), rep.stderr
    print("report: from the service and by its own scan")
    from service.report import forked, scan

    found = scan.discover(claude / "projects")
    serial = scan.scan(found, scan.ScanCache(None), workers=1)
    pooled = scan.scan(found, scan.ScanCache(None), workers=2, pool_min_bytes=0)
    print(f"report workers: {forked.start_method()}, same results as one process: {pooled == serial}")
    assert pooled == serial
    sid = replay(files[0][1], tmp / "r0")[0]["session_id"]
    reading = json.dumps({"session_id": sid, "transcript_path": str(files[0][1]), "model": {"display_name": "S"}})
    line = run(["sh", "-c", f"'{sys.executable}' -S '{ROOT}/service/statusline/fast.py'"], env, reading, 10)
    print(f"status line: exit {line.returncode}: {line.stdout.strip()!r}")
    assert line.returncode == 0 and line.stdout.strip()
    hook = run([*CTXLAMP, "hook", "session-start"], env, json.dumps({"session_id": sid, "cwd": "/work/acceptance"}))
    print(f"hook: exit {hook.returncode}")
    assert hook.returncode == 0 and hook.stderr == ""
    settings = claude / "settings.json"
    settings.write_text(json.dumps({"model": "opus", "hooks": {}}))
    before = json.loads(settings.read_text())
    assert run([*CTXLAMP, "install"], env).returncode == 0
    written = json.loads(settings.read_text())
    hook_cmd = next(h for g in written["hooks"]["SessionStart"] for h in g["hooks"])["command"]
    ran = run(["sh", "-c", hook_cmd], env, json.dumps({"session_id": sid, "cwd": "/x"}))
    print(f"install: the hook command it wrote runs through sh: exit {ran.returncode}")
    assert ran.returncode == 0
    assert run([*CTXLAMP, "uninstall"], env).returncode == 0
    print(f"uninstall restores the settings: {json.loads(settings.read_text()) == before}")
    assert json.loads(settings.read_text()) == before
    assert s.stop() == 0
    shutil.rmtree(tmp, ignore_errors=True)
    print("acceptance: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
