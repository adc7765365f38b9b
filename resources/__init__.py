"""Data files shipped with ctxlamp (prices.json, icons, demo data).

`resource_path(name)` gives a real filesystem path, because callers hand these
files to libraries that want a path (Qt icons, open()), and because a frozen
build (PyInstaller) unpacks them under `sys._MEIPASS` instead of next to this file.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib.resources
import sys
from pathlib import Path

_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def resource_path(name: str) -> Path:
    """Filesystem path of the bundled resource `name` (may be `sub/dir/file`)."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        candidate = Path(frozen_root) / "resources" / name
        if candidate.exists():
            return candidate
    ref = importlib.resources.files(__name__).joinpath(*name.split("/"))
    if isinstance(ref, Path):
        return ref
    # Packaged in a zip or similar: extract once, keep it until the process exits.
    return Path(_extracted.enter_context(importlib.resources.as_file(ref)))
