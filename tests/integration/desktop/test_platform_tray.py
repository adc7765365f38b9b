"""The tray seam: a monochrome template image and no Dock icon on macOS, the AppUserModelID on
Windows, the coloured lamp on Linux (Qt offscreen, the system passed in)."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QImage

from desktop.platforms import tray_host as pt
from desktop.widgets.icons import lamp_icon

STATES = ("white", "green", "amber", "red", "grey")


def _pixels(colour: str, size: int = 32) -> list[tuple[int, int, int, int]]:
    image = pt.template_pixmap(colour, size).toImage().convertToFormat(QImage.Format_ARGB32)
    return [(c.red(), c.green(), c.blue(), c.alpha()) for c in
            (image.pixelColor(x, y) for y in range(size) for x in range(size))]


@pytest.mark.parametrize("colour", STATES)
def test_the_template_image_is_black_ink_on_transparent(qapp, colour):
    pixels = _pixels(colour)
    inked = [p for p in pixels if p[3] > 0]
    assert inked and all(p[:3] == (0, 0, 0) for p in inked)
    assert any(p[3] == 0 for p in pixels)  # the bar shows through around the lamp


def test_every_state_has_its_own_template_shape(qapp):
    shapes = {colour: tuple(p[3] for p in _pixels(colour)) for colour in STATES}
    assert len(set(shapes.values())) == len(STATES)
    ink = {colour: sum(a > 127 for a in shape) for colour, shape in shapes.items()}
    assert ink["red"] == max(ink.values())  # the state to act on is the boldest


def test_macos_gets_a_template_icon_and_the_others_the_coloured_lamp(qapp):
    mac = pt.tray_icon("red", "darwin")
    assert mac.isMask() and not pt.tray_icon("red", "linux").isMask()
    assert pt.tray_icon("amber", "win32").cacheKey() == lamp_icon("amber").cacheKey()


class _FakeObjc:
    """The Objective-C runtime's three calls, recorded."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def objc_getClass(self, name: bytes) -> str:
        return f"class:{name.decode()}"

    def sel_registerName(self, name: bytes) -> str:
        return f"sel:{name.decode()}"

    def objc_msgSend(self, target, selector, *args):
        self.sent.append((target, selector, *args))
        return "app" if selector == "sel:sharedApplication" else None


def test_macos_hides_the_dock_icon_with_the_accessory_policy():
    objc = _FakeObjc()
    assert pt.prepare_app("darwin", objc=objc) == ["no Dock icon (accessory activation policy)"]
    assert objc.sent == [("class:NSApplication", "sel:sharedApplication"),
                         ("app", "sel:setActivationPolicy:", pt.NS_ACCESSORY)]


def test_windows_names_the_app_for_its_notifications():
    class Shell32:
        def __init__(self) -> None:
            self.ids: list[str] = []

        def SetCurrentProcessExplicitAppUserModelID(self, value: str) -> int:
            self.ids.append(value)
            return 0

    shell = Shell32()
    assert pt.prepare_app("win32", shell32=shell) == ["AppUserModelID io.ctxlamp.tray"]
    assert shell.ids == ["io.ctxlamp.tray"]


def test_linux_needs_no_set_up_and_a_failing_system_call_is_said_not_raised():
    assert pt.prepare_app("linux") == []

    class Broken:
        def SetCurrentProcessExplicitAppUserModelID(self, value: str) -> int:
            raise OSError("no shell32")

    assert pt.prepare_app("win32", shell32=Broken()) == ["notifications carry Python's name: no shell32"]
