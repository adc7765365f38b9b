"""The engine compiled from its own source with mypyc, used only while it matches that source.

The engine (`service/engine/`) is strictly typed, so mypyc (it ships with mypy) compiles the same
files to C extension modules: one source, two builds. `build()` writes them beside the checkout, in
`build/mypyc/`, never next to the `.py` files (Python prefers an extension module to the source of
the same name, so a developer editing `service/engine/*.py` would test the old build). With them it
writes a manifest: the sha256 of every engine module and of the one module outside the engine it
imports (`service/client/payloads.py`), read before compiling.

`select()` runs when `service.engine` is imported. It loads the compiled modules only when the
manifest names exactly the engine's modules as they are now, byte for byte, for this interpreter;
otherwise the pure-Python engine runs (no build, an edited file, another Python), and nothing is
mixed: the compiled modules call each other directly, so it is all of them or none.
`CTXLAMP_ENGINE=pure` forces the pure engine (the differential test runs both).
This module imports nothing of the engine: it decides how the engine is imported.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]            # the checkout (or site-packages for a wheel)
ENGINE = ROOT / "service" / "engine"
DEPENDENCIES = ("service/client/payloads.py",)        # what the engine imports from outside itself
BUILD = ROOT / "build" / "mypyc"
MANIFEST = "manifest.json"
FORCE_PURE = "CTXLAMP_ENGINE"                         # =pure: never the compiled build

# What select() decided, for `ctxlamp doctor`: "compiled" or "pure", and why.
state: dict[str, str] = {"engine": "pure", "why": "not imported yet"}


def engine_modules(root: Path = ROOT) -> list[str]:
    """The engine's modules mypyc compiles: every one but the package's `__init__` (the lazy exports)."""
    return sorted(p.stem for p in (root / "service" / "engine").glob("*.py") if p.stem != "__init__")


def source_hashes(root: Path = ROOT) -> dict[str, str]:
    files = [f"service/engine/{m}.py" for m in engine_modules(root)] + list(DEPENDENCIES)
    return {f: hashlib.sha256((root / f).read_bytes()).hexdigest() for f in files}


def _suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


class _CompiledFinder:
    """Finds the compiled engine's modules (and mypyc's shared library) in the build folder."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(name)
        return importlib.util.spec_from_file_location(name, file) if file is not None else None


def _usable(build: Path, root: Path) -> tuple[dict[str, Path] | None, str]:
    """The compiled files by module name when the build in `build` matches the sources in `root`, else why not."""
    try:
        manifest = json.loads((build / MANIFEST).read_bytes())
    except FileNotFoundError:
        return None, "no compiled build (make compiled)"
    except (OSError, ValueError) as exc:
        return None, f"unreadable compiled build ({exc.__class__.__name__})"
    if not isinstance(manifest, dict) or manifest.get("suffix") != _suffix():
        return None, "compiled for another Python"
    try:
        if manifest.get("sources") != source_hashes(root):
            return None, "compiled build is older than the engine's source (make compiled)"
    except OSError:
        return None, "engine source unreadable"
    files = {f"service.engine.{m}": build / "service" / "engine" / f"{m}{_suffix()}" for m in engine_modules(root)}
    shared = manifest.get("shared")
    if isinstance(shared, str) and shared:
        files[shared] = build / f"{shared}{_suffix()}"
    if not all(f.is_file() for f in files.values()):
        return None, "compiled build incomplete (make compiled)"
    return files, "built from these sources"


def select() -> str:
    """Load the compiled engine when it matches the source (see the module's doc); returns "compiled" or "pure"."""
    if any(isinstance(f, _CompiledFinder) for f in sys.meta_path):
        return state["engine"]
    if os.environ.get(FORCE_PURE) == "pure":
        state.update(engine="pure", why=f"{FORCE_PURE}=pure")
        return "pure"
    files, why = _usable(BUILD, ROOT)
    if files is None or any(name in sys.modules for name in files):
        state.update(engine="pure", why=why if files is None else "pure modules already imported")
        return "pure"
    sys.meta_path.insert(0, _CompiledFinder(files))
    state.update(engine="compiled", why=why)
    return "compiled"


def describe() -> str:
    """One line for `ctxlamp doctor`: which engine runs, and why."""
    import service.engine  # noqa: F401  # runs select()

    if state["engine"] == "compiled":
        return f"the engine runs compiled (mypyc, {state['why']})."
    return f"the engine runs as pure Python ({state['why']})."


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
        shared = sorted(p.name[:-len(_suffix())] for p in lib.glob(f"*__mypyc{_suffix()}"))
        (lib / MANIFEST).write_text(json.dumps({"suffix": _suffix(), "sources": sources,
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
    out = build()
    print(f"compiled engine: built {out.relative_to(ROOT)} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
