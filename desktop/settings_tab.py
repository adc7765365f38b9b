"""Settings: every value of the service's config (thresholds, g_floor, prices, paths,
history prompt storage), saved through POST /config, plus the local autostart toggle."""
from __future__ import annotations

import json

from PySide6.QtCore import Qt

from PySide6.QtWidgets import (
    QCheckBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QScrollArea,
    QVBoxLayout, QWidget,
)

from desktop import autostart
from desktop.discovery import api_file, claude_projects_dir, config_dir
from desktop.datasource import DataError
from desktop.viewmodel import flatten, parse_setting, unflatten

# Shown first, with a word of explanation; anything else in the config follows.
KNOWN = {
    "eps_amber": "amber when the average cost is this much above the best (0.05 = 5 %)",
    "eps_crit": "red when it is this much above the best",
    "g_floor": "least growth per call assumed (tokens)",
    "min_gap": "seconds between two reminders of one session",
    "store_prompts": "keep prompt text in the history",
}


def _order(key: str) -> tuple[int, str]:
    leaf = key.rsplit(".", 1)[-1]
    return (list(KNOWN).index(leaf) if leaf in KNOWN else len(KNOWN), key)


class SettingsTab(QWidget):
    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.values: dict[str, object] = {}
        self.editors: dict[str, QWidget] = {}
        self.autostart = QCheckBox("Start ctxlamp when I log in")
        self.autostart.setChecked(autostart.is_enabled())
        self.autostart.toggled.connect(self._toggle_autostart)
        self.form_host = QWidget()
        host_lay = QVBoxLayout(self.form_host)
        service_box = QGroupBox("Service settings (config.toml)")
        self.form = QFormLayout(service_box)
        host_lay.addWidget(service_box)
        prices_box = QGroupBox("Price overrides (prices.json; the service reads it when it starts)")
        self.prices_edit = QPlainTextEdit()
        self.prices_edit.setPlaceholderText('{"models": {"claude-sonnet-4-5": {"cache_read": 0.3}}}   '
                                            '(USD per million tokens; a known model changes only the fields '
                                            'named, a new model needs input, output, cache_read, '
                                            'cache_write_5m, cache_write_1h, family)')
        self.prices_edit.setMaximumHeight(110)
        self.prices_button = QPushButton("Save price overrides")
        self.prices_button.clicked.connect(self.save_prices)
        pl = QVBoxLayout(prices_box)
        pl.addWidget(self.prices_edit)
        pl.addWidget(self.prices_button)
        host_lay.addWidget(prices_box)
        paths_box = QGroupBox("Paths")
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
        scroll.setWidget(self.form_host)
        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(self.save)
        self.status = QLabel()
        self.status.setWordWrap(True)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.save_button)
        lay = QVBoxLayout(self)
        lay.addWidget(self.autostart)
        lay.addWidget(scroll, 1)
        lay.addLayout(bottom)

    def prices_file(self):
        return config_dir() / "prices.json"

    def show_local(self) -> None:
        """Prices override file and the paths ctxlamp uses (no service needed)."""
        try:
            self.prices_edit.setPlainText(self.prices_file().read_text(encoding="utf-8"))
        except OSError:
            self.prices_edit.setPlainText("")
        while self.paths_form.rowCount():
            self.paths_form.removeRow(0)
        for label, path in [("Claude Code transcripts", claude_projects_dir()), ("service discovery", api_file()),
                            ("settings and prices", config_dir()), ("autostart entry", autostart.autostart_file())]:
            value = QLabel(str(path))
            value.setTextInteractionFlags(value.textInteractionFlags() | Qt.TextSelectableByMouse)
            self.paths_form.addRow(label, value)

    def save_prices(self) -> bool:
        text = self.prices_edit.toPlainText().strip()
        if not getattr(self.source, "live", False):
            self.status.setText("Demo settings (read only).")
            return False
        path = self.prices_file()
        if not text:
            path.unlink(missing_ok=True)
            self.status.setText(f"Removed {path}; restart the service to use the bundled prices.")
            return True
        try:
            table = json.loads(text)
            models = table.get("models") if isinstance(table, dict) else None
            if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
                raise ValueError('expected {"models": {model id: {input, output, cache_read, ...}}}')
        except ValueError as exc:
            self.status.setText(f"Price overrides not saved: {exc}")
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        self.status.setText(f"Saved {path}; restart the service to apply.")
        return True

    def reload(self) -> None:
        self.show_local()
        try:
            config = self.source.config()
        except DataError as exc:
            self.status.setText(f"Could not load the settings: {exc}")
            return
        self.show_config(config)
        try:
            self.show_skipped((self.source.status().get("service") or {}).get("skipped_files") or [])
        except DataError:
            self.show_skipped([])

    def show_skipped(self, rows: list[dict]) -> None:
        """Each skipped file with the reason (a FIFO, a folder, permission denied...); hidden when none."""
        while self.skipped_form.rowCount():
            self.skipped_form.removeRow(0)
        for row in rows:
            value = QLabel(str(row.get("path")))
            value.setTextInteractionFlags(value.textInteractionFlags() | Qt.TextSelectableByMouse)
            self.skipped_form.addRow(str(row.get("reason")), value)
        self.skipped_box.setVisible(bool(rows))

    def show_config(self, config: dict) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.editors.clear()
        self.values = flatten(config)
        for key in sorted(self.values, key=_order):
            value = self.values[key]
            if isinstance(value, bool):
                editor = QCheckBox()
                editor.setChecked(value)
            else:
                text = json.dumps(value) if isinstance(value, (list, dict)) or value is None else str(value)
                editor = QLineEdit(text)
            leaf = key.rsplit(".", 1)[-1]
            if leaf in KNOWN:
                editor.setToolTip(KNOWN[leaf])
            self.editors[key] = editor
            self.form.addRow(key, editor)
        self.status.setText("Saved to config.toml by the service." if getattr(self.source, "live", False)
                            else "Demo settings (read only).")

    def changes(self) -> dict:
        """Only the values the user changed, nested like the config."""
        out = {}
        for key, editor in self.editors.items():
            old = self.values.get(key)
            if isinstance(editor, QCheckBox):
                new = editor.isChecked()
            else:
                try:
                    new = parse_setting(editor.text(), old)
                except ValueError:
                    raise ValueError(f"{key}: not a valid value") from None
            if new != old:
                out[key] = new
        return unflatten(out)

    def save(self) -> bool:
        try:
            changes = self.changes()
        except ValueError as exc:
            self.status.setText(str(exc))
            return False
        if not changes:
            self.status.setText("Nothing changed.")
            return True
        try:
            config = self.source.save_config(changes)
        except DataError as exc:
            self.status.setText(f"Not saved: {exc}")
            return False
        if isinstance(config, dict) and config:
            self.show_config(config)
        self.status.setText("Saved.")
        return True

    def _toggle_autostart(self, on: bool) -> None:
        try:
            path = autostart.set_enabled(on)
            self.status.setText(f"{'Wrote' if on else 'Removed'} {path}")
        except OSError as exc:
            self.status.setText(f"Autostart: {exc}")
