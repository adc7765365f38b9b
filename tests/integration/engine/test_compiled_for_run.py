"""What `make run` does about the compiled engine (service/engine_setup/compiled.py `for_run`, decision 460).

With a C compiler it builds the engine within a minute and runs it compiled; with none, past the minute, or
when anything fails, the pure-Python engine runs, and one line says which. The builds here compile a two-module
stand-in engine (a few seconds) into a folder of the test's own, with the real mypyc and compiler; the compiler's
presence is passed in, so the "no compiler" path runs on any machine.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.engine import usable_build
from service.engine_setup import compiled
from tests.support.corpus import ROOT

NAME, COMPILER = compiled.find_compiler()
needs_compiler = pytest.mark.skipif(COMPILER is None or not compiled.has_mypyc(),
                                    reason=f"no C compiler ({NAME}) or no mypyc here: the build cannot run")


@pytest.fixture
def small_engine(tmp_path) -> Path:
    """A checkout whose engine is two small typed modules (and the payloads module the manifest hashes)."""
    root = tmp_path / "checkout"
    for folder in ("service", "service/engine", "service/client"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "service/engine/twice.py").write_text("def twice(n: int) -> int:\n    return n * 2\n")
    (root / "service/engine/four.py").write_text(
        "from service.engine.twice import twice\n\n\ndef four(n: int) -> int:\n    return twice(twice(n))\n")
    (root / "service/client/payloads.py").write_text("KIND = 'payload'\n")
    return root


def _running_in(folder: Path) -> list[str]:
    """Command lines of the processes still working in `folder` (a build and the compilers it started)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.isdigit() and int(entry) != os.getpid() and str(folder) in cmdline:
            found.append(cmdline)
    return found


def test_with_no_compiler_the_pure_engine_runs_and_nothing_is_built(small_engine):
    name, path = compiled.find_compiler({"CC": str(small_engine / "no-such-cc") + " -O2"})
    assert (name, path) == (str(small_engine / "no-such-cc"), None)
    out = small_engine / "build" / "mypyc"
    engine, line = compiled.for_run(path, compiler_name=name, out=out, root=small_engine)
    assert engine == "pure" and line == f"compiled engine: no C compiler ({name}); the engine runs as pure Python."
    assert not out.parent.exists()


def test_make_runs_install_step_with_no_compiler_prints_one_line_and_succeeds(tmp_path):
    """`make run`'s step as the Makefile runs it (tests/integration/packaging/test_make_stamps.py), with CC
    naming a program that is not there."""
    manifest = ROOT / "build" / "mypyc" / "manifest.json"
    before = manifest.stat().st_mtime_ns if manifest.exists() else None
    env = {**os.environ, "CC": str(tmp_path / "missing-cc"), "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-P", "-m", "service.engine_setup.compiled", "--for-run"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.splitlines() == [f"compiled engine: no C compiler ({tmp_path / 'missing-cc'}); "
                                     "the engine runs as pure Python."]
    assert (manifest.stat().st_mtime_ns if manifest.exists() else None) == before


@needs_compiler
def test_with_a_compiler_the_engine_is_built_and_runs_compiled(small_engine):
    out = small_engine / "build" / "mypyc"
    engine, line = compiled.for_run(COMPILER, compiler_name=NAME, out=out, root=small_engine, budget_s=300)
    assert engine == "compiled" and line.startswith("compiled engine: built in "), line
    files, why = usable_build(out, small_engine)
    assert files is not None and {"service.engine.twice", "service.engine.four"} <= set(files), why
    again = compiled.for_run(COMPILER, compiler_name=NAME, out=out, root=small_engine, budget_s=300)
    assert again == ("compiled", "compiled engine: already built from these sources; the engine runs compiled.")
    (small_engine / "service/engine/twice.py").write_text("def twice(n: int) -> int:\n    return n + n\n")
    assert usable_build(out, small_engine)[0] is None, "an edited module makes the build stale: built again"


@needs_compiler
def test_a_build_over_its_budget_is_stopped_and_the_pure_engine_runs(small_engine):
    out = small_engine / "build" / "mypyc"
    started = time.monotonic()
    engine, line = compiled.for_run(COMPILER, compiler_name=NAME, out=out, root=small_engine, budget_s=0.3)
    assert time.monotonic() - started < 5, "stopped at its deadline, not when it ended"
    assert engine == "pure"
    assert line == ("compiled engine: not built within 0.3 s, stopped; the engine runs as pure Python "
                    "(`make compiled` builds it with no time limit).")
    assert not out.exists() and list(out.parent.iterdir()) == [], "no build, and its work folder removed"
    assert _running_in(small_engine) == [], "the build and its compilers were stopped"


@needs_compiler
def test_when_mypyc_cannot_be_installed_the_pure_engine_runs(small_engine):
    """A checkout without the compile lock: pip refuses, the step says so, make run goes on."""
    engine, line = compiled.for_run(COMPILER, compiler_name=NAME, out=small_engine / "build" / "mypyc",
                                    root=small_engine, mypyc_present=lambda: False,
                                    install=lambda budget: compiled.install_mypyc(budget, small_engine))
    assert engine == "pure"
    assert line == "compiled engine: mypyc could not be installed (exit status 1); the engine runs as pure Python."
