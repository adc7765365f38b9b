"""pyqtgraph plots for the window (Qt Charts is deprecated since Qt 6.10).

Each function takes a view from desktop.viewmodel and redraws one plot; empty
views give an empty plot with a note, never an exception.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt

from desktop.viewmodel import BAND_RGBA, LAMP_FILL, ChannelView, CurveView, SeriesView

pg.setConfigOptions(antialias=True, background="w", foreground="#222")

PEN_STOCK = pg.mkPen("#1f5fbf", width=2)
PEN_L = pg.mkPen("#7a7a7a", width=1.5, style=Qt.DashLine)
PEN_B = pg.mkPen("#2fa34a", width=2)
PEN_RENT = pg.mkPen("#c0392b", width=2)
PEN_REMINDER = pg.mkPen("#e69500", width=1, style=Qt.DashLine)
PEN_RESET = pg.mkPen("#444", width=1.5)
PEN_REWIND = pg.mkPen("#7b3fa0", width=1.5, style=Qt.DashDotLine)


def new_plot(title: str, left: str, bottom: str, date_axis: bool = False, legend: bool = False) -> pg.PlotWidget:
    axis = {"bottom": pg.DateAxisItem(orientation="bottom")} if date_axis else None
    w = pg.PlotWidget(axisItems=axis)
    w.setTitle(title, size="10pt")
    w.setLabel("left", left)
    if left in ("USD", "tokens"):
        w.getAxis("left").enableAutoSIPrefix(False)
    w.setLabel("bottom", bottom)
    w.showGrid(x=True, y=True, alpha=0.15)
    w.setMenuEnabled(False)
    w.getPlotItem().getViewBox().setMouseEnabled(x=True, y=False)
    if legend:
        w.addLegend(offset=(8, 8), labelTextSize="8pt", brush=pg.mkBrush(255, 255, 255, 200))
    return w


def _note(plot: pg.PlotWidget, text: str) -> None:
    item = pg.TextItem(text, color="#555", anchor=(0.5, 0.5))
    plot.addItem(item)
    item.setPos(0.5, 0.5)
    plot.setXRange(0, 1)
    plot.setYRange(0, 1)


def draw_curve(plot: pg.PlotWidget, view: CurveView) -> None:
    plot.clear()
    if not view.us:
        _note(plot, view.note or "No cost curve yet.")
        return
    finite = [y for y in view.ys if math.isfinite(y)]
    y_top = min(max(finite) if finite else 2.0, 2.0)
    y_top = max(y_top, 1.35)
    for u0, u1, colour in view.bands:
        region = pg.LinearRegionItem(values=(u0, u1), movable=False, brush=pg.mkBrush(*BAND_RGBA[colour]),
                                     pen=pg.mkPen(None))
        region.setZValue(-10)
        plot.addItem(region)
        label = pg.TextItem({"white": "fresh", "green": "good", "amber": "amber", "red": "restart"}[colour],
                            color="#444", anchor=(0.5, 0.5))
        plot.addItem(label)
        label.setPos((u0 + u1) / 2, y_top * 1.07)  # a strip above the curve, clear of the point
    plot.plot(view.us, view.ys, pen=pg.mkPen("#222", width=2), name="A(u)/A*")
    plot.addItem(pg.InfiniteLine(pos=1.0, angle=90, pen=pg.mkPen("#2fa34a", width=1, style=Qt.DotLine),
                                 label="sweet spot", labelOpts={"position": 0.12, "color": "#2a7a3a"}))
    if view.point is not None and math.isfinite(view.point[1]):
        u, a = view.point
        colour = next((c for u0, u1, c in view.bands if u0 <= u < u1), "red" if view.bands else "white")
        shown_a = min(a, y_top * 0.99)  # a fresh session sits far up the left arm: pin it to the top edge
        plot.plot([u], [shown_a], pen=None, symbol="o" if shown_a == a else "t1", symbolSize=14,
                  symbolBrush=LAMP_FILL[colour], symbolPen=pg.mkPen("#111", width=2))
        text = f"now: u = {u:.2f}" + ("" if shown_a == a else f", A/A* = {a:.1f}")
        txt = pg.TextItem(text, color="#111", anchor=(0, 1) if shown_a == a else (0, 0.5),
                          fill=pg.mkBrush(255, 255, 255, 210))
        plot.addItem(txt)
        txt.setPos(u + 0.03, shown_a)
    plot.setXRange(0, max(view.u_max, (view.point or (0,))[0] * 1.05), padding=0.02)
    plot.setYRange(0.95, y_top * 1.12, padding=0)


def _marks(plot: pg.PlotWidget, view: SeriesView, labels: bool) -> None:
    for call in view.reset_calls:
        plot.addItem(pg.InfiniteLine(pos=call, angle=90, pen=PEN_RESET,
                                     label="reset" if labels else None,
                                     labelOpts={"position": 0.97, "color": "#333"}))
    many = len(view.reminder_calls) > 12
    for call, lap in view.reminder_calls:
        show = labels and (not many or lap % 5 == 0 or lap == 1)
        plot.addItem(pg.InfiniteLine(pos=call, angle=90, pen=PEN_REMINDER,
                                     label=f"lap {lap}" if show else None,
                                     labelOpts={"position": 0.78, "color": "#b36b00"}))


def draw_stock(plot: pg.PlotWidget, view: SeriesView) -> None:
    plot.clear()
    if not view.calls:
        _note(plot, "No calls yet.")
        return
    plot.plot(view.calls, view.total_stock, pen=PEN_STOCK, name="totalStock")
    plot.plot(view.calls, view.L, pen=PEN_L, name="L (cached)")
    plot.plot(view.calls, view.B, pen=PEN_B, name="B (useful)")
    _marks(plot, view, labels=True)
    for call in view.rewind_calls:  # the conversation went back: what it left behind left B
        plot.addItem(pg.InfiniteLine(pos=call, angle=90, pen=PEN_REWIND, label="rewind",
                                     labelOpts={"position": 0.88, "color": "#7b3fa0"}))
    plot.enableAutoRange()


def draw_rent(plot: pg.PlotWidget, view: SeriesView) -> None:
    plot.clear()
    if not view.calls:
        _note(plot, "No rent yet.")
        return
    plot.plot(view.calls, view.rent, pen=PEN_RENT, name="rent (bill cycle, USD)")
    _marks(plot, view, labels=False)
    plot.enableAutoRange()


def draw_bars(plot: pg.PlotWidget, view: ChannelView) -> None:
    plot.clear()
    if not view.xs:
        _note(plot, "No data for this channel yet.")
        return
    brush = "#3b7dd8" if view.label == "measured" else "#9aa7b8"
    bars = pg.BarGraphItem(x=view.xs, height=view.heights, width=view.width_s * 0.8, brush=brush,
                           pen=pg.mkPen("#234"))
    plot.addItem(bars)
    plot.setXRange(min(view.xs) - view.width_s, max(view.xs) + view.width_s, padding=0)
    top = max(view.heights) if view.heights else 0
    plot.setYRange(0, top * 1.1 if top > 0 else 1, padding=0)
