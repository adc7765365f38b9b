"""`ctxlamp screenshot --out DIR --demo` writes non-empty PNGs of the expected sizes."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from tests.support.corpus import ROOT

STATES = ("white", "green", "amber", "red", "grey")
TABS = ("overview", "session", "edits", "pinch", "retrieval", "history", "files", "settings")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


def png_pixels_vary(path: Path) -> bool:
    """A real picture, not a blank: decode with Qt and look for more than a handful of colours."""
    from PySide6.QtGui import QImage

    img = QImage(str(path))
    colours = {img.pixel(x, y) for x in range(0, img.width(), max(1, img.width() // 40))
               for y in range(0, img.height(), max(1, img.height() // 40))}
    return len(colours) > 5


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    out = tmp_path_factory.mktemp("shots")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CTXLAMP_HOME": str(out / "home")}
    r = subprocess.run([sys.executable, "-m", "service.cli", "screenshot", "--out", str(out), "--demo",
                        "--width", "1000", "--height", "700"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("state", STATES)
def test_icons_at_every_tray_size(shots, state):
    for size in (16, 22, 24, 32, 48, 64):
        assert png_size(shots / f"icon-{state}-{size}.png") == (size, size)
    for size in (16, 32, 64):
        for bg in ("light", "dark"):
            assert png_size(shots / f"icon-{state}-{size}-{bg}.png") == (size, size)


def test_window_tabs_are_rendered_at_the_asked_size(shots, qapp):
    for tab in [*TABS, *(f"{t}-dark" for t in TABS)]:
        path = shots / f"window-{tab}.png"
        assert png_size(path) == (1000, 700), tab
        assert png_pixels_vary(path), tab


def test_icon_sheet_and_reminder_popup(shots):
    w, h = png_size(shots / "icons-sheet.png")
    assert w > h > 0
    w, h = png_size(shots / "reminder-popup.png")
    assert w >= 300 and h > 60


def test_the_tray_strip_shows_the_demo_lamps_on_a_panel(shots, qapp):
    from PySide6.QtGui import QColor, QImage

    img = QImage(str(shots / "tray-demo-strip.png"))
    assert img.width() > 3 * img.height() > 0 and png_pixels_vary(shots / "tray-demo-strip.png")
    band = [QColor(img.pixel(x, y)) for x in range(img.width()) for y in range(4, 26)]  # the panel's icon row
    hues = {c.hslHue() // 10 for c in band if c.hslSaturation() > 120 and c.lightness() > 60}
    assert {3, 4} & hues and {10, 11, 12, 13} & hues  # the amber and the green lamp of the demo sessions
    assert not {0, 35} & hues  # no red: no demo session is red


def test_without_demo_and_without_service_it_says_what_to_do(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CTXLAMP_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "-m", "service.cli", "screenshot", "--out", str(tmp_path / "o")], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "--demo" in r.stderr and "ctxlamp serve" in r.stderr


def test_no_display_exits_2_and_points_to_serve_and_status(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["CTXLAMP_HOME"] = str(tmp_path / "home")
    r = subprocess.run([sys.executable, "-m", "service.cli"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "ctxlamp serve" in r.stderr and "ctxlamp status" in r.stderr
