"""The Files tab: the files the useful context is made of, each ticked or not."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout

from desktop.present import fmt
from desktop.present.files import file_rows
from desktop.tabs.base import Tab


class FilesTab(Tab):
    """The selection: which files a restart would rebuild. Unticking revalues live."""

    selection_changed = Signal(str, bool)  # path, ticked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel("Files the useful part of the context is made of. Untick a file a fresh session would "
                           "not need; the cost curve and the lamp are worked out again.")
        self.note.setWordWrap(True)
        self.list = QListWidget()
        self.status = QLabel()
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # errors shown as written
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.status)
        self.list.itemChanged.connect(self._changed)

    def show_series(self, series: dict | None, project: str | None = None) -> None:
        """The series' files; those in `project` (the session's folder) named from it, the whole path in the tip."""
        self.list.blockSignals(True)
        self.list.clear()
        rows = file_rows(series, project)
        for row in rows:
            item = QListWidgetItem(row.label)
            item.setToolTip(row.path)
            item.setData(Qt.ItemDataRole.UserRole, row.path)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if row.selected else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        if not rows:
            self.status.setText("No files in this segment yet.")
        else:
            sel = sum(r.tokens for r in rows if r.selected)
            self.status.setText(f"{sum(r.selected for r in rows)} of {fmt.plural(len(rows), 'file')} selected, "
                                f"{fmt.tokens(sel)} tokens")

    def _changed(self, item: QListWidgetItem) -> None:
        self.selection_changed.emit(item.data(Qt.ItemDataRole.UserRole), item.checkState() == Qt.CheckState.Checked)

    def show_error(self, text: str) -> None:
        self.status.setText(f"Could not load the files: {text}")
