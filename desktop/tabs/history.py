"""The History tab: the finished parts of sessions as a table."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout

from desktop.connection.datasource import DataError
from desktop.present.history import SEGMENT_COLUMNS, SEGMENT_TIPS, segment_rows
from desktop.tabs.base import Tab


class HistoryTab(Tab):
    """The archived parts of sessions, newest first."""

    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.note = QLabel("Finished parts of sessions, newest first (a part ends at a compaction, a new session "
                           "or when the service stops).")
        self.table = QTableWidget(0, len(SEGMENT_COLUMNS))
        self.table.setHorizontalHeaderLabels([c[1] for c in SEGMENT_COLUMNS])
        for i, (key, _) in enumerate(SEGMENT_COLUMNS):
            if key in SEGMENT_TIPS:
                self.table.horizontalHeaderItem(i).setToolTip(SEGMENT_TIPS[key])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.table, 1)

    def reload(self) -> None:
        try:
            self.show_segments(self.source.segments())
        except DataError as exc:
            self.show_error(str(exc))

    def show_segments(self, segments) -> None:
        rows = segment_rows(segments)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                if 5 <= c < len(row) - 1:  # numbers; the last column (the models used) reads as text
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)

    def show_error(self, text: str) -> None:
        self.note.setText(f"Could not load the history: {text}")
