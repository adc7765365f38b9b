"""The compiled and the pure-Python engine over a real history: every replay and the report, byte for byte.

For each build (`CTXLAMP_ENGINE=pure`, and the compiled one `make compiled` left in build/mypyc) one fresh
interpreter replays every main transcript as `ctxlamp replay FILE --jsonl --with-subagents` prints it, and
`ctxlamp report --json --no-service` reads the whole history from an empty data folder. The outputs must be
identical (the report's data-folder paths aside, each build having its own). CI runs the same comparison on
the fixtures and the demo (tests/integration/engine/test_compiled_engine.py); this is the one for a history
beside the checkout, such as real-wild laid out by bench/real_history.py.

    python bench/both_builds.py --corpus DIR      (DIR holds .claude/projects)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.peers import base_env
from service.report.scan import discover

# run in each build's interpreter: the replay of every file given on stdin, one digest a file
_REPLAYS = """
import argparse, contextlib, hashlib, io, json, sys
from service.cli import replay
from service.engine import build_state
digests = {}
for path in sys.stdin.read().splitlines():
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # replay writes to its buffer
    with contextlib.redirect_stdout(out):
        code = replay.run(argparse.Namespace(file=path, jsonl=True, no_cache=False, with_subagents=True))
        out.flush()
    digests[path] = [code, hashlib.sha256(raw.getvalue()).hexdigest()]
print(json.dumps({"engine": build_state["engine"], "digests": digests}))
"""


def _build(env: dict[str, str], mains: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="ctxlamp-builds-") as home:
        run_env = {**env, "CTXLAMP_HOME": home}
        replays = subprocess.run([sys.executable, "-P", "-c", _REPLAYS], input="\n".join(mains), env=run_env,
                                 cwd=ROOT, capture_output=True, text=True, check=True)
        report = subprocess.run([sys.executable, "-P", "-m", "service.cli", "report", "--json", "--no-service"],
                                env=run_env, cwd=ROOT, capture_output=True, check=True).stdout
    doc = json.loads(replays.stdout)
    return {"engine": doc["engine"], "digests": doc["digests"],
            "report": report.replace(home.encode(), b"<data>")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a folder holding .claude/projects")
    args = ap.parse_args(argv)
    projects = args.corpus / ".claude" / "projects"
    mains = [tf.path for tf in discover(projects) if not tf.subagent]  # the report's own rule for a main transcript
    env = base_env(args.corpus)
    began = time.monotonic()
    compiled = _build(env, mains)
    pure = _build({**env, "CTXLAMP_ENGINE": "pure"}, mains)
    if compiled["engine"] != "compiled":
        print("no compiled build to compare (make compiled)", file=sys.stderr)
        return 2
    empty = hashlib.sha256(b"").hexdigest()  # a replay that printed nothing proves nothing
    differ = [p for p in mains if compiled["digests"][p] != pure["digests"][p] or compiled["digests"][p][1] == empty]
    same_report = compiled["report"] == pure["report"]
    print(f"{len(mains)} replays: {len(mains) - len(differ)} identical, {len(differ)} differ; "
          f"report ({len(compiled['report'])} bytes): {'identical' if same_report else 'DIFFERS'}; "
          f"report sha256 {hashlib.sha256(compiled['report']).hexdigest()[:16]}; {time.monotonic() - began:.0f} s")
    for path in differ:
        print(f"  differs: {path}")
    return 0 if not differ and same_report else 1


if __name__ == "__main__":
    sys.exit(main())
