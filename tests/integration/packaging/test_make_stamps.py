"""`make run` installs what the program needs; `make test`, `make lint` add their tools.

The Makefile is run for real (`make -n`, in a copy with the venv's tools stubbed): what each target
would install, and that the stamps keep a second run from installing again. A bare clone's real
`make run` takes minutes of downloads; docs/decisions.md gives what it left in .venv.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from tests.support.corpus import ROOT

DEV_TOOLS = ("pytest", "mypy", "ruff", "pyinstaller", "atheris", "schemathesis", "hypothesis")
# pinned installs (requirements/README.md): the lock with its hashes, then the project alone
RUN = ["--quiet --require-hashes -r requirements/run.lock", "--quiet --no-deps -e ."]
DEV = ["--quiet --require-hashes -r requirements/dev.lock", "--quiet --no-deps -e ."]

pytestmark = pytest.mark.skipif(shutil.which("make") is None or os.name == "nt", reason="needs GNU make (POSIX)")


@pytest.fixture
def checkout(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for tool in ("python", "pip", "ctxlamp", "ruff", "mypy"):
        (bin_ / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_ / tool).chmod(0o755)
    return tmp_path


def make(checkout: Path, target: str) -> str:
    proc = subprocess.run(["make", "-n", target], cwd=checkout, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def installs(plan: str) -> list[str]:
    return [line.split("install", 1)[1].strip() for line in plan.splitlines() if "/pip install" in line]


def test_make_run_installs_the_program_alone(checkout):
    assert installs(make(checkout, "run")) == RUN


def test_make_runs_install_ends_with_the_compiled_engine_step(checkout):
    """Where a C compiler is found the step compiles the engine, else it says the pure engine runs (decision
    461; tests/integration/engine/test_compiled_for_run.py runs it). Once installed, nothing is run again."""
    plan = make(checkout, "run").splitlines()
    step = [i for i, line in enumerate(plan) if line.endswith("python -m service.engine_setup.compiled --for-run")]
    assert len(step) == 1 and plan[step[0] + 1] == "touch .venv/.installed-run", plan


@pytest.mark.parametrize("target", ["test", "lint", "test-fast"])
def test_the_developer_targets_install_their_tools(checkout, target):
    assert installs(make(checkout, target)) == DEV


def test_the_stamps_keep_a_second_run_from_installing(checkout):
    venv = checkout / ".venv"
    later = time.time() + 5  # newer than pyproject.toml
    (venv / ".installed-run").touch()
    os.utime(venv / ".installed-run", (later, later))
    assert installs(make(checkout, "run")) == []
    assert installs(make(checkout, "test")) == DEV  # the user's venv lacks the tools
    plan = make(checkout, "test")
    assert "touch .venv/.installed .venv/.installed-run" in plan  # the developer's venv serves make run too


def test_the_programs_dependencies_hold_no_test_lint_packaging_or_fuzzing_tool():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower() for d in project["dependencies"]}
    assert not names & set(DEV_TOOLS), names & set(DEV_TOOLS)
    extras = {d.split(">")[0].split("=")[0].strip().lower() for group in project["optional-dependencies"].values()
              for d in group}
    assert {"pytest", "mypy", "ruff", "pyinstaller", "atheris", "schemathesis"} <= extras
    locked = {line.split("==")[0].lower() for line in (ROOT / "requirements" / "run.lock").read_text().splitlines()
              if "==" in line and not line.startswith((" ", "#"))}
    assert not locked & set(DEV_TOOLS), locked & set(DEV_TOOLS)  # `make run` installs none of them either
