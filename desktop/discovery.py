"""Find the running service: api.json in the runtime dir (docs/api.md).

Duplicates the tiny path rule of service/paths.py on purpose: the desktop must
not import service/. CTXLAMP_HOME wins, else platformdirs' user runtime dir (on Linux
without $XDG_RUNTIME_DIR, `<data>/run`); tests/unit/statusline/test_platform_folders.py checks they agree.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

APP = "ctxlamp"


def runtime_dir() -> Path:
    home = os.environ.get("CTXLAMP_HOME")
    if home:
        return Path(home).expanduser().resolve()
    import platformdirs

    if sys.platform not in ("darwin", "win32") and not os.environ.get("XDG_RUNTIME_DIR", "").startswith("/"):
        # no per-login runtime dir (containers, cron): the service stays private under its data dir
        return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "run"
    return Path(platformdirs.user_runtime_dir(APP, appauthor=False))


def config_dir() -> Path:
    """Where config.toml and the user's prices.json live (same rule as the service)."""
    home = os.environ.get("CTXLAMP_HOME")
    if home:
        return Path(home).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def claude_projects_dir() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(env).expanduser() if env else Path.home() / ".claude") / "projects"


def api_file() -> Path:
    return runtime_dir() / "api.json"


@dataclass(frozen=True)
class ApiInfo:
    port: int
    token: str
    pid: int | None = None
    version: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"


def read_api_info(path: Path | None = None) -> ApiInfo | None:
    """The service's port and token, or None when no service has announced itself."""
    path = path or api_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ApiInfo(port=int(data["port"]), token=str(data["token"]),
                       pid=data.get("pid"), version=data.get("version"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
