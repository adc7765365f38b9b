"""The Team tab: the team's members, spend and rent by day, and spend by project.

Shown only when a team is configured (`[team] url`); its data is the service's
GET /api/v1/team (the service reads the team database, the desktop never does).
"""
from __future__ import annotations

from datetime import datetime, timezone

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QPushButton, QHBoxLayout, QTableWidget, QTableWidgetItem, \
    QVBoxLayout

from desktop.present import fmt
from service.client.textsafe import html_text, printable
from desktop.widgets import charts
from desktop.connection.datasource import DataError
from desktop.tabs.base import Tab

MEMBER_COLUMNS = ("member", "spend", "calls", "rent", "reminders", "restarts after one", "pinch saved",
                  "restart savings (est.)")


def team_configured(source) -> bool:
    """Whether the service's config names a team database."""
    try:
        return bool(((source.config() or {}).get("team") or {}).get("url"))
    except DataError:
        return False


def member_rows(doc: dict) -> list[tuple[str, ...]]:
    """One row per member (highest spend first), as the table shows them."""
    rows: list[tuple[str, ...]] = []
    def billed(m: dict) -> float:  # the calls + what Claude Code billed but did not write
        return float(m.get("billed_usd", m.get("spend_usd")) or 0)

    for name, m in sorted((doc.get("members") or {}).items(), key=lambda kv: -billed(kv[1])):
        rows.append((printable(name), fmt.usd(billed(m)), str(m.get("calls", 0)), fmt.usd(m.get("rent_usd")),
                     str(m.get("reminders", 0)), str(m.get("restarts_after_reminder", 0)),
                     fmt.usd(m.get("pinch_saved_usd")),
                     fmt.usd((m.get("restart_savings") or {}).get("first_reminder_usd"))))
    return rows


def day_series(block: dict) -> tuple[list[float], list[float]]:
    """(x: UTC midnight as epoch seconds, y) of a {YYYY-MM-DD: usd} map, in day order."""
    xs, ys = [], []
    for day, usd in sorted((block or {}).items()):
        try:
            t = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
        xs.append(t)
        ys.append(float(usd))
    return xs, ys


def headline(doc: dict) -> str:
    last = doc.get("last_push") or {}
    if not last:
        pushed = "no scheduled push yet"
    elif last.get("ok"):
        pushed = f"last push {last.get('at')}: {last.get('sent', 0)} rows sent, {last.get('waiting', 0)} waiting"
    else:
        pushed = f"last push {last.get('at')} failed: {last.get('message')}"
    skipped = sum(int(n) for n in (doc.get("skipped_rows") or {}).values())
    # rows the server holds outside the bounds every reader takes (a far-off day, money not a number)
    left_out = f" · {skipped} rows left out (a day or money out of range)" if skipped else ""
    return (f"<b>Team</b> — {len(doc.get('members') or {})} members, spend {fmt.usd(doc.get('billed_usd', doc.get('total_usd')))}, "
            f"rent {fmt.usd(doc.get('rent_usd'))} · you are {html_text(doc.get('member', '?'))} · {html_text(pushed, 2000)}"
            f"{left_out}")


def _table(columns) -> QTableWidget:
    t = QTableWidget(0, len(columns))
    t.setHorizontalHeaderLabels(list(columns))
    t.verticalHeader().setVisible(False)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    t.horizontalHeader().setStretchLastSection(True)
    t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    return t


def _fill(table: QTableWidget, rows: list[tuple[str, ...]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            item = QTableWidgetItem(text)
            if c:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)


class TeamTab(Tab):
    def __init__(self, source, parent=None):
        super().__init__(parent)
        self.source = source
        self.doc: dict | None = None
        self.head = QLabel()
        self.head.setTextFormat(Qt.TextFormat.RichText)
        self.head.setWordWrap(True)
        self.refresh = QPushButton("Refresh")
        self.refresh.clicked.connect(self.reload)
        top = QHBoxLayout()
        top.addWidget(self.head, 1)
        top.addWidget(self.refresh)
        self.members = _table(MEMBER_COLUMNS)
        # the team server keeps UTC days: its members live in different time zones
        self.plot = charts.new_plot("Spend and rent by day (team, UTC days)", "USD", "", date_axis=True, legend=True)
        self.projects = _table(("project", "spend"))
        self.projects.setMaximumHeight(180)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.members)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.projects)

    def reload(self) -> None:
        try:
            self.show_team(self.source.team())
        except DataError as exc:
            self.show_team(None)
            self.head.setText(f"Could not load the team view: {html_text(exc, 2000)}")

    def show_error(self, text: str) -> None:
        self.head.setText(f"Could not load the team view: {text}")

    def show_team(self, doc: dict | None) -> None:
        self.doc = doc
        doc = doc or {}
        self.head.setText(headline(doc) if doc else "")
        _fill(self.members, member_rows(doc))
        by_project = sorted((doc.get("by_project") or {}).items(), key=lambda kv: -kv[1])
        _fill(self.projects, [(printable(p or "(none)"), fmt.usd(usd)) for p, usd in by_project])
        self.plot.clear()
        for block, colour, name in ((doc.get("by_day"), "#3b7dd8", "spend"), (doc.get("rent_by_day"), "#c0392b",
                                                                               "rent")):
            xs, ys = day_series(block or {})
            if xs:
                self.plot.plot(xs, ys, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=5, name=name)
