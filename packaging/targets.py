"""What the PyInstaller build makes on each system (read by ctxlamp.spec; tested on any system).

- Linux: one folder with the `ctxlamp` executable (the tray by default, every CLI command).
- Windows: one folder with `ctxlamp.exe` (a console program: the CLI, and the hook and status line
  Claude Code runs) and `ctxlampw.exe` (the same program without a console window: the tray, its
  service and start at login).
- macOS: `ctxlamp.app`, a menu-bar-only app (`LSUIElement`: no Dock icon, no app menu) whose
  executable also runs every CLI command from a terminal.
"""
from __future__ import annotations

BUNDLE_ID = "io.ctxlamp.tray"


def plan(system: str, version: str) -> dict:
    """{"executables": [(name, console)], "bundle": None or {name, identifier, info_plist}}."""
    if system.startswith("win"):
        return {"executables": [("ctxlamp", True), ("ctxlampw", False)], "bundle": None}
    if system == "darwin":
        info = {
            "LSUIElement": True,
            "CFBundleName": "ctxlamp",
            "CFBundleDisplayName": "ctxlamp",
            "CFBundleShortVersionString": version,
            "CFBundleVersion": version,
            "NSHighResolutionCapable": True,
            "LSMinimumSystemVersion": "11.0",
        }
        return {"executables": [("ctxlamp", False)],
                "bundle": {"name": "ctxlamp.app", "identifier": BUNDLE_ID, "info_plist": info}}
    return {"executables": [("ctxlamp", True)], "bundle": None}


def built_executable(system: str, dist: str) -> str:
    """Where `make dist` leaves the program to run, for its closing message."""
    if system.startswith("win"):
        return f"{dist}\\ctxlamp\\ctxlamp.exe"
    if system == "darwin":
        return f"{dist}/ctxlamp.app/Contents/MacOS/ctxlamp"
    return f"{dist}/ctxlamp/ctxlamp"
