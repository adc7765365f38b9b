"""Checks a newcomer's machine for what ctxlamp needs, and names the fix.

`ctxlamp doctor` (or `python -m service.cli.doctor`) tries the Qt platform the tray will really use (xcb or wayland on
Linux, cocoa on macOS, windows on Windows) in a child process, and on Linux reads which system
libraries that platform's plugin cannot find (`ldd`), naming each with the apt-get command that
installs it. `ctxlamp start` prints the same diagnosis; the on-screen tests skip with it.
`--for-tests` is what `make test` runs first (it never blocks the tests, it explains).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from service.client.own_python import python_argv

QT_APT = ("sudo apt-get install -y libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 "
          "libdbus-1-3 libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0")

# Debian/Ubuntu packages of the libraries Qt's platform plugins load (soname -> package)
PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0", "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0", "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0", "libxcb-image.so.0": "libxcb-image0",
    "libxcb-util.so.1": "libxcb-util1", "libxcb-xkb.so.1": "libxcb-xkb1", "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb.so.1": "libxcb1", "libX11.so.6": "libx11-6", "libEGL.so.1": "libegl1", "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0", "libfontconfig.so.1": "libfontconfig1", "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3", "libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
    "libwayland-client.so.0": "libwayland-client0", "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


@dataclass
class Diagnosis:
    """What the doctor found for one Qt platform."""
    platform: str
    problem: str | None = None                          # Qt's own last words, or None when it started
    missing: list[str] = field(default_factory=list)    # sonames the plugin cannot load
    packages: list[str] = field(default_factory=list)   # the apt packages that bring them
    tried: bool = False                                 # Qt was started on it (a display was there)

    @property
    def ok(self) -> bool:
        return self.problem is None and not self.missing

    def fix(self) -> str | None:
        """The command that installs what is missing (None when nothing is, or it is not known)."""
        if self.packages:
            return "sudo apt-get install -y " + " ".join(self.packages)
        if self.problem and "plugin" in self.problem and self.platform in ("xcb", "wayland"):
            return QT_APT
        return None

    def text(self) -> str:
        """One paragraph a user can act on."""
        if self.ok and self.tried:
            return f"Qt starts on the {self.platform} platform."
        if self.ok:
            return f"Qt's {self.platform} platform finds its libraries (not started: no display)."
        parts = [f"Qt cannot start on the {self.platform} platform"]
        if self.missing:
            parts.append(f": missing {', '.join(self.missing)}")
            if self.packages:
                parts.append(f" ({', '.join(self.packages)})")
        elif self.problem:
            parts.append(f" ({self.problem})")
        fix = self.fix()
        return "".join(parts) + (f". Install with: {fix}" if fix else ".")


def tray_platform(env: Mapping[str, str] = os.environ, system: str = sys.platform) -> str:
    """The Qt platform plugin the tray will load here (Qt's own choice, or QT_QPA_PLATFORM)."""
    chosen = (env.get("QT_QPA_PLATFORM") or "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    if system == "darwin":
        return "cocoa"
    if system.startswith("win"):
        return "windows"
    if env.get("XDG_SESSION_TYPE") == "wayland" and env.get("WAYLAND_DISPLAY"):
        return "wayland"
    return "xcb"


def qt_problem(platform: str = "offscreen") -> str | None:
    """None when Qt starts on `platform`, else what went wrong (in a child: a failed load can abort)."""
    code = "from PySide6.QtWidgets import QApplication; QApplication([])"
    env = dict(os.environ, QT_QPA_PLATFORM=platform) if platform else dict(os.environ)
    try:
        proc = subprocess.run(python_argv("-c", code), env=env, capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    # Qt >= 6.5 prints its xcb-cursor hint on every xcb failure, a missing display too: the display
    # line first, then the plugin's; which libraries are really missing comes from ldd (diagnose)
    lines = [ln.strip() for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
    display = [ln for ln in lines if "could not connect to display" in ln or "Failed to create wl_display" in ln]
    plugin = [ln for ln in lines if "platform plugin" in ln and "is needed" not in ln]
    return (display or plugin or lines or [f"exit code {proc.returncode}"])[0]


def plugin_file(platform: str) -> Path | None:
    """PySide6's plugin for a Linux platform (libqxcb.so, libqwayland*.so), found without importing Qt."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "Qt" / "plugins" / "platforms"
    names = {"xcb": ["libqxcb.so"], "wayland": ["libqwayland.so", "libqwayland-generic.so", "libqwayland-egl.so"]}
    for name in names.get(platform, []):
        if (folder / name).is_file():
            return folder / name
    return None


def missing_libraries(platform: str, *, ldd_output: str | None = None) -> list[str]:
    """Sonames the platform's plugin (and what it links) cannot find, read from `ldd`."""
    if ldd_output is None:
        plugin = plugin_file(platform)
        ldd = shutil.which("ldd")
        if plugin is None or ldd is None:
            return []
        try:
            ldd_output = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=30,
                                        check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
    found: list[str] = []
    for soname in _NOT_FOUND.findall(ldd_output):
        if soname not in found:
            found.append(soname)
    return found


def diagnose(platform: str | None = None, *, try_qt: bool | None = None) -> Diagnosis:
    """The tray's platform tried for real (when a display can be reached) and its libraries read."""
    platform = platform or tray_platform()
    result = Diagnosis(platform)
    if platform in ("xcb", "wayland"):
        result.missing = missing_libraries(platform)
        result.packages = []
        for soname in result.missing:
            package = PACKAGES.get(soname, f"the package with {soname} (apt-file search {soname})")
            if package not in result.packages:
                result.packages.append(package)
    display = {"xcb": "DISPLAY", "wayland": "WAYLAND_DISPLAY"}.get(platform)
    if try_qt is None:
        try_qt = display is None or bool(os.environ.get(display))
    if try_qt:
        result.tried = True
        result.problem = qt_problem(platform)
    return result


def settings_problem() -> str | None:
    """Why config.toml stops the service (it does not parse), else why its last start failed; None: fine."""
    from service.config import check_file
    from service.client import start_failure
    from service.client.paths import app_paths

    paths = app_paths()
    unreadable = check_file(paths.config_file)
    if unreadable is not None:
        return f"the service cannot start: {unreadable}."
    why = start_failure.last(paths)
    return f"the service's last start failed: {why}." if why else None


def _installed_problem() -> str | None:
    """An installed command (status line, hook, MCP server) that runs a file no longer there."""
    from service.claude.installed import problem

    found = problem()
    return f"{found}." if found else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    for_tests = "--for-tests" in argv
    from service.engine_setup.compiled import describe

    print(f"ctxlamp doctor: {describe()}")  # which build of the engine this Python runs
    settings = None if for_tests else settings_problem() or _installed_problem()  # tests: their own settings
    if settings:
        print(f"ctxlamp doctor: {settings}", file=sys.stderr)
    elif not for_tests:
        from service.claude.installed import moving_breaks

        if note := moving_breaks():
            print(f"ctxlamp doctor: {note}.")
    headless = qt_problem("offscreen")
    if headless:
        print(f"ctxlamp doctor: Qt cannot start ({headless}).\n  Install its libraries with:\n  {QT_APT}",
              file=sys.stderr)
        return 0 if for_tests else 1
    tray = diagnose()
    if not tray.ok:
        print(f"ctxlamp doctor: the tray's {tray.text()}", file=sys.stderr)
        if for_tests:
            print("  The on-screen tests skip with this reason.", file=sys.stderr)
        return 0 if for_tests else 1
    if settings:
        print(f"ctxlamp doctor: {tray.text()}")
        return 1
    if not for_tests:
        print(f"ctxlamp doctor: {tray.text()} Everything ctxlamp needs is here.")
        from service.cli import keeping

        lines, _warned = keeping.report()
        for line in lines:
            print(f"ctxlamp doctor: {line}")
    return 0


def configure(parser) -> None:
    parser.add_argument("--for-tests", action="store_true", help="explain what is missing and exit 0 "
                        "(what `make test` runs first: the on-screen tests then skip, saying why)")


def run(args) -> int:
    """`ctxlamp doctor`: the same check as `python -m service.cli.doctor`."""
    return main(["--for-tests"] if args.for_tests else [])


if __name__ == "__main__":
    sys.exit(main())
