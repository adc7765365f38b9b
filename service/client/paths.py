"""Where ctxlamp keeps its files (platformdirs, app name `ctxlamp`).

`CTXLAMP_HOME` puts everything in one folder (tests, demos, portable use);
`CLAUDE_CONFIG_DIR` says where Claude Code keeps `projects/`.
The status line and the desktop find api.json by the cheap rules of `where.py`, which tests hold
equal to these; atomic private writes are `privdir.write_private`.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.client.privdir import make_private_dirs, trusted_runtime_base

APP = "ctxlamp"


@dataclass(frozen=True)
class Paths:
    data: Path
    config: Path
    runtime: Path

    @property
    def db(self) -> Path:
        return self.data / "ctxlamp.db"

    @property
    def checkpoints(self) -> Path:
        return self.data / "checkpoints"

    @property
    def ledgers(self) -> Path:
        return self.data / "ledgers"

    @property
    def config_file(self) -> Path:
        return self.config / "config.toml"

    @property
    def prices_override(self) -> Path:
        return self.config / "prices.json"

    @property
    def api_file(self) -> Path:
        return self.runtime / "api.json"

    @property
    def lock_file(self) -> Path:
        return self.runtime / "service.lock"

    @property
    def log_file(self) -> Path:
        return self.data / "service.log"

    def ensure(self) -> "Paths":
        """Create the folders private to the user (0700)."""
        for folder in {self.data, self.config, self.runtime, self.checkpoints, self.ledgers}:
            make_private_dirs(folder)
            try:
                os.chmod(folder, 0o700)
            except OSError:
                pass
        return self


def app_paths(system: str | None = None) -> Paths:
    """This user's folders; `system` (a sys.platform value) asks for another system's rules (tests)."""
    home = os.environ.get("CTXLAMP_HOME")
    if home:
        root = Path(home).expanduser().resolve()
        return Paths(data=root, config=root, runtime=root)
    dirs = _platform_dirs(system)
    data = Path(dirs.user_data_dir)
    system = system or sys.platform
    if system.startswith("win"):
        runtime = Path(dirs.user_runtime_dir)
    elif xdg := trusted_runtime_base():  # the one rule where.py applies too: this user's private folder only
        runtime = Path(xdg) / APP
    elif system == "darwin":
        runtime = Path(os.path.expanduser("~/Library/Caches/TemporaryItems")) / APP  # platformdirs' macOS default
    else:
        runtime = data / "run"  # no per-login runtime dir (containers, cron), or one not private: under data
    return Paths(data=data, config=Path(dirs.user_config_dir), runtime=runtime)


def _platform_dirs(system: str | None) -> Any:
    if system is None:
        import platformdirs

        return platformdirs.PlatformDirs(APP, appauthor=False)
    if system == "darwin":
        from platformdirs.macos import MacOS as cls
    elif system.startswith("win"):
        from platformdirs.windows import Windows as cls  # type: ignore[assignment]
    else:
        from platformdirs.unix import Unix as cls  # type: ignore[assignment]
    return cls(APP, appauthor=False)


def claude_dir() -> Path:
    """Claude Code's config folder: $CLAUDE_CONFIG_DIR, else ~/.claude (on Windows the home is
    %USERPROFILE%, so %USERPROFILE%\\.claude)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def claude_projects() -> Path:
    return claude_dir() / "projects"
