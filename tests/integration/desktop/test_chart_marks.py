"""The Session tab's marks on a real history's shape: a notice just before "you are here" and a compaction among
the restarts' worth of rent. The newcomer look on real transcripts found "notice" under "you are here" and a lap's
number under "compacted"; the charts name each stretch's notice, and no count of the rent's laps."""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from desktop.present.curve import CurveView, SeriesView
from desktop.widgets.charts import draw_curve, draw_stock
from tests.support.layout import chart_overlaps


def _curve() -> CurveView:
    us = [0.1 + i * 0.03 for i in range(105)]
    ys = [1 + (u - 1) ** 2 / (4 * u) for u in us]
    return CurveView(us=us, ys=ys, bands=[(0.0, 0.35, "white"), (0.35, 1.65, "green"), (1.65, 2.65, "amber"),
                                          (2.65, 3.2, "red")],
                     point=(0.66, 1 + 0.34 ** 2 / 2.64), u_max=3.2,
                     reminders=[(0.6, 1 + 0.4 ** 2 / 2.4, 1)])


def _series() -> SeriesView:
    calls = [float(c) for c in range(1, 151)]
    stock = [20_000.0 + 1_000 * c if c < 100 else 40_000.0 + 900 * (c - 100) for c in calls]
    return SeriesView(calls=calls, total_stock=stock, L=stock, B=[40_000.0] * len(calls),
                      rent=[0.0] * len(calls),
                      reminder_calls=[(27.0, 1), (45.0, 2), (60.0, 3), (75.0, 4), (97.0, 5), (130.0, 1)],
                      reset_calls=[100.0])


def test_the_charts_name_the_notices_and_nothing_overlaps(qtbot):
    top = QWidget()
    box = QVBoxLayout(top)
    curve, stock = pg.PlotWidget(), pg.PlotWidget()
    box.addWidget(curve)
    box.addWidget(stock)
    qtbot.addWidget(top)
    top.resize(600, 520)  # about the Session tab's lower charts at the window's default size
    top.show()
    draw_curve(curve, _curve())
    draw_stock(stock, _series())
    qtbot.wait(50)
    assert chart_overlaps(top) == []
    words = [i.textItem.toPlainText() for plot in (curve, stock) for i in plot.getPlotItem().getViewBox()
             .allChildren() if isinstance(i, pg.TextItem) and i.isVisible() and i.textItem.toPlainText()]
    assert "you are here" in words and words.count("notice") == 2  # the curve's is left out beside the point
    assert not [w for w in words if w.strip().isdigit()], words  # no count of the rent's laps
    assert "compacted" in words and math.isfinite(curve.getPlotItem().viewRange()[0][1])
