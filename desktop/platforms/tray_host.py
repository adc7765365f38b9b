"""The tray seam: what differs per system in showing the lamp.

- macOS: the menu bar wants a monochrome template image (black with alpha; the system tints it
  for light and dark bars, `QIcon.setIsMask`), and a menu-bar app shows no Dock icon: the
  packaged `.app` says so with `LSUIElement`, a run from source sets the accessory activation
  policy at start (through the Objective-C runtime with ctypes: no PyObjC needed).
- Windows: the lamp sits in the notification area; an explicit AppUserModelID makes its
  notifications carry ctxlamp's name instead of Python's.
- Linux: the coloured lamp (desktop/widgets/icons.py) in the StatusNotifier/XEmbed tray.
Notifications go through Qt's tray messages wherever `supportsMessages()` says they work
(desktop/tray.py), else ctxlamp's own popup.
"""
from __future__ import annotations

import sys
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap

from desktop.widgets.icons import SIZES, draw_mark, lamp_icon

APP_USER_MODEL_ID = "io.ctxlamp.tray"
NS_ACCESSORY = 1  # NSApplicationActivationPolicyAccessory: no Dock icon, no app menu


def uses_template_icon(system: str = sys.platform) -> bool:
    return system == "darwin"


def template_pixmap(colour: str, size: int) -> QPixmap:
    """The lamp for a template image: black ink only, the state told by its mark (and a filled disc
    with the cross cut out when restarting pays, so the one state to act on stands out)."""
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    ink = QColor(0, 0, 0, 255)
    line_w = max(1.0, size / 14.0)
    margin = line_w
    r = QRectF(margin, margin, size - 2 * margin, size - 2 * margin)
    if colour == "red":
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(ink)
        p.drawEllipse(r)
        p.setCompositionMode(QPainter.CompositionMode.CompositionMode_Clear)
        d, c = r.width() * 0.19, r.center()
        p.setPen(QPen(ink, max(1.4, r.width() / 7.0), Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        p.drawLine(QPointF(c.x() - d, c.y() - d), QPointF(c.x() + d, c.y() + d))
        p.drawLine(QPointF(c.x() - d, c.y() + d), QPointF(c.x() + d, c.y() - d))
    else:
        p.setPen(QPen(ink, line_w))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawEllipse(r)
        draw_mark(p, colour, r, ink=ink)
    p.end()
    return pm


_templates: dict[str, QIcon] = {}


def tray_icon(colour: str, system: str = sys.platform) -> QIcon:
    """The tray's icon for this system: a template image on macOS, the coloured lamp elsewhere."""
    if not uses_template_icon(system):
        return lamp_icon(colour)
    icon = _templates.get(colour)
    if icon is None:
        icon = QIcon()
        for s in SIZES:
            icon.addPixmap(template_pixmap(colour, s))
        icon.setIsMask(True)
        _templates[colour] = icon
    return icon


def prepare_app(system: str = sys.platform, *, objc: Any = None, shell32: Any = None) -> list[str]:
    """Per-system set-up once the QApplication exists; returns what it did (for the log and tests).
    `objc` and `shell32` stand in for the system libraries in tests."""
    done: list[str] = []
    if system == "darwin":
        try:
            _accessory_policy(objc)
            done.append("no Dock icon (accessory activation policy)")
        except (OSError, AttributeError) as exc:
            done.append(f"Dock icon stays: {exc}")
    elif system.startswith("win"):
        try:
            lib = shell32 if shell32 is not None else _shell32()
            lib.SetCurrentProcessExplicitAppUserModelID(APP_USER_MODEL_ID)
            done.append(f"AppUserModelID {APP_USER_MODEL_ID}")
        except (OSError, AttributeError) as exc:
            done.append(f"notifications carry Python's name: {exc}")
    return done


def _shell32() -> Any:
    import ctypes

    return ctypes.windll.shell32  # type: ignore[attr-defined]


def _accessory_policy(objc: Any = None) -> None:
    """[[NSApplication sharedApplication] setActivationPolicy:Accessory] through libobjc."""
    import ctypes

    if objc is None:
        objc = ctypes.cdll.LoadLibrary("/usr/lib/libobjc.A.dylib")
        objc.objc_getClass.restype = ctypes.c_void_p
        objc.sel_registerName.restype = ctypes.c_void_p
        objc.objc_msgSend.restype = ctypes.c_void_p
        objc.objc_msgSend.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    ns_app = objc.objc_msgSend(objc.objc_getClass(b"NSApplication"), objc.sel_registerName(b"sharedApplication"))
    if not ns_app:
        raise OSError("no NSApplication")
    send = objc.objc_msgSend
    if hasattr(send, "argtypes"):
        send.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    send(ns_app, objc.sel_registerName(b"setActivationPolicy:"), NS_ACCESSORY)
