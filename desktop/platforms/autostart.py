"""Start ctxlamp at login, the way each system does it; the Settings switch writes or removes it.

- Linux (and other XDG desktops): `~/.config/autostart/ctxlamp.desktop` (respects XDG_CONFIG_HOME);
- macOS: a LaunchAgent, `~/Library/LaunchAgents/io.ctxlamp.tray.plist` (loaded at the next login);
- Windows: the value `ctxlamp` under HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run, written
  through a small `RunKey` (winreg on Windows; tests hand in their own to run this branch anywhere).

What starts is the tray: this installation's `ctxlamp tray`, else this Python's `-m service.cli tray`
(on Windows `pythonw.exe`, so no console window opens at login), or the frozen build itself.
"""
from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from service.client.own_python import module_argv

FILE_NAME = "ctxlamp.desktop"
AGENT_LABEL = "io.ctxlamp.tray"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
RUN_VALUE = "ctxlamp"


class RunKey(Protocol):
    """The current user's Run key: what Windows starts at login."""

    def get(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> None: ...


class WinregRunKey:
    """HKEY_CURRENT_USER\\...\\Run through winreg (Windows only)."""

    def get(self, name: str) -> str | None:
        if sys.platform != "win32":
            raise OSError("the Run key exists on Windows only")
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                value, _ = winreg.QueryValueEx(key, name)
        except FileNotFoundError:
            return None
        return value if isinstance(value, str) else None

    def set(self, name: str, value: str) -> None:
        if sys.platform != "win32":
            raise OSError("the Run key exists on Windows only")
        import winreg

        with winreg.CreateKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
            winreg.SetValueEx(key, name, 0, winreg.REG_SZ, value)

    def delete(self, name: str) -> None:
        if sys.platform != "win32":
            raise OSError("the Run key exists on Windows only")
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
                winreg.DeleteValue(key, name)
        except FileNotFoundError:
            pass


class UnsafeCommand(ValueError):
    """A program path no start-at-login entry can name safely (a control character in it)."""


def checked_argv(argv: Sequence[str]) -> list[str]:
    """`argv` as given, or UnsafeCommand: a line break in a path would add lines (keys) to the XDG entry
    and a control character has no form in a Desktop Entry value or a plist, so neither is written."""
    for word in argv:
        bad = next((c for c in word if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f), None)
        if bad is not None:
            raise UnsafeCommand(f"the path {word!r} holds the control character U+{ord(bad):04X}: "
                                "start at login cannot name it; move ctxlamp to a folder without one")
    return list(argv)


def system_kind(system: str = sys.platform) -> str:
    if system.startswith("win"):
        return "windows"
    if system == "darwin":
        return "macos"
    return "xdg"


def tray_argv(system: str = sys.platform) -> list[str]:
    """The command line that starts the tray, as a list of words."""
    if getattr(sys, "frozen", False):  # the packaged build starts the tray by default
        windowless = Path(sys.executable).with_name("ctxlampw.exe")  # Windows: no console window
        if system_kind(system) == "windows" and windowless.is_file():
            return [str(windowless)]
        return [sys.executable]
    if system_kind(system) == "windows":
        windowless = Path(sys.executable).with_name("pythonw.exe")
        python = str(windowless) if windowless.is_file() else sys.executable
        return module_argv("service.cli", "tray", python=python)
    exe = shutil.which("ctxlamp")
    if exe:
        return [exe, "tray"]
    return module_argv("service.cli", "tray")


# ---- Linux: an XDG autostart entry ------------------------------------------------------------
def autostart_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "autostart" / FILE_NAME


def desktop_exec(argv: Sequence[str]) -> str:
    """`Exec=` per the Desktop Entry spec: words with reserved characters in double quotes
    (`"`, backquote, `$` and backslash escaped inside), `%` doubled; then the string-value
    escape of backslashes. A control character is refused (UnsafeCommand)."""
    reserved = set(" \t\n\"'\\><~|&;$*?#()`")
    words = []
    for word in checked_argv(argv):
        word = word.replace("%", "%%")
        if any(c in reserved for c in word):
            word = '"' + "".join("\\" + c if c in '"`$\\' else c for c in word) + '"'
        words.append(word)
    return " ".join(words).replace("\\", "\\\\")


def entry_text(command: str | None = None) -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Name=ctxlamp",
        "Comment=Tray lamp: when restarting a Claude Code session pays",
        f"Exec={command or desktop_exec(tray_argv())}",
        "Icon=ctxlamp",
        "Terminal=false",
        "X-GNOME-Autostart-enabled=true",
        "",
    ])


# ---- macOS: a LaunchAgent ---------------------------------------------------------------------
def launch_agent_file() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"


def launch_agent(argv: Sequence[str]) -> bytes:
    """Started once at login in the user's graphical session; not restarted when the user quits it."""
    return plistlib.dumps({
        "Label": AGENT_LABEL,
        "ProgramArguments": list(argv),
        "RunAtLoad": True,
        "KeepAlive": False,
        "LimitLoadToSessionType": "Aqua",
        "ProcessType": "Interactive",
    })


# ---- the switch -------------------------------------------------------------------------------
class LoginItem:
    """This system's start-at-login entry; `system` and `run_key` are for tests."""

    def __init__(self, system: str = sys.platform, run_key: RunKey | None = None) -> None:
        self.kind = system_kind(system)
        self.system = system
        self._run_key = run_key

    def run_key(self) -> RunKey:
        if self._run_key is None:
            self._run_key = WinregRunKey()
        return self._run_key

    def location(self) -> str:
        if self.kind == "windows":
            return f"HKEY_CURRENT_USER\\{RUN_KEY}\\{RUN_VALUE}"
        return str(launch_agent_file() if self.kind == "macos" else autostart_file())

    def is_enabled(self) -> bool:
        if self.kind == "windows":
            return self.run_key().get(RUN_VALUE) is not None
        return Path(self.location()).exists()

    def set_enabled(self, enabled: bool) -> str:
        """Write or remove the entry; returns where it is (a path, or the registry value's name)."""
        argv = checked_argv(tray_argv(self.system)) if enabled else []
        if self.kind == "windows":
            if enabled:
                self.run_key().set(RUN_VALUE, subprocess.list2cmdline(argv))
            else:
                self.run_key().delete(RUN_VALUE)
            return self.location()
        path = Path(self.location())
        if enabled:
            path.parent.mkdir(parents=True, exist_ok=True)
            if self.kind == "macos":
                path.write_bytes(launch_agent(argv))
            else:
                path.write_text(entry_text(desktop_exec(argv)), encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
        return str(path)


def location() -> str:
    return LoginItem().location()


def is_enabled() -> bool:
    return LoginItem().is_enabled()


def set_enabled(enabled: bool) -> str:
    return LoginItem().set_enabled(enabled)
