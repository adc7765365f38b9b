"""Data files shipped with ctxlamp (prices.json, icons, demo data).

`resource_path(name)` gives a real filesystem path, because callers hand these
files to libraries that want a path (Qt icons, open()), and because a frozen
build (PyInstaller) unpacks them under `sys._MEIPASS` instead of next to this file.
"""
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_extracted = None  # an ExitStack, once a resource had to be extracted


def resource_path(name: str) -> Path:
    """Filesystem path of the bundled resource `name` (may be `sub/dir/file`)."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        candidate = Path(frozen_root) / "resources" / name
        if candidate.exists():
            return candidate
    beside = _HERE.joinpath(*name.split("/"))
    if beside.exists():  # an ordinary install: no need to import importlib.resources (7 ms)
        return beside
    import importlib.resources

    ref = importlib.resources.files(__name__).joinpath(*name.split("/"))
    if isinstance(ref, Path):
        return ref
    # Packaged in a zip or similar: extract once, keep it until the process exits.
    global _extracted
    if _extracted is None:
        import atexit
        import contextlib

        _extracted = contextlib.ExitStack()
        atexit.register(_extracted.close)
    return Path(_extracted.enter_context(importlib.resources.as_file(ref)))
