"""Where api.json is, found without importing pathlib, dataclasses or platformdirs in the common cases
(the status-line command must not pay for those imports; it may run under `python -S`).

`folders` computes ctxlamp's data and runtime folders for each system with the standard library,
by the rules `paths.py` takes from platformdirs (tests check they agree for Linux, macOS and
Windows): `$CTXLAMP_HOME`; Linux and other POSIX `$XDG_RUNTIME_DIR/ctxlamp` or `<data>/run`;
macOS `$XDG_RUNTIME_DIR/ctxlamp` or `~/Library/Caches/TemporaryItems/ctxlamp`; Windows `%LOCALAPPDATA%\\Temp\\ctxlamp`.
`$XDG_RUNTIME_DIR` counts only when it is this user's private folder (`privdir.runtime_base_problem`,
platformdirs' rule; `paths.py` asks the same function), so nobody can plant an api.json for the status line
to follow.
When no api.json is there, `paths.app_paths` decides (platformdirs' full rules, e.g. a
`$XDG_RUNTIME_DIR` it refuses), when it can be imported.
"""

import os
import sys

from service.client.privdir import trusted_runtime_base

TYPE_CHECKING = False  # typing's own flag costs an import on the status line's clock
if TYPE_CHECKING:
    from collections.abc import Mapping

APP = "ctxlamp"


def folders(system: str = sys.platform, env: "Mapping[str, str] | None" = None) -> tuple[str, str]:
    """(data folder, runtime folder) for `system` (a sys.platform value) and environment `env`."""
    env = os.environ if env is None else env
    home = env.get("CTXLAMP_HOME")
    if home:
        root = os.path.realpath(os.path.expanduser(home))
        return root, root
    if system.startswith("win"):
        import ntpath

        profile = env.get("USERPROFILE") or ntpath.expanduser("~")
        local = env.get("LOCALAPPDATA") or ntpath.join(profile, "AppData", "Local")
        return ntpath.join(local, APP), ntpath.join(local, "Temp", APP)
    user_home = env.get("HOME") or os.path.expanduser("~")
    xdg_data = env.get("XDG_DATA_HOME", "")
    xdg_runtime = trusted_runtime_base(env)  # absolute, and this user's private folder
    if system == "darwin":
        data_base = xdg_data if xdg_data.startswith("/") else os.path.join(user_home, "Library", "Application Support")
        runtime_base = xdg_runtime or os.path.join(user_home, "Library", "Caches", "TemporaryItems")
        return os.path.join(data_base, APP), os.path.join(runtime_base, APP)
    data = os.path.join(xdg_data if xdg_data.startswith("/") else os.path.join(user_home, ".local", "share"), APP)
    if xdg_runtime:
        return data, os.path.join(xdg_runtime, APP)
    return data, os.path.join(data, "run")  # no per-login runtime folder (containers, cron): private under data


def candidates() -> list[str]:
    return [folders()[1]]


def api_file() -> str:
    """Where the running service announces its port and token."""
    return os.path.join(runtime_dir(), "api.json")


def runtime_dir() -> str:
    """The folder holding api.json."""
    found = candidates()
    for folder in found:
        if os.path.exists(os.path.join(folder, "api.json")):
            return folder
    if os.environ.get("CTXLAMP_HOME"):
        return found[0]
    try:
        import platformdirs  # noqa: F401 - (checked first: paths.py costs pathlib and dataclasses)
        from service.client.paths import app_paths
    except ImportError:  # platformdirs is not importable (python -S): the cheap guess is the answer
        return found[0]
    return str(app_paths().runtime)
