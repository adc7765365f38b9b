"""The window: Overview, Session, Edits, Trimming, Search, History, Files and Settings tabs,
and Team when a team is configured.

Thin widgets over desktop.viewmodel; data comes from a DataSource (the live API
or the demo). A failed request shows its message in the tab, never a crash.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QGridLayout, QHeaderView, QLabel, QListWidget, QListWidgetItem, QMainWindow, QSplitter, QTableWidget,
    QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget,
)

from desktop import charts, fmt
from desktop.channel_tab import ChannelTab
from desktop.datasource import DataError
from desktop.limits_panel import LimitsPanel
from desktop.overview_model import project_name
from desktop.overview_tab import OverviewTab
from desktop.session_words import header_facts, header_title
from desktop.settings_tab import SettingsTab
from desktop.team_tab import TeamTab, team_configured
from desktop.viewmodel import (
    SEGMENT_COLUMNS, SEGMENT_TIPS, curve_view, file_rows, segment_rows, selection_change, series_view,
)

# (file name of the tab's screenshot, tab label); the order of the tabs
TABS = (("overview", "&Overview"), ("session", "&Session"), ("edits", "&Edits"), ("pinch", "&Trimming"),
        ("retrieval", "Sea&rch"), ("history", "&History"), ("files", "&Files"), ("settings", "Se&ttings"))
TAB_NAMES = tuple(name for name, _ in TABS)


class SessionTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QLabel()
        self.title.setTextFormat(Qt.RichText)
        self.title.setWordWrap(True)
        self.facts = QGridLayout()
        self.facts.setHorizontalSpacing(20)
        self.series: dict | None = None
        self.snapshot: dict | None = None
        self.curve_plot = charts.new_plot("Cost curve: average cost per call if you restarted now, against the best",
                                          "times the best", "position (1 = the sweet spot)")
        self.curve_plot.setToolTip("Diamonds mark where the reminders fired; the dot is where the session is now.")
        self.stock_plot = charts.new_plot("Context over calls", "tokens", "call", left_unit="tokens",
                                          bottom_unit="count", legend=True)
        self.rent_plot = charts.new_plot("Rent paid on dead weight", "", "call", left_unit="usd",
                                         bottom_unit="count", legend=True)
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
        lay.addLayout(self.facts)
        lay.addWidget(split, 1)
        self.show_snapshot(None)
        self.show_series(None)

    def show_snapshot(self, snapshot: dict | None) -> None:
        self.snapshot = snapshot
        self.title.setText(header_title(snapshot))
        self._facts(header_facts(snapshot))
        charts.draw_curve(self.curve_plot, curve_view(snapshot, self.series))

    def _facts(self, facts: list[tuple[str, str, str]]) -> None:
        while self.facts.count():
            self.facts.takeAt(0).widget().deleteLater()
        for i, (caption, value, tip) in enumerate(facts):
            cap, val = QLabel(caption), QLabel(f"<b>{fmt.html_text(value)}</b>")
            cap.setTextFormat(Qt.PlainText)
            for w in (cap, val):
                w.setToolTip(tip)
                w.setWordWrap(True)  # a narrow window wraps the figures instead of growing
            self.facts.addWidget(cap, 0, i)
            self.facts.addWidget(val, 1, i)

    def show_ended(self, row: dict, segments: list[dict]) -> None:
        """A session that is not live any more: what the overview and its archived parts say."""
        self.snapshot = self.series = None
        sid = str(row.get("session_id") or "")
        self.title.setText(f"<b>{fmt.html_text(project_name(row.get('project')))} · {fmt.html_text(sid[:8])}</b>"
                           " — not live any more")
        rent = sum(float(p.get("rent_usd") or 0) for p in segments)
        laps = sum(int(p.get("laps") or 0) for p in segments)
        unwritten = row.get("unwritten_usd") or 0.0
        self._facts([("Spent", fmt.usd(row.get("billed_usd", row.get("usd"))),
                      "What the API billed for it in the overview's period"
                      + (f", {fmt.usd(unwritten)} of it for requests Claude Code made without writing them "
                         "(measured from its cost record)." if unwritten else ".")),
                     ("Calls", fmt.count(row.get("calls")), "API calls in the overview's period."),
                     ("Last call", fmt.when(row.get("last_at")), "When it last called the API."),
                     ("Rent on dead weight", fmt.usd(rent) if segments else fmt.DASH,
                      "Over its archived parts (History tab)."),
                     ("Reminders", fmt.count(laps) if segments else fmt.DASH, "Over its archived parts.")])
        charts.draw_curve(self.curve_plot, curve_view(None))
        self.show_series(None)

    def show_series(self, series: dict | None) -> None:
        self.series = series
        if self.snapshot is not None:
            charts.draw_curve(self.curve_plot, curve_view(self.snapshot, series))
        view = series_view(series)
        charts.draw_stock(self.stock_plot, view)
        charts.draw_rent(self.rent_plot, view)


class HistoryTab(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel("Finished parts of sessions, newest first (a part ends at a compaction, a new session "
                           "or when the service stops).")
        self.table = QTableWidget(0, len(SEGMENT_COLUMNS))
        self.table.setHorizontalHeaderLabels([c[1] for c in SEGMENT_COLUMNS])
        for i, (key, _) in enumerate(SEGMENT_COLUMNS):
            if key in SEGMENT_TIPS:
                self.table.horizontalHeaderItem(i).setToolTip(SEGMENT_TIPS[key])
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
                if 5 <= c < len(row) - 1:  # numbers; the last column (the models used) reads as text
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(r, c, item)

    def show_error(self, text: str) -> None:
        self.note.setText(f"Could not load the history: {text}")


class FilesTab(QWidget):
    """The selection: which files a restart would rebuild. Unticking revalues live."""

    selection_changed = Signal(str, bool)  # path, ticked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel("Files the useful part of the context is made of. Untick a file a fresh session would "
                           "not need; the cost curve and the lamp are worked out again.")
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
            self.status.setText(f"{sum(r.selected for r in rows)} of {fmt.plural(len(rows), 'file')} selected, "
                                f"{fmt.tokens(sel)} tokens")

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
        self._shortcuts: list[QShortcut] = []
        self.overview_tab = OverviewTab(source)
        self.session_tab = SessionTab()
        self.channel_tabs = {name: ChannelTab(name, source) for name in ("edit", "pinch", "retrieval")}
        self.history_tab = HistoryTab()
        self.files_tab = FilesTab()
        self.settings_tab = SettingsTab(source)
        self.team_tab = TeamTab(source) if team_configured(source) else None
        widgets = {"overview": self.overview_tab, "session": self.session_tab, "edits": self.channel_tabs["edit"],
                   "pinch": self.channel_tabs["pinch"], "retrieval": self.channel_tabs["retrieval"],
                   "history": self.history_tab, "files": self.files_tab, "settings": self.settings_tab}
        for name, label in TABS:
            self.add_tab(widgets[name], label)
        if self.team_tab is not None:  # last, so the other tabs keep their places (TAB_NAMES)
            self.add_tab(self.team_tab, "Team")
        self.setCentralWidget(self.tabs)
        self.overview_tab.open_session.connect(self.open_session)
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
        overview = {self.tabs.indexOf(self.overview_tab)} & self._loaded  # its own Refresh button reloads it
        self._loaded = {self.tabs.indexOf(self.session_tab), self.tabs.indexOf(self.files_tab)} | overview
        self._on_tab(self.tabs.currentIndex())

    def add_tab(self, widget: QWidget, label: str) -> int:
        """Add a tab (an & in the label gives it an Alt shortcut); Ctrl+1..9 switch to the first nine."""
        index = self.tabs.addTab(widget, label)
        if index < 9:
            shortcut = QShortcut(QKeySequence(f"Ctrl+{index + 1}"), self)
            shortcut.activated.connect(lambda i=index: self.tabs.setCurrentIndex(i))
            self._shortcuts.append(shortcut)
        return index

    def open_session(self, session_id: str) -> None:
        """Show a session in the Session tab: live ones with their curve, ended ones with their archived parts."""
        try:
            live = {s["session_id"]: s for s in (self.source.status().get("sessions") or [])}
        except DataError as exc:
            self._error(str(exc))
            live = {}
        if session_id in live:
            self.load(session_id, live[session_id])
        else:
            row = next((s for s in (self.overview_tab.doc or {}).get("sessions") or []
                        if s.get("session_id") == session_id), {"session_id": session_id})
            try:
                segments = [p for p in (self.source.segments() or {}).get("segments") or []
                            if p.get("session_id") == session_id]
            except DataError:
                segments = []
            self.session_id = None
            self.session_tab.show_ended(row, segments)
            self.files_tab.show_series(None)
        self.tabs.setCurrentWidget(self.session_tab)

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
        elif isinstance(w, (ChannelTab, TeamTab)):
            w.reload()
        elif w is self.settings_tab or w is self.overview_tab:
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
        self.status_label.setText(f"{'Included' if ticked else 'Excluded'} {path}: the lamp and the curve are "
                                  "worked out again.")

    def _error(self, text: str) -> None:
        self.status_label.setText(text)
