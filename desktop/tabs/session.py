"""The Session tab: the followed (or chosen) session's header, cost curve, context and rent, plan limits."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QSplitter, QVBoxLayout

from desktop.present import fmt
from desktop.present.advice import session_advice
from desktop.widgets import charts
from desktop.present.curve import curve_view, series_view
from desktop.present.lamp import session_label
from desktop.present.session import compaction_fact, header_facts, header_title
from desktop.tabs.base import Tab
from service.client.textsafe import html_text
from desktop.tabs.limits import LimitsPanel


class SessionTab(Tab):
    """One session: its header figures, the cost curve, context and rent over calls, the plan limits."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.advice = QLabel()  # the notice's advice as the lamp stands now, and its why: a tray notice opens here
        self.advice.setTextFormat(Qt.TextFormat.PlainText)
        self.advice.setWordWrap(True)
        self.facts = QGridLayout()
        self.facts.setHorizontalSpacing(20)
        self.series: dict | None = None
        self.snapshot: dict | None = None
        self.curve_plot = charts.new_plot("Cost curve: average cost per call if you restarted now, against the best",
                                          "times the best", "position (1 = the sweet spot)")
        self.curve_plot.setToolTip("Diamonds mark each time the rent on dead weight reached a restart's cost (the "
                                   "first gave the notice); the dot is where the session is now.")
        self.stock_plot = charts.new_plot("", "tokens", "call", left_unit="tokens", bottom_unit="count")
        charts.title_legend(self.stock_plot, "Context over calls", charts.STOCK_KEYS)
        self.rent_plot = charts.new_plot("", "", "call", left_unit="usd", bottom_unit="count")
        charts.title_legend(self.rent_plot, "Rent on dead weight", charts.rent_keys())
        # each chart keeps the height its tick labels need; the two series side by side leave the curve room
        self.curve_plot.setMinimumHeight(190)
        for plot in (self.stock_plot, self.rent_plot):
            plot.setMinimumHeight(150)
        series = QSplitter(Qt.Horizontal)
        series.addWidget(self.stock_plot)
        series.addWidget(self.rent_plot)
        series.setSizes([560, 440])
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.curve_plot)
        split.addWidget(series)
        split.setSizes([320, 220])
        self.limits_panel = LimitsPanel()  # outside the splitter: with nothing reported it is one line
        split.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.advice)
        lay.addLayout(self.facts)
        lay.addWidget(split, 1)
        lay.addWidget(self.limits_panel)
        self.show_snapshot(None)
        self.show_series(None)

    def show_snapshot(self, snapshot: dict | None) -> None:
        self.snapshot = snapshot
        self.title.setText(header_title(snapshot))
        advice, why = session_advice(snapshot)
        self.advice.setText(f"{advice} {why}".strip())
        self.advice.setVisible(bool(advice))
        self._facts(header_facts(snapshot))
        charts.draw_curve(self.curve_plot, curve_view(snapshot, self.series))

    def _facts(self, facts: list[tuple[str, str, str]]) -> None:
        while self.facts.count():
            self.facts.takeAt(0).widget().deleteLater()
        for i, (caption, value, tip) in enumerate(facts):
            cap, val = QLabel(caption), QLabel(f"<b>{html_text(value)}</b>")
            cap.setTextFormat(Qt.TextFormat.PlainText)
            for w in (cap, val):
                w.setToolTip(tip)
                w.setWordWrap(True)  # a narrow window wraps the figures instead of growing
            self.facts.addWidget(cap, 0, i)
            self.facts.addWidget(val, 1, i)

    def show_ended(self, row: dict, segments: list[dict]) -> None:
        """A session that is not live any more: what the overview and its archived stretches of work say."""
        self.snapshot = self.series = None
        self.advice.hide()
        self.title.setText(f"<b>{html_text(session_label(row.get('project'), row.get('started_at')))}</b>"
                           " — not live any more")
        rent = sum(float(p.get("rent_usd") or 0) for p in segments)
        advised = sum(1 for p in segments if int(p.get("laps") or 0) > 0)
        unwritten = row.get("unwritten_usd") or 0.0
        self._facts([("Spent", fmt.usd(row.get("billed_usd", row.get("usd"))),
                      "What the API billed for it in the overview's period"
                      + (f", {fmt.usd(unwritten)} of it for requests Claude Code made without writing them "
                         "(measured from its cost record)." if unwritten else ".")),
                     ("Calls", fmt.count(row.get("calls")), "API calls in the overview's period."),
                     ("Last call", fmt.when(row.get("last_at")), "When it last called the API."),
                     ("Rent on dead weight", fmt.usd(rent) if segments else fmt.DASH,
                      "Over its finished stretches of work (History tab)."),
                     ("Restart notices", f"{advised} of {fmt.plural(len(segments), 'stretch', 'stretches')}"
                      if segments else fmt.DASH,
                      "Stretches of work in which the rent on dead weight reached a restart's cost: the tray "
                      "gave its notice once in each (finished stretches, History tab).")]
                    + compaction_fact(row.get("compactions")))
        charts.draw_curve(self.curve_plot, curve_view(None))
        self.show_series(None)

    def show_series(self, series: dict | None) -> None:
        self.series = series
        if self.snapshot is not None:
            charts.draw_curve(self.curve_plot, curve_view(self.snapshot, series))
        view = series_view(series)
        charts.draw_stock(self.stock_plot, view)
        charts.draw_rent(self.rent_plot, view)

    def show_error(self, text: str) -> None:
        self.title.setText(f"Could not load the session: {html.escape(text)}")
