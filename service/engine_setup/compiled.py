"""Building the engine with mypyc (it ships with mypy), and saying which build runs.

The engine (`service/engine/`) is strictly typed, so mypyc compiles the same files to C extension modules:
one source, two builds. `build()` writes them into `build/mypyc/` beside the checkout with a manifest of the
sha256 of every source it compiled, read before compiling; `service/engine/__init__.py` loads them only while
that manifest matches the source byte for byte (a developer who edits an engine file tests the edit, in pure
Python, until the next build). `ctxlamp doctor` prints `describe()`.

`make run` calls `for_run` (decision 460): it builds where a C compiler is found, within BUDGET_S of wall
time, and otherwise, or when anything fails, leaves the pure-Python engine running and says so in one line.
`make compiled` builds with no limit.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from service.engine import (BUILD, MANIFEST, ROOT, build_state, engine_modules, extension_suffix, source_hashes,
                            usable_build)

BUDGET_S = 60.0  # what `make run` waits at most for the compiled engine (installing mypyc and building)
COMPILE_LOCK = "requirements/compile.lock"  # mypy (mypyc) and setuptools, pinned with their hashes


class BuildOverBudget(RuntimeError):
    """The build ran past its deadline and was stopped (its compilers with it)."""


def describe() -> str:
    """One line for `ctxlamp doctor`: which engine runs, and why."""
    if build_state["engine"] == "compiled":
        return f"the engine runs compiled (mypyc, {build_state['why']})."
    return f"the engine runs as pure Python ({build_state['why']})."


def find_compiler(env: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(the C compiler a build would run, its path or None when it is not installed): $CC as setuptools reads
    it, else the one this Python was built with."""
    import shlex
    import shutil
    import sysconfig

    env = os.environ if env is None else env
    words = shlex.split(env.get("CC") or sysconfig.get_config_var("CC") or "cc")
    name = words[0] if words else "cc"
    return name, shutil.which(name)


def build(out: Path = BUILD, root: Path = ROOT, opt_level: str = "3", quiet: bool = True,
          timeout: float | None = None, silent: bool = False) -> Path:
    """Compile the engine into `out` (replaced whole only once the new build is complete).

    Past `timeout` seconds the build and every compiler it started are stopped (BuildOverBudget), `out`
    untouched; a failed build raises subprocess.CalledProcessError. `quiet`: no progress; `silent`: no
    compiler messages either."""
    import shutil
    import tempfile

    sources = source_hashes(root)  # read before compiling: a file edited meanwhile makes the build stale
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".mypyc-", dir=out.parent))
    try:
        lib = work / "lib"
        files = [f"service/engine/{m}.py" for m in engine_modules(root)]
        script = ("import sys\nfrom setuptools import setup\nfrom mypyc.build import mypycify\n"
                  "setup(name='ctxlamp-engine', ext_modules=mypycify(sys.argv[4:], opt_level=sys.argv[3],"
                  " target_dir=sys.argv[2]), script_args=['build_ext', '--build-lib', sys.argv[1],"
                  " '--build-temp', sys.argv[2] + '/temp'])\n")
        # -P: the build imports the checkout's own files by path, nothing from the working folder.
        argv = [sys.executable, "-P", "-c", script, str(lib), str(work / "c"), opt_level, *files]
        _run_within(argv, root, timeout, quiet, silent)
        shared = sorted(p.name[:-len(extension_suffix())] for p in lib.glob(f"*__mypyc{extension_suffix()}"))
        (lib / MANIFEST).write_text(json.dumps({"suffix": extension_suffix(), "sources": sources,
                                                "shared": shared[0] if shared else ""}, indent=1) + "\n")
        old = out.parent / f".old-{out.name}-{os.getpid()}"
        if out.exists():
            os.replace(out, old)
        os.replace(lib, out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _run_within(argv: list[str], cwd: Path, timeout: float | None, quiet: bool, silent: bool) -> None:
    """Run argv in a session of its own, so that past `timeout` it is stopped with every process it started."""
    import subprocess

    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL if quiet or silent else None,
                            stderr=subprocess.DEVNULL if silent else None, start_new_session=True)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise BuildOverBudget(f"stopped after {timeout:.0f} s") from None
    except BaseException:
        _stop(proc)
        raise
    if code != 0:
        raise subprocess.CalledProcessError(code, argv[:3])


def _stop(proc) -> None:
    """The process and its session (the compilers setuptools started), killed and reaped."""
    import signal

    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass
    proc.wait()


def has_mypyc() -> bool:
    import importlib.util

    return importlib.util.find_spec("mypyc") is not None and importlib.util.find_spec("setuptools") is not None


def install_mypyc(timeout: float, root: Path = ROOT) -> None:
    """mypy (mypyc) and setuptools from their lock, with their hashes, into this Python's environment."""
    _run_within([sys.executable, "-m", "pip", "install", "--quiet", "--require-hashes", "-r",
                 str(root / COMPILE_LOCK)], root, timeout, quiet=True, silent=True)


def for_run(compiler: str | None, *, compiler_name: str = "cc", out: Path = BUILD, root: Path = ROOT,
            budget_s: float = BUDGET_S, mypyc_present: Callable[[], bool] = has_mypyc,
            install: Callable[[float], None] = install_mypyc) -> tuple[str, str]:
    """`make run`'s step: ("compiled" | "pure", the one line it prints).

    With no C compiler (`compiler` None) the pure-Python engine runs. Otherwise mypyc is installed when
    missing and the engine built, both within `budget_s` of wall time: past it the build is stopped; a
    failure anywhere leaves the pure engine (and any earlier build) as it was.
    """
    import subprocess

    pure = "the engine runs as pure Python"
    if compiler is None:
        return "pure", f"compiled engine: no C compiler ({compiler_name}); {pure}."
    if usable_build(out, root)[0] is not None:
        return "compiled", "compiled engine: already built from these sources; the engine runs compiled."
    started = time.monotonic()
    try:
        if not mypyc_present():
            try:
                install(budget_s)
            except (OSError, subprocess.CalledProcessError) as exc:
                return "pure", f"compiled engine: mypyc could not be installed ({_why(exc)}); {pure}."
        build(out, root, timeout=max(0.0, budget_s - (time.monotonic() - started)), silent=True)
    except BuildOverBudget:
        return "pure", (f"compiled engine: not built within {budget_s:g} s, stopped; {pure} "
                        "(`make compiled` builds it with no time limit).")
    except (OSError, subprocess.CalledProcessError) as exc:
        return "pure", f"compiled engine: the build failed ({_why(exc)}); {pure}."
    return "compiled", f"compiled engine: built in {time.monotonic() - started:.0f} s; the engine runs compiled."


def _why(exc: BaseException) -> str:
    import subprocess

    return f"exit status {exc.returncode}" if isinstance(exc, subprocess.CalledProcessError) else str(exc)


def main(argv: list[str] | None = None) -> int:
    """`python -m service.engine_setup.compiled [--if-compiler | --for-run]`: build the compiled engine.

    --for-run (`make run`): within BUDGET_S, else pure Python; always exit status 0, one line."""
    import subprocess

    argv = sys.argv[1:] if argv is None else argv
    name, compiler = find_compiler()
    if "--for-run" in argv:  # whatever happens, `make run` goes on with an engine that runs
        try:
            line = for_run(compiler, compiler_name=name)[1]
        except Exception as exc:  # an unforeseen failure must not stop `make run`
            line = f"compiled engine: not built ({exc.__class__.__name__}: {exc}); the engine runs as pure Python."
        print(line)
        return 0
    if "--if-compiler" in argv and compiler is None:
        print(f"compiled engine: no C compiler ({name}); the pure-Python engine runs")
        return 0
    if not has_mypyc():
        print("compiled engine: mypyc is not installed (it ships with mypy: make lint installs it)", file=sys.stderr)
        return 1
    started = time.monotonic()
    try:
        out = build()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"compiled engine: the build failed ({_why(exc)}); build/mypyc is unchanged (`ctxlamp doctor` says "
              "which engine runs).", file=sys.stderr)
        return 1
    print(f"compiled engine: built {out.relative_to(ROOT)} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
