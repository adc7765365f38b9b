"""The window: Session, Edits, Pinch, Retrieval, History, Files and Settings tabs.

Thin widgets over desktop.viewmodel; data comes from a DataSource (the live API
or the demo). A failed request shows its message in the tab, never a crash.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHeaderView, QLabel, QListWidget, QListWidgetItem, QMainWindow, QSplitter, QTableWidget,
    QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget,
)

from desktop import charts
from desktop.channel_tab import ChannelTab
from desktop.datasource import DataError
from desktop.limits_panel import LimitsPanel
from desktop.settings_tab import SettingsTab
from desktop.viewmodel import (
    SEGMENT_COLUMNS, STATE_WORDS, curve_view, file_rows, fmt_num, fmt_tokens, fmt_usd, lamp_colour,
    lamp_state, segment_rows, selection_change, series_view, session_name,
)

TAB_NAMES = ("session", "edits", "pinch", "retrieval", "history", "files", "settings")


def headline(snapshot: dict | None) -> str:
    if not snapshot:
        return "No live session."
    state = lamp_state(snapshot)
    parts = [f"<b>{session_name(snapshot)}</b> — {STATE_WORDS.get(state, state)} ({lamp_colour(snapshot)})",
             f"x {fmt_num(snapshot.get('x'))} / sweet {fmt_num(snapshot.get('xSweet'))}",
             f"stock {fmt_tokens(snapshot.get('totalStock'))}, useful {fmt_tokens(snapshot.get('B'))}",
             f"rent {fmt_usd(snapshot.get('bill_cycle_usd'))} (laps {snapshot.get('laps', 0)})",
             f"burn {fmt_usd(snapshot.get('br'))}/h"]
    return " · ".join(parts)


class SessionTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QLabel()
        self.title.setTextFormat(Qt.RichText)
        self.title.setWordWrap(True)
        self.curve_plot = charts.new_plot("Cost curve: average cost per call if you restarted now, A(u)/A*",
                                          "A / A*", "u (1 = sweet spot)")
        self.stock_plot = charts.new_plot("Stock over calls", "tokens", "call", legend=True)
        self.rent_plot = charts.new_plot("Rent on dead weight (bill cycle)", "USD", "call", legend=True)
        self.rent_plot.setXLink(self.stock_plot)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.curve_plot)
        split.addWidget(self.stock_plot)
        split.addWidget(self.rent_plot)
        self.limits_panel = LimitsPanel()
        split.addWidget(self.limits_panel)
        split.setSizes([300, 200, 150, 180])
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(split, 1)
        self.show_snapshot(None)
        self.show_series(None)

    def show_snapshot(self, snapshot: dict | None) -> None:
        self.title.setText(headline(snapshot))
        charts.draw_curve(self.curve_plot, curve_view(snapshot))

    def show_series(self, series: dict | None) -> None:
        view = series_view(series)
        charts.draw_stock(self.stock_plot, view)
        charts.draw_rent(self.rent_plot, view)


class HistoryTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel("Segment profiles, newest first (archived at each reset, rotation and shutdown).")
        self.table = QTableWidget(0, len(SEGMENT_COLUMNS))
        self.table.setHorizontalHeaderLabels([c[1] for c in SEGMENT_COLUMNS])
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.table, 1)

    def show_segments(self, segments) -> None:
        rows = segment_rows(segments)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                if c >= 5:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(r, c, item)

    def show_error(self, text: str) -> None:
        self.note.setText(f"Could not load the history: {text}")


class FilesTab(QWidget):
    """The selection: which files a restart would rebuild. Unticking revalues live."""

    selection_changed = Signal(str, bool)  # path, ticked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel("Files the useful stock B is made of. Untick a file a successor would not need; "
                           "the curve and the lamp are revalued.")
        self.note.setWordWrap(True)
        self.list = QListWidget()
        self.status = QLabel()
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.status)
        self.list.itemChanged.connect(self._changed)

    def show_series(self, series: dict | None) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        rows = file_rows(series)
        for row in rows:
            item = QListWidgetItem(row.label)
            item.setData(Qt.UserRole, row.path)
            item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
            item.setCheckState(Qt.Checked if row.selected else Qt.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        if not rows:
            self.status.setText("No files in this segment yet.")
        else:
            sel = sum(r.tokens for r in rows if r.selected)
            self.status.setText(f"{sum(r.selected for r in rows)} of {len(rows)} files selected, "
                                f"{fmt_tokens(sel)} tokens")

    def _changed(self, item: QListWidgetItem) -> None:
        self.selection_changed.emit(item.data(Qt.UserRole), item.checkState() == Qt.Checked)


class MainWindow(QMainWindow):
    """Shows one session (the followed one) and the service-wide channels and history."""

    snapshot_changed = Signal(dict)  # a revaluation answered with a new snapshot

    def __init__(self, source, session_id: str | None = None, parent=None):
        super().__init__(parent)
        self.source = source
        self.session_id = session_id
        self.snapshot: dict | None = None
        self.series: dict | None = None
        self.setWindowTitle("ctxlamp")
        self.resize(1100, 760)
        self.tabs = QTabWidget()
        self.session_tab = SessionTab()
        self.channel_tabs = {name: ChannelTab(name, source) for name in ("edit", "pinch", "retrieval")}
        self.history_tab = HistoryTab()
        self.files_tab = FilesTab()
        self.settings_tab = SettingsTab(source)
        self.tabs.addTab(self.session_tab, "Session")
        self.tabs.addTab(self.channel_tabs["edit"], "Edits")
        self.tabs.addTab(self.channel_tabs["pinch"], "Pinch")
        self.tabs.addTab(self.channel_tabs["retrieval"], "Retrieval")
        self.tabs.addTab(self.history_tab, "History")
        self.tabs.addTab(self.files_tab, "Files")
        self.tabs.addTab(self.settings_tab, "Settings")
        self.setCentralWidget(self.tabs)
        self.status_label = QLabel()
        self.statusBar().addWidget(self.status_label, 1)
        self.files_tab.selection_changed.connect(self._on_selection)
        self.tabs.currentChanged.connect(self._on_tab)
        self._loaded: set[int] = set()

    # ---- loading ----
    def load(self, session_id: str | None = None, snapshot: dict | None = None) -> None:
        """(Re)load the session view; other tabs load when first shown."""
        if session_id:
            self.session_id = session_id
        if snapshot is None:
            try:
                status = self.source.status()
            except DataError as exc:
                self._error(str(exc))
                return
            sessions = {s["session_id"]: s for s in status.get("sessions") or []}
            if self.session_id not in sessions:
                self.session_id = status.get("followed") or next(iter(sessions), None)
            snapshot = sessions.get(self.session_id)
        self.set_snapshot(snapshot)
        self.reload_series()
        self._loaded = {0, self.tabs.indexOf(self.files_tab)}
        self._on_tab(self.tabs.currentIndex())

    def set_snapshot(self, snapshot: dict | None) -> None:
        self.snapshot = snapshot
        if snapshot:
            self.session_id = snapshot.get("session_id")
        self.session_tab.show_snapshot(snapshot)

    def reload_series(self) -> None:
        if not self.session_id:
            self.series = None
        else:
            try:
                self.series = self.source.series(self.session_id)
            except DataError as exc:
                self._error(str(exc))
                self.series = None
        self.session_tab.show_series(self.series)
        self.session_tab.limits_panel.load(self.source, self.session_id)
        self.files_tab.show_series(self.series)

    def load_all(self) -> None:
        """Load every tab now (screenshots, tests)."""
        self.load(self.session_id)
        for i in range(self.tabs.count()):
            self._load_tab(i)

    def _on_tab(self, index: int) -> None:
        if index not in self._loaded:
            self._load_tab(index)

    def _load_tab(self, index: int) -> None:
        self._loaded.add(index)
        w = self.tabs.widget(index)
        if w is self.history_tab:
            try:
                self.history_tab.show_segments(self.source.segments())
            except DataError as exc:
                self.history_tab.show_error(str(exc))
        elif isinstance(w, ChannelTab):
            w.reload()
        elif w is self.settings_tab:
            w.reload()

    # ---- live updates ----
    def on_live_snapshot(self, snapshot: dict) -> None:
        """A snapshot from the event stream: redraw if it is the shown session."""
        if snapshot.get("session_id") != self.session_id:
            return
        self.set_snapshot(snapshot)
        if self.isVisible():
            self.reload_series()

    def _on_selection(self, path: str, ticked: bool) -> None:
        if not self.session_id:
            return
        body = selection_change(path, ticked)
        try:
            snap = self.source.select(self.session_id, body["exclude"], body["include"])
        except DataError as exc:
            self._error(f"could not change the selection: {exc}")
            self.reload_series()
            return
        self.set_snapshot(snap)
        self.reload_series()
        self.snapshot_changed.emit(snap)
        self.status_label.setText(f"{'Included' if ticked else 'Excluded'} {path}: revalued.")

    def _error(self, text: str) -> None:
        self.status_label.setText(text)
