"""The lamp icon, drawn with QPainter at each tray size so it stays crisp.

A filled disc in the lamp colour with a soft highlight, a dark outline (reads
on light panels) and a thin light halo outside it (reads on dark panels). Each
state also carries its own mark, so it reads without colour (colour-blind
users, monochrome panels): white a small ring (fresh), green a tick (good),
amber an exclamation mark (past the sweet spot), red a cross (restart pays),
grey a bar (service down).
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPainterPath, QPen, QPixmap, QRadialGradient

from desktop.present.lamp import LAMP_FILL

SIZES = (16, 22, 24, 32, 48, 64)


def lamp_pixmap(colour: str, size: int) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    fill = QColor(LAMP_FILL.get(colour, LAMP_FILL["grey"]))
    halo_w = max(1.0, size / 20.0)
    line_w = max(1.0, size / 16.0)
    margin = halo_w + line_w / 2
    r = QRectF(margin, margin, size - 2 * margin, size - 2 * margin)

    # light halo outside the outline (visible on dark panels)
    halo = QColor(255, 255, 255, 170)
    p.setPen(QPen(halo, halo_w * 2 + line_w))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawEllipse(r)

    # the disc with a highlight towards the top left
    grad = QRadialGradient(QPointF(r.left() + r.width() * 0.35, r.top() + r.height() * 0.3), r.width() * 0.75)
    grad.setColorAt(0.0, fill.lighter(135))
    grad.setColorAt(1.0, fill if colour != "white" else fill.darker(108))
    p.setBrush(grad)
    p.setPen(QPen(QColor(30, 30, 30, 230), line_w))
    p.drawEllipse(r)

    draw_mark(p, colour, r)
    p.end()
    return pm


MARK_INK = {"red": QColor(255, 255, 255, 240)}  # a light mark on the dark red, dark marks elsewhere


def draw_mark(p: QPainter, colour: str, r: QRectF, ink: QColor | None = None) -> None:
    """The state's shape inside the disc `r` (in `ink`, else the state's own mark colour)."""
    ink = ink if ink is not None else MARK_INK.get(colour, QColor(30, 30, 30, 235))
    w = r.width()
    c = r.center()
    stroke = max(1.4, w / 7.0)
    pen = QPen(ink, stroke, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
    p.setBrush(Qt.BrushStyle.NoBrush)
    if colour == "grey":
        bar_h = max(2.0, w / 7.0)
        bar = QRectF(r.left() + w * 0.22, c.y() - bar_h / 2, w * 0.56, bar_h)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(ink)
        p.drawRoundedRect(bar, bar_h / 2, bar_h / 2)
    elif colour == "white":
        p.setPen(QPen(ink, max(1.0, w / 10.0)))
        p.drawEllipse(c, w * 0.18, w * 0.18)
    elif colour == "green":
        path = QPainterPath(QPointF(c.x() - w * 0.22, c.y() + w * 0.01))
        path.lineTo(QPointF(c.x() - w * 0.05, c.y() + w * 0.18))
        path.lineTo(QPointF(c.x() + w * 0.24, c.y() - w * 0.17))
        p.setPen(pen)
        p.drawPath(path)
    elif colour == "amber":
        p.setPen(pen)
        p.drawLine(QPointF(c.x(), c.y() - w * 0.24), QPointF(c.x(), c.y() + w * 0.04))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(ink)
        p.drawEllipse(QPointF(c.x(), c.y() + w * 0.21), stroke * 0.6, stroke * 0.6)
    elif colour == "red":
        d = w * 0.19
        p.setPen(pen)
        p.drawLine(QPointF(c.x() - d, c.y() - d), QPointF(c.x() + d, c.y() + d))
        p.drawLine(QPointF(c.x() - d, c.y() + d), QPointF(c.x() + d, c.y() - d))


_cache: dict[str, QIcon] = {}


def lamp_icon(colour: str) -> QIcon:
    """One QIcon with a pixmap drawn for every tray size (no scaling blur)."""
    icon = _cache.get(colour)
    if icon is None:
        icon = QIcon()
        for s in SIZES:
            icon.addPixmap(lamp_pixmap(colour, s))
        _cache[colour] = icon
    return icon
