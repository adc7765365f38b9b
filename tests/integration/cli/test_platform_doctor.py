"""The doctor tries the Qt platform the tray will really use and names the missing library with
the command that installs it; `ctxlamp start` quotes it."""
from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest

from service.cli import doctor, start
from service.cli.doctor import Diagnosis, diagnose, missing_libraries, tray_platform

# `ldd .../libqxcb.so` on a desktop without libxcb-cursor0 (the shape ldd prints)
LDD_NO_CURSOR = """\
\tlinux-vdso.so.1 (0x00007ffc1d5f2000)
\tlibQt6XcbQpa.so.6 => /opt/venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f1c2a000000)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => /lib/x86_64-linux-gnu/libxcb-icccm.so.4 (0x00007f1c29e00000)
\tlibxcb-cursor.so.0 => not found
\tlibfoo-unknown.so.3 => not found
"""


@pytest.mark.parametrize("env, system, platform", [
    ({}, "linux", "xcb"),
    ({"XDG_SESSION_TYPE": "x11", "DISPLAY": ":0"}, "linux", "xcb"),
    ({"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, "linux", "wayland"),
    ({"QT_QPA_PLATFORM": "xcb"}, "linux", "xcb"),
    ({"QT_QPA_PLATFORM": "wayland;xcb"}, "linux", "wayland"),
    ({}, "darwin", "cocoa"),
    ({}, "win32", "windows"),
])
def test_the_platform_the_tray_will_use(env, system, platform):
    assert tray_platform(env, system) == platform


def test_missing_libraries_are_read_from_ldd_once_each():
    assert missing_libraries("xcb", ldd_output=LDD_NO_CURSOR) == ["libxcb-cursor.so.0", "libfoo-unknown.so.3"]


def test_the_diagnosis_names_the_package_and_the_command():
    d = Diagnosis("xcb", missing=["libxcb-cursor.so.0"], packages=[doctor.PACKAGES["libxcb-cursor.so.0"]])
    assert not d.ok and d.fix() == "sudo apt-get install -y libxcb-cursor0"
    assert d.text() == ("Qt cannot start on the xcb platform: missing libxcb-cursor.so.0 (libxcb-cursor0). "
                        "Install with: sudo apt-get install -y libxcb-cursor0")
    assert Diagnosis("xcb").ok and Diagnosis("xcb").fix() is None
    assert Diagnosis("xcb", problem="could not connect to display :9").fix() is None  # no library to name


@pytest.mark.parametrize("platform", ["xcb", "wayland"])
def test_on_this_machine_the_doctor_reports_what_ldd_reports(platform):
    plugin = doctor.plugin_file(platform)
    if plugin is None or shutil.which("ldd") is None:
        pytest.skip(f"no {platform} plugin or no ldd here")
    out = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=False).stdout
    expected: list[str] = []
    for line in out.splitlines():
        left, _, right = line.partition("=>")
        if right.strip() == "not found" and left.strip() not in expected:
            expected.append(left.strip())
    d = diagnose(platform, try_qt=False)
    assert d.missing == expected and d.ok == (not expected)
    for soname in expected:
        assert soname in d.text()


def test_a_failed_qt_start_is_tried_for_real_in_a_child():
    problem = doctor.qt_problem("no-such-platform")
    assert problem and "no-such-platform" in problem
    assert doctor.qt_problem("offscreen") is None


def test_start_quotes_the_doctor(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CTXLAMP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setattr(start, "has_display", lambda: True)
    broken = Diagnosis("xcb", missing=["libxcb-cursor.so.0"], packages=["libxcb-cursor0"])
    monkeypatch.setattr(doctor, "diagnose", lambda *a, **k: broken)

    def stop_here(args, env):
        raise KeyboardInterrupt  # the terminal view would start next: stop as Ctrl-C would

    monkeypatch.setattr(start, "_child", stop_here)
    assert start.run(argparse.Namespace(demo=False, headless=False)) == 0
    err = capsys.readouterr().err
    assert "the tray cannot start. Qt cannot start on the xcb platform: missing libxcb-cursor.so.0" in err
    assert "sudo apt-get install -y libxcb-cursor0" in err


def test_no_display_is_not_read_as_a_missing_library(monkeypatch):
    """Qt >= 6.5 prints its xcb-cursor hint on every xcb failure; only ldd says a library is missing."""
    monkeypatch.setenv("DISPLAY", ":4242")
    d = diagnose("xcb", try_qt=True)
    if d.missing:
        pytest.skip(f"this machine lacks xcb libraries: {d.text()}")
    assert d.tried and d.problem and "could not connect to display" in d.problem
    assert d.fix() is None and "apt-get" not in d.text()
