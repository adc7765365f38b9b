"""Where api.json is, found without importing pathlib, dataclasses or platformdirs in the common cases
(the status-line command must not pay for those imports; it may run under `python -S`).

The cheap candidates follow service.paths: `$CTXLAMP_HOME`, and on Linux
`$XDG_RUNTIME_DIR/ctxlamp` or `<data>/run` without it. When none holds an api.json, service.paths
itself decides (platformdirs' full rules), when it can be imported.
"""

import os
import sys

APP = "ctxlamp"


def candidates() -> list[str]:
    home = os.environ.get("CTXLAMP_HOME")
    if home:
        return [os.path.realpath(os.path.expanduser(home))]
    if not sys.platform.startswith("linux"):
        return []
    xdg_runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if xdg_runtime:
        return [os.path.join(xdg_runtime, APP)]
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or os.path.expanduser("~/.local/share")
    return [os.path.join(data_home, APP, "run")]


def runtime_dir() -> str | None:
    """The folder holding api.json (None when it cannot be known in this interpreter)."""
    found = candidates()
    for folder in found:
        if os.path.exists(os.path.join(folder, "api.json")):
            return folder
    if os.environ.get("CTXLAMP_HOME"):
        return found[0]
    try:
        import platformdirs  # noqa: F401 - (checked first: service.paths costs pathlib and dataclasses)
        from service.paths import app_paths
    except ImportError:  # platformdirs is not importable (python -S): the cheap guess is the answer
        return found[0] if found else None
    return str(app_paths().runtime)
