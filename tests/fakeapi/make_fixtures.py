"""Regenerate tests/fixtures/claude-code-<version>/<scenario>/ with the real CLI and the fake API.

    python -m tests.fakeapi.make_fixtures [SCENARIO ...]     (default: every tests/fakeapi/scenarios/*.json)

Each scenario runs in the same fixed folders (FIXTURE_BASE/home, FIXTURE_BASE/demo-project), so the
workspace content, the paths in the transcripts and the project folder name are the same on every
machine; ids and timestamps differ from run to run. A failed run fails the whole scenario and leaves
the committed fixture as it was.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.fakeapi.scenario import claude_binary, run_scenario

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
FIXTURES = HERE.parent / "fixtures"
PINNED = "2.1.332"  # tests/integration/e2e/install_claude.sh installs this one; older corpora stay as they were written
FIXTURE_BASE = Path("/tmp/ctxlamp-fixture")
WORKSPACE = FIXTURE_BASE / "demo-project"


def cli_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout
    return out.split()[0] if out.split() else "unknown"


def make(name: str, binary: str, version: str) -> Path:
    dest = FIXTURES / f"claude-code-{version}" / name
    shutil.rmtree(FIXTURE_BASE, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"ctxlamp-fixture-{name}-") as scratch:
        outcome = run_scenario(SCENARIOS / f"{name}.json", Path(scratch) / "out", home=FIXTURE_BASE / "home",
                               workspace=WORKSPACE, claude_bin=binary)
        failed = [r for r in outcome.results if r.get("is_error")]
        if failed:
            raise RuntimeError(f"{name}: {len(failed)} run(s) ended in an error: {failed[0]}")
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for part in ("projects", "results.jsonl", "api.jsonl"):
            src = outcome.out / part
            (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dest / part)
    shutil.rmtree(FIXTURE_BASE, ignore_errors=True)
    return dest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scenario names (default: all)")
    args = parser.parse_args(argv)
    binary = claude_binary()
    version = cli_version(binary)
    if version != PINNED:
        print(f"warning: the CLI is {version}, the fixtures are pinned to {PINNED}", file=sys.stderr)
    for name in args.names or sorted(p.stem for p in SCENARIOS.glob("*.json")):
        dest = make(name, binary, version)
        size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
        print(f"{dest.relative_to(FIXTURES.parent.parent)}: {size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
