"""`ctxlamp screenshot --out DIR [--demo]`: tray icons and window tabs as PNG files.

Renders on Qt's offscreen platform (unless QT_QPA_PLATFORM says otherwise), so
it runs on a headless machine and in CI. With --demo it shows the bundled demo
data (resources/demo/); without, the running service's data.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ICON_SHEET_SIZES = (16, 32, 64)
BACKGROUNDS = {"light": "#f2f2f2", "dark": "#202124"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="folder for the PNG files")
    parser.add_argument("--demo", action="store_true", help="use the bundled demo data, not the service")
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=760)


def render_icons(out: Path) -> list[Path]:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QPainter, QPixmap

    from desktop.widgets.icons import SIZES, lamp_pixmap
    from desktop.present.lamp import LAMP_COLOURS

    files = []
    for colour in LAMP_COLOURS:
        for size in SIZES:
            path = out / f"icon-{colour}-{size}.png"
            lamp_pixmap(colour, size).save(str(path), "PNG")
            files.append(path)
        for size in ICON_SHEET_SIZES:
            for bg_name, bg in BACKGROUNDS.items():
                pm = QPixmap(size, size)
                pm.fill(QColor(bg))
                p = QPainter(pm)
                p.drawPixmap(0, 0, lamp_pixmap(colour, size))
                p.end()
                path = out / f"icon-{colour}-{size}-{bg_name}.png"
                pm.save(str(path), "PNG")
                files.append(path)
    # one sheet for people: a row per background, every state at every sheet size
    cell = 80
    sheet = QPixmap(cell * len(LAMP_COLOURS) * len(ICON_SHEET_SIZES), cell * len(BACKGROUNDS))
    sheet.fill(Qt.GlobalColor.white)
    p = QPainter(sheet)
    for row, bg in enumerate(BACKGROUNDS.values()):
        p.fillRect(0, row * cell, sheet.width(), cell, QColor(bg))
        col = 0
        for colour in LAMP_COLOURS:
            for size in ICON_SHEET_SIZES:
                x = col * cell + (cell - size) // 2
                y = row * cell + (cell - size) // 2
                p.drawPixmap(x, y, lamp_pixmap(colour, size))
                col += 1
    p.end()
    path = out / "icons-sheet.png"
    sheet.save(str(path), "PNG")
    files.append(path)
    return files


MODES = ("light", "dark")


def render_window(out: Path, source, width: int, height: int, mode: str = "light") -> list[Path]:
    """Every tab as window-<tab>.png (light) or window-<tab>-dark.png."""
    from PySide6.QtWidgets import QApplication

    from desktop.widgets import theme
    from desktop.window import TAB_NAMES, MainWindow

    theme.use(QApplication.instance(), mode)
    win = MainWindow(source)
    win.resize(width, height)
    win.show()
    win.load_all()
    files = []
    suffix = "" if mode == "light" else f"-{mode}"
    for i, name in enumerate(TAB_NAMES):
        win.tabs.setCurrentIndex(i)
        for _ in range(3):
            QApplication.processEvents()
        path = out / f"window-{name}{suffix}.png"
        win.grab().save(str(path), "PNG")
        files.append(path)
    if mode == "light":  # a refused value, as the user sees it: the message at the field, Save off
        win.tabs.setCurrentWidget(win.settings_tab)
        win.settings_tab.rows["engine.eps_amber"].set_value(0.3)
        win.settings_tab.validate()
        QApplication.processEvents()
        path = out / "window-settings-check.png"
        win.grab().save(str(path), "PNG")
        files.append(path)
    win.close()
    return files


def render_popup(out: Path, reminder: dict, snapshot: dict | None = None, name: str = "reminder-popup") -> Path:
    from PySide6.QtWidgets import QApplication

    from desktop.widgets.popup import ReminderPopup
    from desktop.present.coalesce import RED, RENT, notice
    from desktop.present.advice import notice_text

    popup = ReminderPopup()
    kind = RED if (snapshot or {}).get("lamp", {}).get("colour") == "red" else RENT
    text = notice_text(notice(kind, str(reminder.get("session_id")), 0, reminder), snapshot)
    popup.show_message(text.title, text.body, text.why)
    popup.why_button.setChecked(True)  # the picture shows the why as well
    QApplication.processEvents()
    path = out / f"{name}.png"
    popup.grab().save(str(path), "PNG")
    popup.close()
    return path


TRAY_ORDER = ("white", "green", "amber", "red", "grey")


def render_tray_strip(out: Path, sessions: list[dict], now: float) -> Path:
    """tray-demo-strip.png: the lamp on a dark panel and its tooltip, one frame per session's colour
    (white, green, amber, red, as the data has them) and one with the service down (grey)."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPixmap

    from desktop.widgets.icons import lamp_pixmap
    from desktop.present.advice import tooltip_text
    from desktop.present.lamp import lamp_colour

    by_colour: dict[str, dict] = {}
    for snap in sessions:
        by_colour.setdefault(lamp_colour(snap), snap)
    frames = [(c, tooltip_text(by_colour[c], now)) for c in TRAY_ORDER if c in by_colour and c != "grey"]
    frames.append(("grey", tooltip_text(None, now, "The ctxlamp service is not running.")))
    font = QFont()
    font.setPointSize(9)
    metrics = QFontMetrics(font)
    pad, panel_h, icon, gap = 8, 30, 22, 12
    boxes = [metrics.boundingRect(QRect(0, 0, 1000, 1000), Qt.AlignmentFlag.AlignLeft, text) for _, text in frames]
    frame_w = max(b.width() for b in boxes) + 2 * pad
    height = panel_h + 6 + max(b.height() for b in boxes) + 2 * pad
    strip = QPixmap(len(frames) * (frame_w + gap) - gap, height)
    strip.fill(QColor("#ffffff"))
    p = QPainter(strip)
    p.setFont(font)
    for i, ((colour, text), box) in enumerate(zip(frames, boxes)):
        x = i * (frame_w + gap)
        p.fillRect(x, 0, frame_w, panel_h, QColor(BACKGROUNDS["dark"]))
        p.drawPixmap(x + frame_w - icon - pad, (panel_h - icon) // 2, lamp_pixmap(colour, icon))
        tip = QRect(x, panel_h + 6, frame_w, box.height() + 2 * pad)
        p.fillRect(tip, QColor("#ffffe1"))
        p.setPen(QColor("#767676"))
        p.drawRect(tip.adjusted(0, 0, -1, -1))
        p.setPen(QColor("#000000"))
        p.drawText(tip.adjusted(pad, pad, -pad, -pad), Qt.AlignmentFlag.AlignLeft, text)
    p.end()
    path = out / "tray-demo-strip.png"
    strip.save(str(path), "PNG")
    return path


def _restart_usd(snap: dict) -> float | None:
    """R = p_w * B_default; the snapshot gives p_w only through the cold re-write of totalStock."""
    cold = (snap.get("cache") or {}).get("cold_rewrite_usd")
    if cold is None or not snap.get("totalStock"):
        return None
    return cold * (snap.get("B_default") or 0) / snap["totalStock"]


def _reminder_of(snap: dict | None) -> dict:
    rem = {"session_id": "demo", "lap": 7, "restart_usd": 0.21, "payback_calls": 6.4, "rent_usd": 1.52}
    if snap and snap.get("reminder"):
        rem = {**rem, **snap["reminder"], "rent_usd": snap.get("bill_cycle_usd"), "payback_calls": snap.get("pp"),
               "restart_usd": _restart_usd(snap)}
    return rem


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from desktop.connection.datasource import ApiSource, DataError, DemoSource

    app = QApplication.instance() or QApplication(sys.argv[:1])
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    try:
        source = DemoSource() if args.demo else ApiSource()
        status = source.status()
    except DataError as exc:
        print(f"ctxlamp screenshot: {exc}. Start `ctxlamp serve`, or use --demo.", file=sys.stderr)
        return 2
    files = render_icons(out)
    for mode in MODES:
        files += render_window(out, source, args.width, args.height, mode)
    from desktop.widgets import theme

    theme.use(app, "light")
    sessions = status.get("sessions") or []
    followed = next((s for s in sessions if s.get("session_id") == status.get("followed")), None)
    files.append(render_popup(out, _reminder_of(followed), followed))
    files.append(render_tray_strip(out, sessions, time.time()))
    # a reminder while the lamp is still green or white says why both are right
    early = next((s for s in sessions if s.get("reminder") and (s.get("lamp") or {}).get("colour") in
                  ("white", "green")), None)
    if early is not None:
        files.append(render_popup(out, _reminder_of(early), early, "reminder-popup-before-amber"))
    for f in files:
        print(f)
    app.processEvents()
    return 0
