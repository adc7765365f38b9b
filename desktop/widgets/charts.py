"""pyqtgraph plots for the window (Qt Charts is deprecated since Qt 6.10).

Each function takes a view from a desktop/present/ module and
redraws one plot; empty views give an empty plot with a note, never an
exception. Colours come from the system palette (desktop.widgets.theme); axes say
their unit through their tick labels ($, tokens, whole counts, days).
"""
from __future__ import annotations

import html
import math

import pyqtgraph as pg
from PySide6.QtCore import Qt

from desktop.present import fmt

from desktop.widgets import theme
from desktop.present.channel import ChannelView
from desktop.present.curve import CurveView, SeriesView
from desktop.present.lamp import BAND_RGBA, LAMP_FILL, STATE_WORDS

pg.setConfigOptions(antialias=True)

# each band says the lamp's word for its colour (docs/glossary.md), as the tray and the terminal do
# The cost curve's zones, named by where they lie on it: green reaches past the sweet spot (1) too, so amber is
# "well past it" (a restart starts to pay), not merely past it; white, left of green, is where the context is
# still close to its useful part.
BAND_WORDS = {"white": "early", "green": "around the sweet spot", "amber": "well past it",
              "red": STATE_WORDS["critical"]}


class UnitAxis(pg.AxisItem):
    """An axis whose ticks are whole numbers (counts) and/or read through a formatter."""

    def __init__(self, orientation: str, unit: str = "", **kw):
        super().__init__(orientation, **kw)
        self.unit = unit  # "usd", "tokens", "bytes", "count", "day" or ""
        self.day_labels: list[str] = []
        self.enableAutoSIPrefix(False)

    def tickValues(self, minVal, maxVal, size):
        levels = super().tickValues(minVal, maxVal, size)
        if self.unit not in ("count", "day"):
            return levels
        out = []
        for spacing, values in levels:
            if spacing < 1:
                continue
            out.append((spacing, [v for v in values if abs(v - round(v)) < 1e-9]))
        if not out:  # a small range: one tick per whole number
            lo, hi = math.ceil(minVal), math.floor(maxVal)
            out = [(1.0, [float(v) for v in range(lo, hi + 1)])]
        return out

    def tickStrings(self, values, scale, spacing):
        if self.unit == "usd":
            return [fmt.usd(v) for v in values]
        if self.unit == "tokens":
            return [fmt.tokens(v) for v in values]
        if self.unit == "bytes":
            return [fmt.size(v) for v in values]
        if self.unit == "count":
            return [fmt.count(v) for v in values]
        if self.unit == "day":
            return [self.day_labels[int(round(v))] if 0 <= int(round(v)) < len(self.day_labels) else ""
                    for v in values]
        return super().tickStrings(values, scale, spacing)


def new_plot(title: str, left: str, bottom: str, *, left_unit: str = "", bottom_unit: str = "",
             date_axis: bool = False, legend: bool = False) -> pg.PlotWidget:
    c = theme.colours()
    axes = {"left": UnitAxis("left", left_unit)}
    axes["bottom"] = pg.DateAxisItem(orientation="bottom") if date_axis else UnitAxis("bottom", bottom_unit)
    w = pg.PlotWidget(axisItems=axes, background=c["bg"])
    w.setTitle(title, size="10pt", color=c["fg"])
    for name in ("left", "bottom"):
        axis = w.getAxis(name)
        axis.setPen(pg.mkPen(c["muted"]))
        axis.setTextPen(pg.mkPen(c["fg"]))
    w.setLabel("left", left, color=c["fg"])
    w.setLabel("bottom", bottom, color=c["fg"])
    w.showGrid(x=True, y=True, alpha=0.15)
    w.setMenuEnabled(False)
    w.getPlotItem().getViewBox().setMouseEnabled(x=True, y=False)
    if legend:
        fill = pg.mkColor(c["fill"])
        fill.setAlpha(210)
        w.addLegend(offset=(8, 8), labelTextSize="8pt", brush=pg.mkBrush(fill), labelTextColor=c["fg"])
    return w


# (name, colour, dashed) of the lines of the Session tab's two series charts, in their titles
STOCK_KEYS = [("carried", theme.SERIES[0], False), ("read from cache", theme.SERIES[6], True),
              ("useful", theme.SERIES[2], False)]


def rent_keys() -> list[tuple[str, str, bool]]:
    return [("rent paid so far", theme.SERIES[5], False),
            ("a restart's worth", theme.colours()["warn"], True)]


def title_legend(plot: pg.PlotWidget, title: str, entries: list[tuple[str, str, bool]]) -> None:
    """The chart's title followed by its legend, `━ name` per line in its colour (`╍` when dashed): a
    legend above the plot area never covers the data, at any window size."""
    c = theme.colours()
    keys = " &nbsp; ".join(f"<span style='color:{colour}'>{'╍╍' if dashed else '━━'}</span> {html.escape(name)}"
                           for name, colour, dashed in entries)
    plot.setTitle(f"{html.escape(title)} &nbsp;&nbsp; <span style='font-size:9pt'>{keys}</span>", size="10pt",
                  color=c["fg"])


def note(plot: pg.PlotWidget, text: str, xs: tuple[float, float] = (0.0, 1.0),
         ys: tuple[float, float] = (0.0, 1.0)) -> None:
    """`text` in the middle of an empty plot whose axes span `xs` and `ys` (a daily or a time axis keeps
    the days or hours it stands for; pyqtgraph's 0..1 would name the first two days, or 1970)."""
    item = pg.TextItem(text, color=theme.colours()["muted"], anchor=(0.5, 0.5))
    plot.addItem(item)
    item.setPos((xs[0] + xs[1]) / 2, (ys[0] + ys[1]) / 2)
    plot.setXRange(*xs, padding=0)
    plot.setYRange(*ys, padding=0)


def draw_curve(plot: pg.PlotWidget, view: CurveView) -> None:
    """The curve, its lamp bands, a diamond per restart's worth of rent (the first: the notice) and the current
    point (kept as plot.now_point)."""
    c = theme.colours()
    plot.clear()
    plot.now_point = None
    if not view.us:
        note(plot, view.note or "No cost curve yet.")
        return
    finite = [y for y in view.ys if math.isfinite(y)]
    y_top = min(max(finite) if finite else 2.0, 2.0)
    y_top = max(y_top, 1.35)
    for u0, u1, colour in view.bands:
        region = pg.LinearRegionItem(values=(u0, u1), movable=False, brush=pg.mkBrush(*BAND_RGBA[colour]),
                                     pen=pg.mkPen(None))
        region.setZValue(-10)
        plot.addItem(region)
        label = pg.TextItem(BAND_WORDS[colour], color=c["fg"], anchor=(0.5, 0.5))
        plot.addItem(label)
        label.setPos((u0 + u1) / 2, y_top * 1.07)  # a strip above the curve, clear of the point
    plot.plot(view.us, view.ys, pen=pg.mkPen(c["fg"], width=2))
    plot.addItem(pg.InfiniteLine(pos=1.0, angle=90, pen=pg.mkPen(c["good"], width=1, style=Qt.PenStyle.DotLine),
                                 label="sweet spot", labelOpts={"position": 0.6, "color": c["good"]}))
    here = view.point[0] if view.point is not None and math.isfinite(view.point[1]) else None
    for u, a, lap in view.reminders:
        shown = min(a, y_top * 0.99)
        plot.plot([u], [shown], pen=None, symbol="d", symbolSize=10, symbolBrush=c["warn"],
                  symbolPen=pg.mkPen(c["fg"], width=1))
        # only the notice is named (the later diamonds are rent, not notices: no count of them), and not where
        # "you are here" would cover it
        if lap == 1 and (here is None or abs(u - here) >= view.u_max / 8):
            txt = pg.TextItem("notice", color=c["warn"], anchor=(0.5, 1))
            plot.addItem(txt)
            txt.setPos(u, shown + 0.01)
    if view.point is not None and math.isfinite(view.point[1]):
        u, a = view.point
        colour = next((col for u0, u1, col in view.bands if u0 <= u < u1), "red" if view.bands else "white")
        shown_a = min(a, y_top * 0.99)  # a fresh session sits far up the left arm: pin it to the top edge
        plot.now_point = plot.plot([u], [shown_a], pen=None, symbol="o" if shown_a == a else "t1", symbolSize=14,
                                   symbolBrush=LAMP_FILL[colour], symbolPen=pg.mkPen(c["fg"], width=2))
        text = "you are here" + ("" if shown_a == a else f" ({a:.1f}x the best cost per call)")
        fill = pg.mkColor(c["fill"])
        fill.setAlpha(210)
        txt = pg.TextItem(text, color=c["fg"], anchor=(0, 1) if shown_a == a else (0, 0.5), fill=pg.mkBrush(fill))
        plot.addItem(txt)
        txt.setPos(u + 0.03, shown_a)
    plot.setXRange(0, max(view.u_max, (view.point or (0,))[0] * 1.05), padding=0.02)
    plot.setYRange(0.95, y_top * 1.12, padding=0)


def _marks(plot: pg.PlotWidget, view: SeriesView, labels: bool) -> None:
    c = theme.colours()
    for call in view.reset_calls:
        plot.addItem(pg.InfiniteLine(pos=call, angle=90, pen=pg.mkPen(c["muted"], width=1.5),
                                     label="compacted" if labels else None,
                                     labelOpts={"position": 0.97, "color": c["fg"]}))
    span = (view.calls[-1] - view.calls[0]) if len(view.calls) > 1 else 1.0
    named = list(view.reset_calls) if labels else []  # "compacted" is written at the top of those lines
    for call, lap in view.reminder_calls:
        # a stretch's notice is named, the later restarts' worth of rent only drawn (no count of them), and only
        # where the word does not run into another
        show = labels and lap == 1 and all(abs(call - other) >= span / 9 for other in named)
        if show:
            named.append(call)
        plot.addItem(pg.InfiniteLine(pos=call, angle=90, pen=pg.mkPen(c["warn"], width=1, style=Qt.PenStyle.DashLine),
                                     label="notice" if show else None,
                                     labelOpts={"position": 0.9, "color": c["warn"]}))


def draw_stock(plot: pg.PlotWidget, view: SeriesView) -> None:
    plot.clear()
    if not view.calls:
        note(plot, "No calls yet.")
        return
    plot.plot(view.calls, view.total_stock, pen=pg.mkPen(theme.SERIES[0], width=2))
    plot.plot(view.calls, view.L, pen=pg.mkPen(theme.SERIES[6], width=1.5, style=Qt.PenStyle.DashLine))
    plot.plot(view.calls, view.B, pen=pg.mkPen(theme.SERIES[2], width=2))
    _marks(plot, view, labels=True)
    for call in view.rewind_calls:  # the conversation went back: what it left behind left B
        plot.addItem(pg.InfiniteLine(pos=call, angle=90, pen=pg.mkPen(theme.SERIES[3], width=1.5,
                                                                      style=Qt.PenStyle.DashDotLine), label="rewind",
                                     labelOpts={"position": 0.88, "color": theme.SERIES[3]}))
    plot.enableAutoRange()


def draw_rent(plot: pg.PlotWidget, view: SeriesView) -> None:
    plot.clear()
    if not view.calls:
        note(plot, "No rent yet.")
        return
    plot.plot(view.calls, view.rent, pen=pg.mkPen(theme.SERIES[5], width=2))
    _marks(plot, view, labels=False)
    plot.enableAutoRange()


def draw_bars(plot: pg.PlotWidget, view: ChannelView) -> None:
    plot.clear()
    if not view.xs or not any(view.heights):
        note(plot, view.empty, view.span)  # the date axis still names the period's days
        return
    brush = theme.SERIES[0] if view.label == "measured" else theme.SERIES[6]
    bars = pg.BarGraphItem(x=view.xs, height=view.heights, width=view.width_s * 0.8, brush=brush,
                           pen=pg.mkPen(theme.colours()["muted"]))
    plot.addItem(bars)
    plot.setXRange(*view.span, padding=0)
    top = max(view.heights) if view.heights else 0
    plot.setYRange(0, top * 1.1 if top > 0 else 1, padding=0)


def draw_stacks(plot: pg.PlotWidget, days: list[str], layers: list[tuple[str, list[float]]]) -> None:
    """Stacked daily bars (x = day index, labelled by the bottom axis), a legend entry per layer."""
    plot.clear()
    legend = plot.getPlotItem().legend
    if legend is not None:
        legend.clear()
        legend.setColumnCount(max(1, len(layers)))  # one row across the top, clear of the bars
    axis = plot.getAxis("bottom")
    if isinstance(axis, UnitAxis):
        axis.day_labels = [fmt.day(d) for d in days]
    span = (-0.6, len(days) - 0.4) if days else (0.0, 1.0)  # the period's days, spent in or not
    if not days or not layers or not any(any(v for v in vals) for _, vals in layers):
        note(plot, "Nothing spent in this period.", span)
        return
    base = [0.0] * len(days)
    xs = list(range(len(days)))
    for i, (name, values) in enumerate(layers):
        colour = theme.SERIES[i % len(theme.SERIES)]
        bars = pg.BarGraphItem(x=xs, y0=list(base), height=values, width=0.7, brush=colour, pen=pg.mkPen(None),
                               name=name)
        plot.addItem(bars)  # a named item joins the legend by itself
        base = [b + v for b, v in zip(base, values)]
    plot.setXRange(*span, padding=0)
    top = max(base) if base else 0
    plot.setYRange(0, top * 1.3 if top > 0 else 1, padding=0)  # headroom for the legend's row
