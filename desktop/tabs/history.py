"""The History tab: the finished stretches of work as a table."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout

from desktop.connection.datasource import DataError
from desktop.present.history import SEGMENT_COLUMNS, SEGMENT_TIPS, segment_rows
from desktop.tabs.base import Tab


HEADING = ("Finished stretches of work, newest first (a stretch ends at a compaction, a new session or when the "
           "service stops).")
EMPTY = ("No finished stretch of work yet: one is listed here when a session is compacted, when Claude Code "
         "starts a new session, or when the service stops.")


NUMBERS = {"calls", "turns", "B", "L_peak", "g", "rent_usd", "laps", "restart_first", "restart_best", "bill_usd",
           "duration_s"}  # right-aligned


class HistoryTab(Tab):
    """The archived stretches of work, newest first."""

    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.note = QLabel()
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setWordWrap(True)
        self.table = QTableWidget(0, len(SEGMENT_COLUMNS))
        self.table.setHorizontalHeaderLabels([c[1] for c in SEGMENT_COLUMNS])
        for i, (key, _) in enumerate(SEGMENT_COLUMNS):
            if key in SEGMENT_TIPS:
                self.table.horizontalHeaderItem(i).setToolTip(SEGMENT_TIPS[key])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 6, 4, 4)  # the table's 16 columns fit a 1100-pixel window
        lay.addWidget(self.note)
        lay.addWidget(self.table, 1)
        lay.addStretch(0)
        self.show_segments(None)

    def reload(self) -> None:
        try:
            self.show_segments(self.source.segments())
        except DataError as exc:
            self.show_error(str(exc))

    def show_segments(self, segments) -> None:
        rows = segment_rows(segments)
        self.note.setText(HEADING if rows else EMPTY)
        self.table.setVisible(bool(rows))
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                if SEGMENT_COLUMNS[c][0] in NUMBERS:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)

    def show_error(self, text: str) -> None:
        self.note.setText(f"Could not load the history: {text}")
