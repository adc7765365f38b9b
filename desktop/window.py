"""The window: Overview, Session, Edits, Trimming, Search, History, Files and Settings tabs,
and Team when a team is configured.

One module per tab in desktop/tabs/ (each a `Tab`: reload, show an error), over the
pure logic of desktop/present/; data comes from a DataSource (the live API or the
demo). A failed request shows its message in the tab, never a crash.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMainWindow, QTabWidget

from desktop.connection.datasource import DataError
from desktop.present.files import selection_change
from desktop.tabs.base import Tab
from desktop.tabs.channel import ChannelTab
from desktop.tabs.files import FilesTab
from desktop.tabs.history import HistoryTab
from desktop.tabs.overview import OverviewTab
from desktop.tabs.session import SessionTab
from desktop.tabs.settings import SettingsTab
from desktop.tabs.team import TeamTab, team_configured

# (file name of the tab's screenshot, tab label); the order of the tabs
TABS = (("overview", "&Overview"), ("session", "&Session"), ("edits", "&Edits"), ("pinch", "&Trimming"),
        ("retrieval", "Sea&rch"), ("history", "&History"), ("files", "&Files"), ("settings", "Se&ttings"))
TAB_NAMES = tuple(name for name, _ in TABS)


class MainWindow(QMainWindow):
    """Shows one session (the followed one) and the service-wide channels and history."""

    snapshot_changed = Signal(dict)  # a revaluation answered with a new snapshot

    def __init__(self, source, session_id: str | None = None, parent=None):
        super().__init__(parent)
        self.source = source
        self.session_id = session_id
        self.snapshot: dict | None = None
        self.series: dict | None = None
        self.ended_id: str | None = None  # the ended session the Session tab shows, if it shows one
        self.setWindowTitle("ctxlamp")
        self.resize(1100, 760)
        self.tabs = QTabWidget()
        self._shortcuts: list[QShortcut] = []
        self.tab_list: list[Tab] = []  # in the order of self.tabs
        self.overview_tab = OverviewTab(source)
        self.session_tab = SessionTab()
        self.channel_tabs = {name: ChannelTab(name, source) for name in ("edit", "pinch", "retrieval")}
        self.history_tab = HistoryTab(source)
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
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)  # a file's path or an error, shown as written
        self.statusBar().addWidget(self.status_label, 1)
        self.files_tab.selection_changed.connect(self._on_selection)
        self.settings_tab.saved.connect(self._team_tab_follows_settings)
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

    def add_tab(self, widget: Tab, label: str) -> int:
        """Add a tab (an & in the label gives it an Alt shortcut); Ctrl+1..9 switch to the first nine."""
        index = self.tabs.addTab(widget, label)
        self.tab_list.append(widget)
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
            self.session_id, self.ended_id = None, session_id
            self.session_tab.show_ended(row, segments)
            self.files_tab.show_series(None)
        self.tabs.setCurrentWidget(self.session_tab)

    def set_snapshot(self, snapshot: dict | None) -> None:
        self.snapshot = snapshot
        if snapshot:
            self.session_id, self.ended_id = snapshot.get("session_id"), None
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
        self.files_tab.show_series(self.series, (self.snapshot or {}).get("project"))

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
        self.tab_list[index].reload()

    # ---- live updates ----
    def on_live_snapshot(self, snapshot: dict) -> None:
        """A snapshot from the event stream: the Overview's live list takes it; the Session tab redraws if it
        shows that session, or takes the session up if it shows none (the window was opened before the
        session's first call, as in the demo)."""
        self.overview_tab.note_snapshot(snapshot)
        if self.session_id is None and self.ended_id is None and snapshot.get("session_id"):
            self.session_id = snapshot["session_id"]
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

    def _team_tab_follows_settings(self) -> None:
        """A team server saved (or removed) in Settings: its tab comes (or goes) at once, and Settings says so."""
        wanted = team_configured(self.source)
        if wanted and self.team_tab is None:
            self.team_tab = TeamTab(self.source)
            self.add_tab(self.team_tab, "Team")
            self.settings_tab.status.setText("Saved. The Team tab shows the team server's figures.")
        elif not wanted and self.team_tab is not None:
            index = self.tabs.indexOf(self.team_tab)
            self.tabs.removeTab(index)
            self.tab_list.remove(self.team_tab)
            self._loaded.discard(index)
            self.team_tab.deleteLater()
            self.team_tab = None
            self.settings_tab.status.setText("Saved. No team server: the Team tab is closed.")

    def _error(self, text: str) -> None:
        self.status_label.setText(text)
