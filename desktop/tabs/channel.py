"""One savings channel (edit, pinch or retrieval): time-bucket bars, label, export."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHeaderView, QHBoxLayout, QLabel, QPushButton, QTableWidget, QTableWidgetItem,
    QVBoxLayout,
)

from desktop.widgets import charts, theme
from desktop.present.channel import TITLES, channel_csv, channel_view, counter_unit, counter_words
from desktop.connection.datasource import DataError
from desktop.tabs.base import Tab

BUCKETS = (("day", "per day"), ("hour", "per hour"))
LABEL_TIPS = {"measured": "Measured: counted from what the transcripts and ledgers recorded.",
              "estimated": "Estimated: a comparison with what would have happened otherwise."}


class ChannelTab(Tab):
    def __init__(self, name: str, source, parent=None):
        super().__init__(parent)
        self.name = name
        self.source = source
        self.channel: dict | None = None
        self.badge = QLabel()
        self.badge.setTextFormat(Qt.TextFormat.RichText)
        self.counter = QComboBox()
        self.bucket = QComboBox()
        for key, words in BUCKETS:
            self.bucket.addItem(words, key)
        self.csv_button = QPushButton("Export CSV…")
        self.png_button = QPushButton("Export PNG…")
        top = QHBoxLayout()
        top.addWidget(self.badge, 1)
        show = QLabel("&Show")
        show.setBuddy(self.counter)
        top.addWidget(show)
        top.addWidget(self.counter)
        top.addWidget(self.bucket)
        top.addWidget(self.csv_button)
        top.addWidget(self.png_button)
        self.plot = charts.new_plot(TITLES.get(name, name), "", "", date_axis=True)
        self.totals = QTableWidget(0, 2)
        self.totals.setHorizontalHeaderLabels(["Over the shown period", "Total"])
        self.totals.verticalHeader().setVisible(False)
        self.totals.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.totals.horizontalHeader().setStretchLastSection(True)
        self.totals.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.totals.setMaximumHeight(170)
        self.sources = QLabel()
        self.sources.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.sources.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.totals)
        lay.addWidget(self.sources)
        self.counter.currentIndexChanged.connect(lambda _=None: self.redraw())
        self.bucket.currentIndexChanged.connect(lambda _=None: self.reload())
        self.csv_button.clicked.connect(self._ask_csv)
        self.png_button.clicked.connect(self._ask_png)
        self.show_channel(None)

    def reload(self) -> None:
        try:
            self.show_channel(self.source.channel(self.name, self.bucket.currentData()))
        except DataError as exc:
            self.show_channel(None)
            self.sources.setText(f"Could not load {TITLES.get(self.name, self.name).lower()}: {exc}")

    def show_error(self, text: str) -> None:
        self.sources.setText(f"Could not load {TITLES.get(self.name, self.name).lower()}: {text}")

    def show_channel(self, channel: dict | None) -> None:
        self.channel = channel
        view = channel_view(channel)
        self.counter.blockSignals(True)
        current = self.counter.currentData()
        self.counter.clear()
        for key in view.counters:
            self.counter.addItem(counter_words(key), key)
        if current in view.counters:
            self.counter.setCurrentIndex(view.counters.index(current))
        elif view.counter is not None:  # the counter the chart shows first (the totals' first row)
            self.counter.setCurrentIndex(max(0, self.counter.findData(view.counter)))
        self.counter.blockSignals(False)
        self.totals.setHorizontalHeaderLabels([f"Over {view.period}", "Total"])
        colour = theme.colours().get(view.label, theme.colours()["muted"])
        self.badge.setText(f"<span style='color:{colour}; font-weight:bold'>{view.label.upper()}</span>"
                           f" &nbsp;{TITLES.get(self.name, self.name)} {self.bucket.currentText()}")
        self.badge.setToolTip(LABEL_TIPS.get(view.label, ""))
        self.totals.setRowCount(len(view.totals))
        for r, (k, v) in enumerate(view.totals):
            self.totals.setItem(r, 0, QTableWidgetItem(k))
            item = QTableWidgetItem(v)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.totals.setItem(r, 1, item)
        self.sources.setText(view.sources)
        self.redraw()

    def redraw(self) -> None:
        key = self.counter.currentData()
        view = channel_view(self.channel, key)
        self.plot.getAxis("left").unit = counter_unit(key) if key else "count"
        self.plot.setLabel("left", self.counter.currentText() or "", color=theme.colours()["fg"])
        charts.draw_bars(self.plot, view)

    # ---- export ----
    def export_csv(self, path: Path) -> Path:
        Path(path).write_text(channel_csv(self.channel), encoding="utf-8")
        return Path(path)

    def export_png(self, path: Path) -> Path:
        self.plot.grab().save(str(path), "PNG")
        return Path(path)

    def _ask_csv(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export CSV", f"ctxlamp-{self.name}.csv", "CSV (*.csv)")
        if path:
            self.export_csv(Path(path))

    def _ask_png(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export PNG", f"ctxlamp-{self.name}.png", "PNG (*.png)")
        if path:
            self.export_png(Path(path))
