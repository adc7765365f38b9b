"""Start ctxlamp at login: an XDG autostart entry (~/.config/autostart/ctxlamp.desktop).

Respects XDG_CONFIG_HOME. The entry runs the same interpreter's `-m service.cli tray`
when no `ctxlamp` launcher is on PATH, so it works from a venv too.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

FILE_NAME = "ctxlamp.desktop"


def autostart_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "autostart" / FILE_NAME


def launcher_command() -> str:
    exe = shutil.which("ctxlamp")
    if exe:
        return shlex.quote(exe) + " tray"
    return f"{shlex.quote(sys.executable)} -m service.cli tray"


def entry_text(command: str | None = None) -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Name=ctxlamp",
        "Comment=Tray lamp: when restarting a Claude Code session pays",
        f"Exec={command or launcher_command()}",
        "Icon=ctxlamp",
        "Terminal=false",
        "X-GNOME-Autostart-enabled=true",
        "",
    ])


def is_enabled() -> bool:
    return autostart_file().exists()


def set_enabled(enabled: bool) -> Path:
    path = autostart_file()
    if enabled:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(entry_text(), encoding="utf-8")
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    return path
