"""The measurement engine: transcript entries in, status snapshots out.

Pure: no file, socket, clock, database or Qt. Everything it needs (prices,
a token counter, a path-existence predicate) is handed in by the caller, so a
replay from byte zero and live ingestion give the same results.

Public surface (build engines with service.engine_setup.engines.new_engine / replay_file, which load
prices and the offline tokenizer the same way everywhere):

    from service.engine_setup.engines import load_prices, new_engine, replay_file
    eng = new_engine("/path/x.jsonl", load_prices(), config=EngineConfig(), full_events=False)
    splitter = LineSplitter()
    for line in splitter.feed(chunk_bytes):      # complete lines only; a partial tail is held back
        entry = eng.feed_line(line)              # parsed dict (for channels/turn records) or None
    eng.drain_events()   # replay events so far: {"event": "call"|"reset"|"reminder"|"end", ...}
                         # full_events=True: call events are whole snapshots (ctxlamp replay);
                         # False: call events are series rows + session_id (cheap; the service)
    eng.snapshot()       # the status snapshot now (docs/measurement.md section 10), skeleton curve included
    eng.live_series()    # per-call series rows, the pending call included; eng.resets, eng.reminders
    eng.path_rows()      # [{"path", "tokens", "selected", "why"}] of the open segment
    eng.set_excluded(paths) / eng.set_config(cfg) / eng.set_prices(table) / eng.recheck_paths()
                         # revaluations: later increments only, nothing withdrawn
    eng.transcript_missing = True   # lamp no_transcript (the file is gone)
    eng.finish(end_reason)          # archive the open segment (profile appended to eng.profiles)
                                    # and queue the "end" event; eng.profiles holds every profile
    eng.ledger_state()   # what a rent-ledger checkpoint keeps

Two builds of one source: these modules, and the same files compiled with mypyc (`make compiled`,
service/engine_setup/compiled.py) into `build/mypyc/` beside the checkout, never beside the `.py` files (Python
prefers an extension module to the source of the same name). `select_build` below loads the compiled ones
only when their manifest names exactly this package's modules as they are now, byte for byte (and the one
module outside it they import), for this interpreter; otherwise, or with CTXLAMP_ENGINE=pure, this
source runs. All or none: compiled modules call each other directly. `build_state` says which, and why.
"""
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[2]            # the checkout (site-packages for an installed wheel)
BUILD = ROOT / "build" / "mypyc"
MANIFEST = "manifest.json"
DEPENDENCIES = ("service/client/payloads.py",)        # what the engine imports from outside itself
FORCE_PURE = "CTXLAMP_ENGINE"                         # =pure: never the compiled build
build_state: dict[str, str] = {"engine": "pure", "why": "not selected yet"}


def engine_modules(root: Path = ROOT) -> list[str]:
    """The modules mypyc compiles: every one of the package but this `__init__` (the loader, the lazy exports)."""
    return sorted(p.stem for p in (root / "service" / "engine").glob("*.py") if p.stem != "__init__")


def source_hashes(root: Path = ROOT) -> dict[str, str]:
    files = [f"service/engine/{m}.py" for m in engine_modules(root)] + list(DEPENDENCIES)
    return {f: hashlib.sha256((root / f).read_bytes()).hexdigest() for f in files}


def extension_suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


class _CompiledFinder:
    """Finds the compiled engine's modules (and mypyc's shared library) in the build folder."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(name)
        return importlib.util.spec_from_file_location(name, file) if file is not None else None


def usable_build(build: Path = BUILD, root: Path = ROOT) -> tuple[dict[str, Path] | None, str]:
    """The compiled files by module name when the build in `build` matches the sources in `root`, else why not."""
    try:
        manifest = json.loads((build / MANIFEST).read_bytes())
    except FileNotFoundError:
        return None, "no compiled build (make compiled)"
    except (OSError, ValueError) as exc:
        return None, f"unreadable compiled build ({exc.__class__.__name__})"
    if not isinstance(manifest, dict) or manifest.get("suffix") != extension_suffix():
        return None, "compiled for another Python"
    try:
        if manifest.get("sources") != source_hashes(root):
            return None, "compiled build is older than the engine's source (make compiled)"
    except OSError:
        return None, "engine source unreadable"
    suffix = extension_suffix()
    files = {f"service.engine.{m}": build / "service" / "engine" / f"{m}{suffix}" for m in engine_modules(root)}
    shared = manifest.get("shared")
    if isinstance(shared, str) and shared:
        files[shared] = build / f"{shared}{suffix}"
    if not all(f.is_file() for f in files.values()):
        return None, "compiled build incomplete (make compiled)"
    return files, "built from these sources"


def select_build() -> str:
    """Load the compiled engine when it matches the source (see the package's doc); "compiled" or "pure"."""
    if any(isinstance(f, _CompiledFinder) for f in sys.meta_path):
        return build_state["engine"]
    if os.environ.get(FORCE_PURE) == "pure":
        build_state.update(engine="pure", why=f"{FORCE_PURE}=pure")
        return "pure"
    files, why = usable_build()
    if files is None or any(name in sys.modules for name in files):
        build_state.update(engine="pure", why=why if files is None else "pure modules already imported")
        return "pure"
    sys.meta_path.insert(0, _CompiledFinder(files))
    build_state.update(engine="compiled", why=why)
    return "compiled"


select_build()

if TYPE_CHECKING:  # what the lazy exports are, for the type checker (imported for real on first use)
    from service.engine.lines import LineSplitter as LineSplitter
    from service.engine.parse import Entry as Entry
    from service.engine.parse import Malformed as Malformed
    from service.engine.parse import parse_line as parse_line
    from service.engine.prices import Price as Price
    from service.engine.prices import PriceTable as PriceTable
    from service.engine.session import EngineConfig as EngineConfig
    from service.engine.session import SessionEngine as SessionEngine
    from service.engine.tokens import TokenCounter as TokenCounter

# Exports are loaded on first use: `ctxlamp report` needs only service.engine.prices,
# and importing the whole engine with it cost 11 ms of a half-second report.
_EXPORTS = {
    "LineSplitter": "lines", "parse_line": "parse", "Malformed": "parse", "Entry": "parse",
    "Price": "prices", "PriceTable": "prices", "TokenCounter": "tokens",
    "EngineConfig": "session", "SessionEngine": "session",
}
__all__ = [*_EXPORTS, "build_state", "select_build", "usable_build"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
