"""The Session tab's plan-limit panel: 5-hour and weekly usage over time, and what each turn cost
of the 5-hour window (from what Claude Code's status line reported; GET /api/v1/limits).

A thin widget over desktop.present.limits; a source without limits (the demo, an older service)
shows a note, never an error dialog.
"""
from __future__ import annotations

import time

import pyqtgraph as pg
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget
from PySide6.QtCore import Qt

from desktop.widgets import charts
from desktop.present.limits import TURN_COLUMNS, limits_text, turn_rows, usage_points
from service.client.words import misses_sentence

PENS = {"five_hour": pg.mkPen("#d9480f", width=2), "seven_day": pg.mkPen("#1c7ed6", width=2)}
NAMES = {"five_hour": "5-hour window", "seven_day": "weekly window"}


class LimitsPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel()
        self.note.setTextFormat(Qt.PlainText)  # errors, paths and names shown as written
        self.note.setWordWrap(True)
        self.plot = charts.new_plot("Plan usage over time (from Claude Code's status line)", "% used", "time",
                                    date_axis=True)
        charts.title_legend(self.plot, "Plan usage (from Claude Code's status line)",
                            [(NAMES[w], PENS[w].color().name(), False) for w in NAMES])
        self.table = QTableWidget(0, len(TURN_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(TURN_COLUMNS))
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.plot.setMinimumHeight(150)
        split = self.split = QSplitter(Qt.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(self.table)
        split.setSizes([400, 300])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.note)
        lay.addWidget(split, 1)
        self.show_limits(None)

    def load(self, source, session_id: str | None) -> None:
        fetch = getattr(source, "limits", None)
        data = None
        if fetch is not None:
            try:
                data = fetch(session_id)
            except Exception as exc:  # DataError or an older service without the route
                self.note.setText(f"Plan limits unavailable: {exc}")
        self.show_limits(data)

    def show_limits(self, data: dict | None) -> None:
        data = data or {}
        session = data.get("session") or {}
        readings = session.get("readings") or data.get("account") or []
        summary = limits_text(data.get("limits"))
        self.note.setText(
            f"Plan limits: {summary}. A turn's share is the change of the 5-hour window across it, measured "
            "(an upper bound when another session moved the window meanwhile)." if summary else
            "Plan limits: none seen yet (Claude Code reports them to `ctxlamp statusline` for claude.ai plans).")
        missed = misses_sentence(session.get("cache_misses"))
        if missed:  # what Claude Code's status line counted for this session
            self.note.setText(f"{self.note.text()}\n{missed}")
        self.plot.clear()
        drawn = False
        for window in ("five_hour", "seven_day"):
            xs, ys = usage_points(readings, window)
            if xs:
                self.plot.plot(xs, ys, pen=PENS[window], symbol="o", symbolSize=4)
                drawn = True
        if drawn:
            self.plot.setYRange(0, 100)
            self.plot.enableAutoRange(axis="x")
        else:  # the last five hours, empty: a time axis of 0..1 would read as seconds of 1970
            now = time.time()
            charts.note(self.plot, "No plan usage reported yet.", (now - 5 * 3600, now), (0.0, 100.0))
        rows = turn_rows(session.get("turns") or [])
        self.split.setVisible(drawn or bool(rows))  # nothing reported: the note says why and what fills it
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
