"""Building the engine with mypyc (it ships with mypy), and saying which build runs.

The engine (`service/engine/`) is strictly typed, so mypyc compiles the same files to C extension modules:
one source, two builds. `build()` writes them into `build/mypyc/` beside the checkout with a manifest of the
sha256 of every source it compiled, read before compiling; `service/engine/__init__.py` loads them only while
that manifest matches the source byte for byte (a developer who edits an engine file tests the edit, in pure
Python, until the next build). `ctxlamp doctor` prints `describe()`.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from service.engine import BUILD, MANIFEST, ROOT, build_state, engine_modules, extension_suffix, source_hashes


def describe() -> str:
    """One line for `ctxlamp doctor`: which engine runs, and why."""
    if build_state["engine"] == "compiled":
        return f"the engine runs compiled (mypyc, {build_state['why']})."
    return f"the engine runs as pure Python ({build_state['why']})."


def build(out: Path = BUILD, root: Path = ROOT, opt_level: str = "3", quiet: bool = True) -> Path:
    """Compile the engine into `out` (replaced whole only once the new build is complete)."""
    import shutil
    import subprocess
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
        subprocess.run([sys.executable, "-P", "-c", script, str(lib), str(work / "c"), opt_level, *files],
                       cwd=root, check=True, stdout=subprocess.DEVNULL if quiet else None)
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


def main(argv: list[str] | None = None) -> int:
    """`python -m service.engine_setup.compiled [--if-compiler]`: build the compiled engine."""
    import shutil
    import subprocess
    import sysconfig
    import time

    argv = sys.argv[1:] if argv is None else argv
    if "--if-compiler" in argv:
        compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
        if shutil.which(compiler) is None:
            print(f"compiled engine: no C compiler ({compiler}); the pure-Python engine runs")
            return 0
    try:
        import mypyc  # noqa: F401
    except ImportError:
        print("compiled engine: mypyc is not installed (it ships with mypy: make lint installs it)", file=sys.stderr)
        return 1
    started = time.monotonic()
    try:
        out = build()
    except (OSError, subprocess.CalledProcessError) as exc:
        what = f"exit status {exc.returncode}" if isinstance(exc, subprocess.CalledProcessError) else str(exc)
        print(f"compiled engine: the build failed ({what}); build/mypyc is unchanged (`ctxlamp doctor` says "
              "which engine runs).", file=sys.stderr)
        return 1
    print(f"compiled engine: built {out.relative_to(ROOT)} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
