"""The lamp icon, drawn with QPainter at each tray size so it stays crisp.

A filled disc in the lamp colour with a soft highlight, a dark outline (reads
on light panels) and a thin light halo outside it (reads on dark panels). The
grey "service down" lamp carries a dark bar so it differs from white in shape
too, not only in shade.
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap, QRadialGradient

from desktop.viewmodel import LAMP_FILL

SIZES = (16, 22, 24, 32, 48, 64)


def lamp_pixmap(colour: str, size: int) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(Qt.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.Antialiasing, True)
    fill = QColor(LAMP_FILL.get(colour, LAMP_FILL["grey"]))
    halo_w = max(1.0, size / 20.0)
    line_w = max(1.0, size / 16.0)
    margin = halo_w + line_w / 2
    r = QRectF(margin, margin, size - 2 * margin, size - 2 * margin)

    # light halo outside the outline (visible on dark panels)
    halo = QColor(255, 255, 255, 170)
    p.setPen(QPen(halo, halo_w * 2 + line_w))
    p.setBrush(Qt.NoBrush)
    p.drawEllipse(r)

    # the disc with a highlight towards the top left
    grad = QRadialGradient(QPointF(r.left() + r.width() * 0.35, r.top() + r.height() * 0.3), r.width() * 0.75)
    grad.setColorAt(0.0, fill.lighter(135))
    grad.setColorAt(1.0, fill if colour != "white" else fill.darker(108))
    p.setBrush(grad)
    p.setPen(QPen(QColor(30, 30, 30, 230), line_w))
    p.drawEllipse(r)

    if colour == "grey":
        bar_h = max(2.0, size / 8.0)
        bar = QRectF(r.left() + r.width() * 0.22, r.center().y() - bar_h / 2, r.width() * 0.56, bar_h)
        p.setPen(Qt.NoPen)
        p.setBrush(QColor(40, 40, 40, 230))
        p.drawRoundedRect(bar, bar_h / 2, bar_h / 2)
    p.end()
    return pm


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
