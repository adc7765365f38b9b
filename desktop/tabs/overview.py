"""The Overview tab: what the last day, week or month cost and what is going on now.

Thin widgets over desktop.present.overview. A click (or Enter) on a session asks
the window to open it in the Session tab (signal `open_session`).
"""
from __future__ import annotations

import html
import threading
import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup, QCheckBox, QFrame, QGridLayout, QGroupBox, QHBoxLayout, QHeaderView, QLabel, QListWidget, QListWidgetItem,
    QProgressBar, QPushButton, QRadioButton, QTableWidget, QTableWidgetItem, QVBoxLayout,
)

from desktop.widgets import charts, theme
from desktop.connection.datasource import DataError
from desktop.widgets.icons import lamp_icon
from desktop.present import overview as om
from desktop.present.lamp import STATE_WORDS, lamp_colour, lamp_state, session_name
from desktop.tabs.base import Tab
from service.client.textsafe import html_text

SESSION_COLUMNS = ("Session", "Spent", "Calls", "Last call", "Live")
LIVE_ROWS_SHOWN = 3
RELOAD_AFTER_MS = 20_000  # calls being written bring the figures up to date this long after the first of them


class OverviewTab(Tab):
    open_session = Signal(str)
    fetched = Signal(int, object, object, str, object)  # days, overview, status, error, sync: a background reload's

    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.days = 7
        self.doc: dict | None = None
        self.status: dict | None = None
        self.sync: dict | None = None  # the sync folder's devices (GET /api/v1/sync), when sync is on
        self.every_device = True  # with sync on: every device's figures summed (read by the fetching thread too)
        self.stale = False  # calls came while the tab was hidden: it reloads when shown again
        self.reload_timer = QTimer(self)
        self.reload_timer.setSingleShot(True)
        self.reload_timer.setInterval(RELOAD_AFTER_MS)
        self.reload_timer.timeout.connect(self._reload_if_shown)
        self.fetching = False
        self.fetched.connect(self._fetched)  # queued: emitted by the fetching thread

        # period and grouping switches
        self.period_group = QButtonGroup(self)
        top = QHBoxLayout()
        for days, words in om.PERIODS:
            b = QRadioButton(words)
            b.setChecked(days == self.days)
            self.period_group.addButton(b, days)
            top.addWidget(b)
        top.addSpacing(24)
        self.by_group = QButtonGroup(self)
        for key, words in (("model", "by model"), ("project", "by project")):
            b = QRadioButton(f"Bars {words}")
            b.setProperty("by", key)
            b.setChecked(key == "model")
            self.by_group.addButton(b)
            top.addWidget(b)
        top.addSpacing(24)
        self.all_devices = QCheckBox("All my devices")
        self.all_devices.setToolTip("Every device of the sync folder summed, in UTC days (docs/sync.md); "
                                    "off: this computer's own figures.")
        self.all_devices.setChecked(True)
        self.all_devices.setVisible(False)  # shown once the service says sync is on
        top.addWidget(self.all_devices)
        top.addStretch(1)
        self.refresh_button = QPushButton("&Refresh")
        top.addWidget(self.refresh_button)

        # headline figures
        self.figures = QGridLayout()
        self.figures.setHorizontalSpacing(24)
        fig_box = QFrame()
        fig_box.setLayout(self.figures)
        self.notes = QLabel()
        self.notes.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.notes.setWordWrap(True)

        # stacked daily bars
        self.plot = charts.new_plot(html.escape(om.days_title(None)), "", "",
                                    left_unit="usd", bottom_unit="day", legend=True)
        self.plot.setMinimumHeight(136)  # three tick labels apart; the window still fits 1000x700 (a wrapped live row)

        # sessions, live sessions, limits, rent, channels
        self.sessions = QTableWidget(0, len(SESSION_COLUMNS))
        self.sessions.setHorizontalHeaderLabels(SESSION_COLUMNS)
        self.sessions.verticalHeader().setVisible(False)
        self.sessions.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.sessions.setSelectionBehavior(QTableWidget.SelectRows)
        self.sessions.setSelectionMode(QTableWidget.SingleSelection)
        self.sessions.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.sessions.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.sessions.verticalHeader().setDefaultSectionSize(22)
        self.sessions.setToolTip("Click a session (or press Enter) to open it in the Session tab.")
        dear_box = QGroupBox("Most expensive sessions")
        QVBoxLayout(dear_box).addWidget(self.sessions)

        self.live = QListWidget()
        self.live.setToolTip("Sessions being measured now. Click one (or press Enter) to open it.")
        # a long project folder wraps instead of hiding the lamp's words past the box's edge
        self.live.setWordWrap(True)
        self.live.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.live.setMinimumHeight(44)  # room for the meters below on a small window
        self.limits_box = QGroupBox("Plan limits and budgets")
        self.limits_lay = QVBoxLayout(self.limits_box)
        self.limits_lay.setSpacing(2)
        self.limits_lay.setContentsMargins(6, 4, 6, 4)
        live_box = QGroupBox("Live sessions")
        lv = QVBoxLayout(live_box)
        lv.addWidget(self.live)
        right = QVBoxLayout()
        right.addWidget(live_box, 1)
        right.addWidget(self.limits_box)

        self.rent = QLabel()
        self.rent.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.rent.setWordWrap(True)
        self.rent.setToolTip(om.spend_figures(None)[-1].tip)
        self.channels = QLabel()
        self.channels.setWordWrap(True)
        self.channels.setTextFormat(Qt.TextFormat.RichText)
        story = QGroupBox("Rent, notices and savings")
        sl = QVBoxLayout(story)
        sl.addWidget(self.rent)
        sl.addWidget(self.channels)

        # the devices of the sync folder (docs/sync.md): shown only when sync is on
        self.devices = QTableWidget(0, len(om.DEVICE_COLUMNS))
        self.devices.setHorizontalHeaderLabels(om.DEVICE_COLUMNS)
        self.devices.verticalHeader().setVisible(False)
        self.devices.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.devices.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.devices.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.devices.verticalHeader().setDefaultSectionSize(22)
        self.devices_note = QLabel()
        self.devices_note.setTextFormat(Qt.TextFormat.PlainText)  # file names from the shared folder
        self.devices_note.setWordWrap(True)
        self.devices_box = QGroupBox("Your devices (sync folder, days in UTC)")
        dl = QVBoxLayout(self.devices_box)
        dl.addWidget(self.devices)
        dl.addWidget(self.devices_note)
        self.devices_box.setVisible(False)
        right.addWidget(self.devices_box)

        lower = QHBoxLayout()
        lower.addWidget(dear_box, 3)
        lower.addLayout(right, 2)

        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(fig_box)
        lay.addWidget(self.notes)
        lay.addWidget(self.plot, 3)
        lay.addLayout(lower, 2)
        lay.addWidget(story)

        self.period_group.idClicked.connect(self._period)
        self.by_group.buttonClicked.connect(lambda _b: self.redraw_bars())
        self.refresh_button.clicked.connect(self.reload)
        self.all_devices.toggled.connect(self._every_device)
        self.sessions.cellActivated.connect(self._session_cell)
        self.sessions.cellClicked.connect(self._session_cell)
        self.live.itemActivated.connect(self._live_item)
        self.live.itemClicked.connect(self._live_item)

    # ---- data ----
    def _period(self, days: int) -> None:
        self.days = days
        self.reload()

    def _every_device(self, on: bool) -> None:
        self.every_device = on
        self.reload()

    def reload(self) -> None:
        self._show_answer(self.days, *self._load(self.days))

    def _load(self, days: int) -> tuple[dict | None, dict | None, str, dict | None]:
        """(overview, status, why the overview is missing, the sync folder's devices) from the source."""
        doc, status, error, sync = None, None, "", None
        try:
            status = self.source.status()
        except DataError:
            pass
        try:
            sync = self.source.sync(om.first_utc_day(days))
        except (DataError, AttributeError):  # an older service, the demo: no devices to show
            pass
        every = bool((sync or {}).get("on")) and self.every_device
        try:
            doc = self.source.overview(days, "all") if every else self.source.overview(days)
        except DataError as exc:
            error = str(exc)
        return doc, status, error, sync

    def _show_answer(self, days: int, doc: dict | None, status: dict | None, error: str,
                     sync: dict | None = None) -> None:
        if days != self.days:  # a background answer for a period the user has left (its switch loaded its own)
            return
        self.show_overview(doc, status)
        self.show_devices(sync)
        if error:
            self.show_error(error)

    def show_error(self, text: str) -> None:
        self.notes.setText(f"Could not load the overview: {text}")

    def note_snapshot(self, snap: dict) -> None:
        """A live session's new snapshot: its line in the live list now, the figures RELOAD_AFTER_MS later
        (one reload however many calls come meanwhile, none while nothing is written)."""
        if self.status is None and self.doc is None:
            return  # not loaded yet: the first showing loads everything
        sid = snap.get("session_id")
        sessions = list((self.status or {}).get("sessions") or [])
        at = next((i for i, s in enumerate(sessions) if s.get("session_id") == sid), len(sessions))
        sessions[at:at + 1] = [snap]
        self.status = {**(self.status or {}), "sessions": sessions}
        self.show_live(self.status)
        if not self.reload_timer.isActive():
            self.reload_timer.start()

    def _reload_if_shown(self) -> None:
        """The timer's reload, fetched on a thread: the window does not wait for the service's answer
        (0.2-0.4 s over a 500 MB history, `bench/overview.py`) while a session is being written."""
        if not self.isVisible():
            self.stale = True
            return
        if self.fetching:
            return
        self.fetching = True
        threading.Thread(target=self._fetch, args=(self.days,), name="overview-reload", daemon=True).start()

    def _fetch(self, days: int) -> None:
        answer = self._load(days)
        try:
            self.fetched.emit(days, *answer)
        except RuntimeError:  # the tab was closed meanwhile
            pass

    def _fetched(self, days: int, doc: dict | None, status: dict | None, error: str, sync: dict | None) -> None:
        self.fetching = False
        self._show_answer(days, doc, status, error, sync)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.stale:
            self.stale = False
            self.reload()

    def show_overview(self, doc: dict | None, status: dict | None) -> None:
        self.doc, self.status = doc, status
        now = time.time()
        while self.figures.count():
            self.figures.takeAt(0).widget().deleteLater()
        self.plot.setTitle(html.escape(om.days_title(doc)), size="10pt", color=theme.colours()["fg"])
        for i, f in enumerate(om.spend_figures(doc)):
            cap, val = QLabel(f.caption), QLabel(f"<b style='font-size:15pt'>{html_text(f.value)}</b>")
            cap.setTextFormat(Qt.TextFormat.PlainText)
            for w in (cap, val):
                w.setToolTip(f.tip)
                w.setWordWrap(True)
            self.figures.addWidget(cap, 0, i)
            self.figures.addWidget(val, 1, i)
        self.notes.setText(om.spend_notes(doc))
        self.redraw_bars()
        rows = om.session_rows(doc, now)
        self.sessions.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate((row.name, row.spent, row.calls, row.last, "yes" if row.live else "")):
                item = QTableWidgetItem(text)
                item.setToolTip(f"<p>{html_text(row.tip, 500)}</p>")  # rich on purpose: names escaped
                item.setData(Qt.ItemDataRole.UserRole, row.session_id)
                if c in (1, 2):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.sessions.setItem(r, c, item)
        self.show_live(status)
        self.show_limits(status, now)
        self.rent.setText(om.rent_sentence(doc))
        lines = [f"<b>{html_text(title)}:</b> {html_text(text, 2000)}" for title, text in om.channel_headlines(doc)]
        self.channels.setText("<br>".join(lines))

    def show_devices(self, sync: dict | None) -> None:
        """The sync folder's devices over the period, this one first; hidden when sync is off."""
        self.sync = sync
        rows = om.device_rows(sync, time.time())
        self.devices.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate((row.name, row.spent, row.calls, row.last_seen)):
                item = QTableWidgetItem(text)
                item.setToolTip(row.tip)
                if c in (1, 2):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.devices.setItem(r, c, item)
        self.devices.setMinimumHeight(self.devices.horizontalHeader().height() + 22 * min(len(rows), 3) + 4)
        self.devices_note.setText(om.devices_note(sync))
        self.devices_note.setVisible(bool(self.devices_note.text()))
        self.devices_box.setVisible(bool(rows))
        self.all_devices.setVisible(bool(rows))

    def redraw_bars(self) -> None:
        button = self.by_group.checkedButton()
        stacks = om.daily_stacks(self.doc, button.property("by") if button else "model")
        charts.draw_stacks(self.plot, stacks.days, stacks.layers)

    def show_live(self, status: dict | None) -> None:
        self.live.clear()
        for snap in (status or {}).get("sessions") or []:
            state = lamp_state(snap)
            item = QListWidgetItem(lamp_icon(lamp_colour(snap)),
                                   f"{session_name(snap)} — {STATE_WORDS.get(state, state)}")
            item.setData(Qt.ItemDataRole.UserRole, snap.get("session_id"))
            item.setToolTip(f"Lamp {lamp_colour(snap)}. Click to open this session.")
            self.live.addItem(item)
        if not self.live.count():
            self.live.addItem(QListWidgetItem("No live session: one shows here from its first call."))
        # up to three live sessions show whole; more scroll (the chart above gives up the height)
        rows = min(self.live.count(), LIVE_ROWS_SHOWN)  # a wrapped row is taller: each counts its own height
        self.live.doItemsLayout()
        heights = [max(self.live.sizeHintForRow(i), self.live.visualRect(self.live.model().index(i, 0)).height())
                   for i in range(rows)]
        self.live.setMinimumHeight(max(44, sum(heights) + 2 * self.live.frameWidth()))

    def show_limits(self, status: dict | None, now: float) -> None:
        while self.limits_lay.count():
            old = self.limits_lay.takeAt(0).widget()
            old.hide()  # until the event loop deletes it, it would still paint over the box's title
            old.deleteLater()
        meters = om.limit_meters(status, now) + om.budget_meters(status)
        self.limits_box.setVisible(bool(meters))
        for m in meters:
            bar = QProgressBar()
            bar.setMaximumHeight(20)
            bar.setRange(0, 100)
            bar.setValue(round(m.percent))
            bar.setFormat(f"{m.name}: {m.text}")
            bar.setToolTip(m.tip)
            self.limits_lay.addWidget(bar)

    # ---- clicks ----
    def _session_cell(self, row: int, _col: int) -> None:
        item = self.sessions.item(row, 0)
        if item is not None and item.data(Qt.ItemDataRole.UserRole):
            self.open_session.emit(item.data(Qt.ItemDataRole.UserRole))

    def _live_item(self, item: QListWidgetItem) -> None:
        if item.data(Qt.ItemDataRole.UserRole):
            self.open_session.emit(item.data(Qt.ItemDataRole.UserRole))
