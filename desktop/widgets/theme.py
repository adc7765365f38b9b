"""Light and dark: the window follows the system palette; charts take their colours from it.

`ctxlamp screenshot` renders both (use("light") / use("dark")) so the pictures
show what users of either desktop see. Qt-only helpers, no data logic.
"""
from __future__ import annotations

from PySide6.QtGui import QColor, QGuiApplication, QPalette

# Series colours that read on white and on near-black (Okabe-Ito, colour-blind safe).
SERIES = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999")


def palette() -> QPalette:
    app = QGuiApplication.instance()
    return app.palette() if isinstance(app, QGuiApplication) else QPalette()


def is_dark(pal: QPalette | None = None) -> bool:
    pal = pal or palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < 128


def colours() -> dict[str, str]:
    """Chart colours from the current palette: background, text, muted text, note fill."""
    pal = palette()
    dark = is_dark(pal)
    return {
        "bg": pal.color(QPalette.ColorRole.Base).name(),
        "fg": pal.color(QPalette.ColorRole.Text).name(),
        "muted": "#a8a8a8" if dark else "#555555",
        "fill": "#2b2b2b" if dark else "#ffffff",
        "warn": "#ffb74d" if dark else "#b36b00",
        "good": "#66d17a" if dark else "#2a7a3a",
        "measured": "#66d17a" if dark else "#1d6b2f",
        "estimated": "#ffb74d" if dark else "#8a5a00",
    }


def dark_palette() -> QPalette:
    p = QPalette()
    window, base, text = QColor("#202124"), QColor("#17181a"), QColor("#e8eaed")
    for role, colour in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text), (QPalette.ColorRole.Base, base),
                         (QPalette.ColorRole.AlternateBase, QColor("#26272a")), (QPalette.ColorRole.Text, text),
                         (QPalette.ColorRole.Button, QColor("#2d2e31")), (QPalette.ColorRole.ButtonText, text),
                         (QPalette.ColorRole.ToolTipBase, QColor("#2d2e31")), (QPalette.ColorRole.ToolTipText, text),
                         (QPalette.ColorRole.Highlight, QColor("#3d6fb6")), (QPalette.ColorRole.HighlightedText, QColor("#ffffff")),
                         (QPalette.ColorRole.Link, QColor("#8ab4f8")), (QPalette.ColorRole.PlaceholderText, QColor("#9aa0a6")),
                         (QPalette.ColorRole.BrightText, QColor("#ff8a80"))):
        p.setColor(role, colour)
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#777777"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#777777"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText, QColor("#777777"))
    return p


def use(app, mode: str) -> None:
    """Screenshots: Fusion with the light (standard) or the dark palette."""
    app.setStyle("Fusion")
    app.setPalette(dark_palette() if mode == "dark" else app.style().standardPalette())
