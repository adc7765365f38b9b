"""Settings: a typed control per setting (default shown, reset, message under it), price overrides
as a table, the paths ctxlamp uses and the local autostart toggle.

Save stays off while a value is wrong: every change is checked here and by the
service itself (POST /config?check=1), so nothing it would refuse is sent.
"""
from __future__ import annotations

import json
import threading

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox, QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QHeaderView,
    QLabel, QLineEdit, QListWidget, QListWidgetItem, QPushButton, QScrollArea, QSpinBox, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from desktop.platforms import autostart
from desktop.connection.datasource import DataError
from desktop.present import settings as sm
from desktop.present.settings import flatten, unflatten
from desktop.tabs.base import Tab
from service.client.paths import app_paths, claude_projects
from service.client.words import kept_copies as kept_words
from service.client.running import plays_demo

ERROR_STYLE = "color: #d93025;"


class ListEditor(QWidget):
    """Editable lines with Add and Remove (excluded file patterns)."""

    changed = Signal()

    def __init__(self, placeholder: str, parent=None):
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setMaximumHeight(110)
        self.entry = QLineEdit()
        self.entry.setPlaceholderText(placeholder)
        add, remove = QPushButton("Add"), QPushButton("Remove")
        row = QHBoxLayout()
        row.addWidget(self.entry, 1)
        row.addWidget(add)
        row.addWidget(remove)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.list)
        lay.addLayout(row)
        add.clicked.connect(self._add)
        self.entry.returnPressed.connect(self._add)
        remove.clicked.connect(self._remove)
        self.list.itemChanged.connect(lambda _i: self.changed.emit())

    def value(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def set_value(self, items) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for text in items or []:
            self._append(str(text))
        self.list.blockSignals(False)

    def _append(self, text: str) -> None:
        item = QListWidgetItem(text)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
        self.list.addItem(item)

    def _add(self) -> None:
        text = self.entry.text().strip()
        if text:
            self._append(text)
            self.entry.clear()
            self.changed.emit()

    def _remove(self) -> None:
        for item in self.list.selectedItems():
            self.list.takeItem(self.list.row(item))
        self.changed.emit()


class RatioEditor(QWidget):
    """Model family -> ratio rows."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Model family", "Ratio"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setMaximumHeight(110)
        add, remove = QPushButton("Add a family"), QPushButton("Remove")
        row = QHBoxLayout()
        row.addWidget(add)
        row.addWidget(remove)
        row.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.table)
        lay.addLayout(row)
        add.clicked.connect(lambda: self._append("", 1.0) or self.changed.emit())
        remove.clicked.connect(self._remove)
        self.table.itemChanged.connect(lambda _i: self.changed.emit())

    def _append(self, family: str, ratio: float) -> None:
        r = self.table.rowCount()
        self.table.insertRow(r)
        self.table.setItem(r, 0, QTableWidgetItem(family))
        spin = QDoubleSpinBox()
        spin.setRange(0.01, 99.99)
        spin.setDecimals(3)
        spin.setValue(float(ratio))
        spin.valueChanged.connect(lambda _v: self.changed.emit())
        self.table.setCellWidget(r, 1, spin)

    def _remove(self) -> None:
        rows = sorted({i.row() for i in self.table.selectedIndexes()} or {self.table.rowCount() - 1}, reverse=True)
        for r in rows:
            if r >= 0:
                self.table.removeRow(r)
        self.changed.emit()

    def value(self) -> dict[str, float]:
        out = {}
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            out[(item.text() if item else "").strip()] = self.table.cellWidget(r, 1).value()
        return out

    def set_value(self, ratios) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        for fam, ratio in sorted((ratios or {}).items()):
            self._append(fam, ratio)
        self.table.blockSignals(False)


class DurationEditor(QWidget):
    """A number and a unit; the value is config.toml's form ("10m")."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.number = QDoubleSpinBox()
        self.number.setRange(0, 100_000)
        self.number.setDecimals(1)
        self.unit = QComboBox()
        for key, words, _ in sm.DURATION_UNITS:
            self.unit.addItem(words, key)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.number)
        lay.addWidget(self.unit)
        lay.addStretch(1)
        self.number.valueChanged.connect(lambda _v: self.changed.emit())
        self.unit.currentIndexChanged.connect(lambda _i: self.changed.emit())
        self.setFocusProxy(self.number)

    def value(self) -> str:
        return sm.duration_text(self.number.value(), self.unit.currentData())

    def set_value(self, value) -> None:
        number, unit = sm.duration_parts(value)
        self.number.setValue(number)
        self.unit.setCurrentIndex(max(0, self.unit.findData(unit)))


def make_control(field: sm.Field) -> Control:
    """The control for a field; each has value(), set_value() and a `changed` signal (see _Wrap)."""
    if field.kind == "percent":
        spin = QDoubleSpinBox()
        spin.setRange(0, 1000)
        spin.setDecimals(1)
        spin.setSuffix(" % above the best")
        return _Wrap(spin, lambda: round(spin.value() / 100, 6), lambda v: spin.setValue(float(v) * 100),
                     spin.valueChanged)
    if field.kind in ("int", "hours", "sessions"):
        whole = QSpinBox()
        whole.setRange(0, int(field.maximum))
        whole.setGroupSeparatorShown(True)
        whole.setSuffix({"int": " tokens", "hours": " hours", "sessions": " sessions"}[field.kind])
        whole.setStepType(QAbstractSpinBox.StepType.AdaptiveDecimalStepType)
        return _Wrap(whole, whole.value, lambda v: whole.setValue(int(v)), whole.valueChanged)
    if field.kind == "bool":
        box = QCheckBox()
        return _Wrap(box, box.isChecked, lambda v: box.setChecked(bool(v)), box.toggled)
    if field.kind == "text":
        return url_control("postgresql://member@host/team (empty: no team)" if field.key == "team.url"
                           else "postgresql://user@host/ctxlamp (empty: the local file)")
    if field.kind in ("folder", "name"):
        line = QLineEdit()
        line.setPlaceholderText("e.g. ~/Dropbox/ctxlamp (empty: off)" if field.kind == "folder"
                                else "e.g. laptop (empty: this computer's name)")
        return _Wrap(line, lambda: line.text().strip(), lambda v: line.setText(str(v or "")), line.textChanged)
    if field.kind == "zone":
        zone = QLineEdit()
        zone.setPlaceholderText("e.g. Europe/Berlin (empty: this computer's time zone)")
        return _Wrap(zone, lambda: zone.text().strip(), lambda v: zone.setText(str(v or "")), zone.textChanged,
                     stretch=False)
    if field.kind in ("usd", "share"):
        money = QDoubleSpinBox()
        money.setRange(1 if field.kind == "share" else 0, field.maximum)
        money.setDecimals(2 if field.kind == "usd" else 0)
        if field.kind == "usd":
            money.setPrefix("$ ")
            money.setSpecialValueText("no budget")
        else:
            money.setSuffix(" % of the budget")
        return _Wrap(money, money.value, lambda v: money.setValue(float(v)), money.valueChanged)
    if field.kind == "duration":
        return DurationEditor()
    if field.kind == "list":
        return ListEditor("a pattern, e.g. **/node_modules/**")
    return RatioEditor()


def url_control(placeholder: str) -> _Wrap:
    """A database URL may carry a password: shown masked (not copyable), with Show to check what was typed."""
    box = QWidget()
    line = QLineEdit()
    line.setPlaceholderText(placeholder)
    line.setEchoMode(QLineEdit.EchoMode.Password)
    show = QPushButton("Show")
    show.setCheckable(True)
    show.setToolTip("Show the address as typed (it may hold a password)")
    show.toggled.connect(lambda on: line.setEchoMode(QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password))
    lay = QHBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(line, 1)
    lay.addWidget(show)
    box.setFocusProxy(line)
    box.line, box.show_button = line, show  # type: ignore[attr-defined]  # for tests and accessibility

    def put(value: object) -> None:
        line.blockSignals(True)
        line.setText(str(value or ""))
        line.blockSignals(False)

    return _Wrap(box, lambda: line.text().strip(), put, line.textChanged, stretch=False)


class _Wrap(QWidget):
    changed = Signal()

    def __init__(self, inner: QWidget, get, put, signal, stretch: bool = True, parent=None):
        super().__init__(parent)
        self.inner, self._get, self._put = inner, get, put
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(inner, 0 if stretch else 1)
        if stretch:
            lay.addStretch(1)
        signal.connect(lambda *_: self.changed.emit())
        self.setFocusProxy(inner)

    def value(self):
        return self._get()

    def set_value(self, v) -> None:
        self.inner.blockSignals(True)
        self._put(v)
        self.inner.blockSignals(False)


# What make_control returns: each has value(), set_value() and a `changed` signal.
Control = _Wrap | DurationEditor | ListEditor | RatioEditor


class FieldRow(QWidget):
    """A control with its default, a reset button and a message line."""

    changed = Signal()

    def __init__(self, field: sm.Field, parent=None):
        super().__init__(parent)
        self.field = field
        self.default = None
        self.control = make_control(field)
        self.control.setToolTip(field.help)
        self.default_label = QLabel()
        self.default_label.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.default_label.setEnabled(False)  # the palette's muted text
        self.reset = QPushButton("Reset")
        self.reset.setToolTip("Back to the default")
        self.error = QLabel()
        self.error.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        # the message's line is kept when there is none, so a message does not push the rows below it down
        self.error.setMinimumHeight(self.error.fontMetrics().lineSpacing())
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.control, 1)
        top.addWidget(self.default_label)
        top.addWidget(self.reset)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(self.error)
        self.control.changed.connect(self.changed)
        self.reset.clicked.connect(self._reset)
        self.setFocusProxy(self.control)

    def set_default(self, value) -> None:
        self.default = value
        self.default_label.setText(f"default: {sm.show_value(self.field, value)}")

    def value(self):
        return self.control.value()

    def set_value(self, value) -> None:
        self.control.set_value(value)

    def set_error(self, text: str | None) -> None:
        self.error.setText(text or "")

    def _reset(self) -> None:
        if self.default is not None:
            self.set_value(self.default)
            self.changed.emit()


DEMO_TITLE = "The demo's settings (how its lamp judges the demo session; gone when the demo ends)"
DEMO_RESTING = ("These are the demo's settings: its lamp uses a change at once, and they are gone when the demo "
                "ends. Your own settings are not changed here: start ctxlamp on your own sessions to set them.")
DEMO_SAVED = "Saved for the demo: its lamp uses it now; it is gone when the demo ends (your own settings are unchanged)."


class SettingsTab(Tab):
    saved = Signal()  # the service took a change: the window adds or removes what depends on it (the Team tab)
    synced = Signal(str)  # a Sync now's answer, from its thread

    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.values: dict[str, object] = {}
        self.rows: dict[str, FieldRow] = {}
        self.autostart = QCheckBox("Start ctxlamp when I log in")
        self.autostart.setChecked(autostart.is_enabled())
        self.autostart.toggled.connect(self._toggle_autostart)
        host = QWidget()
        host_lay = QVBoxLayout(host)
        self.demo = plays_demo()  # `make run`'s demo: the demo's own settings, gone when it ends
        service_box = QGroupBox(DEMO_TITLE if self.demo else "How the lamp judges a session (saved by the "
                                "service in config.toml)")
        self.form = QFormLayout(service_box)
        for field in sm.FIELDS:
            row = FieldRow(field)
            label = QLabel(field.label)
            label.setToolTip(field.help)
            label.setBuddy(row.control)
            row.changed.connect(self._changed)
            self.rows[field.key] = row
            self.form.addRow(label, row)
        host_lay.addWidget(service_box)
        sync_row = QHBoxLayout()
        self.sync_button = QPushButton("Sync &now")
        self.sync_button.setToolTip("Write this machine's figures to the sync folder and read the others' now "
                                    "(save a new folder first).")
        self.sync_button.clicked.connect(self.sync_now)
        self.synced.connect(self._synced)  # queued: emitted by the syncing thread
        self.sync_status = QLabel()
        self.sync_status.setTextFormat(Qt.TextFormat.PlainText)  # file names from the shared folder
        self.sync_status.setWordWrap(True)
        sync_row.addWidget(self.sync_button)
        sync_row.addWidget(self.sync_status, 1)
        host_lay.addLayout(sync_row)
        host_lay.addWidget(self._prices_box())
        paths_box = QGroupBox("Where ctxlamp reads and keeps things")
        self.paths_form = QFormLayout(paths_box)
        host_lay.addWidget(paths_box)
        # data quality: what the service found in the transcripts folder and did not read (SERVICE.skipped_files)
        self.skipped_box = QGroupBox("Files in the transcripts folder the service does not read")
        self.skipped_form = QFormLayout(self.skipped_box)
        self.skipped_box.setVisible(False)
        host_lay.addWidget(self.skipped_box)
        host_lay.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(host)
        self.save_button = QPushButton("&Save settings")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save)
        self.status = QLabel()
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.status.setWordWrap(True)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.save_button)
        lay = QVBoxLayout(self)
        lay.addWidget(self.autostart)
        lay.addWidget(scroll, 1)
        lay.addLayout(bottom)
        self._check_timer = QTimer(self)
        self._check_timer.setSingleShot(True)
        self._check_timer.setInterval(300)
        self._check_timer.timeout.connect(self.validate)

    # ---- price overrides ----
    def _prices_box(self) -> QGroupBox:
        box = QGroupBox("Price overrides in dollars per million tokens (prices.json; the service reads it when it "
                        "starts)")
        self.prices = QTableWidget(0, 1 + len(sm.PRICE_FIELDS))
        self.prices.setHorizontalHeaderLabels(["Model"] + [w for _, w in sm.PRICE_FIELDS])
        self.prices.verticalHeader().setVisible(False)
        self.prices.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.prices.setMaximumHeight(130)
        self.prices.setToolTip("A model of the bundled table changes only the prices you fill in; "
                               "a new model needs all five.")
        self.prices_error = QLabel()
        self.prices_error.setTextFormat(Qt.TextFormat.PlainText)  # errors, paths and names shown as written
        self.prices_error.setStyleSheet(ERROR_STYLE)
        self.prices_error.setWordWrap(True)
        add, remove = QPushButton("Add a model"), QPushButton("Remove")
        self.prices_button = QPushButton("Save price overrides")
        row = QHBoxLayout()
        for b in (add, remove):
            row.addWidget(b)
        row.addStretch(1)
        row.addWidget(self.prices_button)
        lay = QVBoxLayout(box)
        lay.addWidget(self.prices)
        lay.addWidget(self.prices_error)
        lay.addLayout(row)
        add.clicked.connect(lambda: self._add_price_row("", {}))
        remove.clicked.connect(self._remove_price_rows)
        self.prices_button.clicked.connect(self.save_prices)
        self.prices.itemChanged.connect(lambda _i: self.check_prices())
        return box

    def _add_price_row(self, model: str, cells: dict[str, str]) -> None:
        r = self.prices.rowCount()
        self.prices.blockSignals(True)
        self.prices.insertRow(r)
        self.prices.setItem(r, 0, QTableWidgetItem(model))
        for c, (key, _) in enumerate(sm.PRICE_FIELDS, start=1):
            item = QTableWidgetItem(cells.get(key, ""))
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.prices.setItem(r, c, item)
        self.prices.blockSignals(False)

    def _remove_price_rows(self) -> None:
        for r in sorted({i.row() for i in self.prices.selectedIndexes()}, reverse=True):
            self.prices.removeRow(r)
        self.check_prices()

    def _cell(self, row: int, column: int) -> str:
        item = self.prices.item(row, column)
        return item.text() if item else ""

    def price_rows(self) -> list[tuple[str, dict[str, str]]]:
        rows = []
        for r in range(self.prices.rowCount()):
            rows.append((self._cell(r, 0), {key: self._cell(r, c) for c, (key, _) in enumerate(sm.PRICE_FIELDS, start=1)}))
        return rows

    def check_prices(self) -> bool:
        errors = sm.price_errors(self.price_rows(), sm.known_models())
        self.prices_error.setText(" ".join(msg for _, msg in errors))
        self.prices_error.setVisible(bool(errors))
        self.prices_button.setEnabled(not errors and getattr(self.source, "live", False))
        return not errors

    def prices_file(self):
        return app_paths().prices_override

    def save_prices(self) -> bool:
        if not getattr(self.source, "live", False):
            self.status.setText("Demo settings: nothing is saved.")
            return False
        if not self.check_prices():
            return False
        path = self.prices_file()
        rows = self.price_rows()
        if not rows:
            path.unlink(missing_ok=True)
            self.status.setText("Removed the price overrides; restart the service to use the bundled prices.")
            return True
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # ctxlamp's folders are private
        try:  # what the table does not edit (modifiers, dated changes) stays
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(sm.price_table(rows, previous), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        self.status.setText(f"Saved {path}; restart the service to apply the prices.")
        return True

    # ---- loading ----
    def show_local(self) -> None:
        """Price overrides and the paths ctxlamp uses (no service needed)."""
        self.prices.setRowCount(0)
        try:
            table = json.loads(self.prices_file().read_text(encoding="utf-8"))
            for model, cells in sm.price_rows(table):
                self._add_price_row(model, cells)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            self.prices_error.setText(f"The price overrides file cannot be read ({exc}); saving replaces it.")
        self.check_prices()
        while self.paths_form.rowCount():
            self.paths_form.removeRow(0)
        for label, path in [("Claude Code transcripts", claude_projects()), ("How the tray finds the service",
                                                                                  app_paths().api_file),
                            ("Settings and prices", app_paths().config), ("Start at login entry", autostart.location())]:
            value = QLabel(str(path))
            value.setTextFormat(Qt.TextFormat.PlainText)
            value.setTextInteractionFlags(value.textInteractionFlags() | Qt.TextInteractionFlag.TextSelectableByMouse)
            self.paths_form.addRow(label, value)

    def reload(self) -> None:
        self.show_local()
        try:
            config = self.source.config()
            defaults = self.source.config_defaults()
        except DataError as exc:
            self.status.setText(f"Could not load the settings: {exc}")
            return
        self.show_config(config, defaults)
        try:
            service = self.source.status().get("service") or {}
        except DataError:
            service = {}
        self.show_skipped(service.get("skipped_files") or [])
        self.show_kept(service.get("kept_transcripts"))

    def show_error(self, text: str) -> None:
        self.status.setText(f"Could not load the settings: {text}")

    def show_kept(self, block: dict | None) -> None:
        """The kept copies of transcripts (read once Claude Code deletes them): how many and their size."""
        if not isinstance(block, dict):
            return
        value = QLabel(kept_words(block))
        value.setTextFormat(Qt.TextFormat.PlainText)
        self.paths_form.addRow("Kept copies of transcripts", value)

    def sync_now(self) -> None:
        """Sync now through the service, on a thread (a scan: a few seconds); what it did, or why not."""
        self.sync_button.setEnabled(False)
        self.sync_status.setText("Syncing...")
        threading.Thread(target=self._sync, name="sync-now", daemon=True).start()

    def _sync(self) -> None:
        from desktop.present.overview import sync_sentence

        try:
            text = sync_sentence(self.source.sync_now())
        except DataError as exc:
            text = f"Could not sync: {exc}"
        try:
            self.synced.emit(text)
        except RuntimeError:  # the tab was closed meanwhile
            pass

    def _synced(self, text: str) -> None:
        self.sync_status.setText(text)
        self.sync_button.setEnabled(True)

    def show_skipped(self, rows: list[dict]) -> None:
        """Each skipped file with the reason (a FIFO, a folder, permission denied...); hidden when none."""
        while self.skipped_form.rowCount():
            self.skipped_form.removeRow(0)
        for row in rows:
            value = QLabel(str(row.get("path")))
            value.setTextFormat(Qt.TextFormat.PlainText)
            value.setTextInteractionFlags(value.textInteractionFlags() | Qt.TextInteractionFlag.TextSelectableByMouse)
            self.skipped_form.addRow(str(row.get("reason")), value)
        self.skipped_box.setVisible(bool(rows))

    def show_config(self, config: dict, defaults: dict | None = None) -> None:
        self.values = flatten(config)
        flat_defaults = flatten(defaults or {})
        for key, row in self.rows.items():
            if key in flat_defaults:
                row.set_default(flat_defaults[key])
            if key in self.values:
                row.set_value(self.values[key])
            row.set_error(None)
        self.save_button.setEnabled(False)
        self.status.setText(self._resting_text())

    # ---- checking and saving ----
    def current(self) -> dict[str, object]:
        return {key: row.value() for key, row in self.rows.items()}

    def changes(self) -> dict:
        """Only the values the user changed, nested like the config."""
        return unflatten({k: v for k, v in self.current().items() if k in self.values and v != self.values[k]})

    def _changed(self) -> None:
        self.save_button.setEnabled(False)
        self._check_timer.start()

    def validate(self) -> bool:
        """Local checks, then the service's own; Save is on only when both pass and something changed."""
        self._check_timer.stop()
        errors = sm.local_errors(self.current())
        changes = self.changes()
        general = ""
        if changes and not errors:
            try:
                self.source.check_config(changes)
            except DataError as exc:
                text = str(exc).split(": 400 ", 1)[-1]
                key = sm.field_of_message(text)
                if key:
                    errors[key] = text
                else:
                    general = text
        for key, row in self.rows.items():
            row.set_error(errors.get(key))
        ok = not errors and not general
        self.save_button.setEnabled(ok and bool(changes) and getattr(self.source, "live", False))
        if general:
            self.status.setText(f"The service would refuse this: {general}")
        elif errors:
            self.status.setText("Fix the marked settings to save.")
        elif changes:
            self.status.setText(("Ready to save, for the demo only." if self.demo else "Ready to save.")
                                if getattr(self.source, "live", False)
                                else "Demo settings: nothing is saved.")
        else:  # back to what is saved (a Reset, an undone edit): no message of an earlier state stays
            self.status.setText(self._resting_text())
        return ok

    def _resting_text(self) -> str:
        if not getattr(self.source, "live", False):
            return "Demo settings: nothing is saved."
        return DEMO_RESTING if self.demo else "Changes are checked as you type and saved by the service."

    def save(self) -> bool:
        if not self.validate():
            return False
        changes = self.changes()
        if not changes:
            self.status.setText("Nothing changed.")
            return True
        try:
            config = self.source.save_config(changes)
        except DataError as exc:
            self.status.setText(f"Not saved: {exc}")
            return False
        if isinstance(config, dict) and config:
            self.values = flatten(config)
        self.save_button.setEnabled(False)
        self.status.setText(DEMO_SAVED if self.demo else "Saved.")
        self.saved.emit()
        return True

    def _toggle_autostart(self, on: bool) -> None:
        try:
            path = autostart.set_enabled(on)
            self.status.setText(f"{'Wrote' if on else 'Removed'} {path}")
        except (OSError, autostart.UnsafeCommand) as exc:
            self.status.setText(f"Start at login: {exc}")
