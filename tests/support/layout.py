"""What a user reads on a rendered window: every text item that is cut or lies over another, and every
legend that lies over a line of data.

The window is shown offscreen at a given size; the checks walk the widgets a user
sees on the current tab:
- a label, button or check box whose text needs more room than it has (Qt cuts it);
- two visible labels whose rectangles overlap;
- a table cell or header whose text is wider than its column (Qt elides it with
  "..."), or a table wider than its view (the last columns are cut off);
- a row of a short list (three rows or fewer) that does not show whole;
- in a chart: two tick labels of an axis, or of the two axes, that overlap; two
  text items in the plot (band names, reminder marks, notes) that overlap; a
  legend that covers a point of a drawn line.
"""
from __future__ import annotations

import itertools

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRect, QRectF
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton, QAbstractItemView, QLabel, QListView, QTableView, QTableWidget, QWidget,
)

SLACK = 1  # pixels of rounding


def _global(w: QWidget, top: QWidget) -> QRect:
    """The part of `w` a user can see, in `top`'s coordinates: clipped by every parent (a scroll area's
    viewport hides what is scrolled away)."""
    rect = QRect(w.mapTo(top, w.rect().topLeft()), w.size())
    parent = w.parentWidget()
    while parent is not None and parent is not top:
        rect = rect.intersected(QRect(parent.mapTo(top, parent.rect().topLeft()), parent.size()))
        parent = parent.parentWidget()
    return rect.intersected(top.rect())


def _shown(w: QWidget, top: QWidget) -> bool:
    return w.isVisibleTo(top) and w.width() > 0 and w.height() > 0 and not _global(w, top).isEmpty()


def _label_need(label: QLabel) -> tuple[int, int]:
    """The width and height the label's text needs at the label's width."""
    text = label.text()
    if label.buddy() is not None or "&" in text and label.textFormat() != label.textFormat().RichText:
        text = text.replace("&&", "\0").replace("&", "").replace("\0", "&")  # a mnemonic's & is not drawn
    if label.wordWrap():
        return 0, label.heightForWidth(label.width())
    if label.textFormat() == label.textFormat().PlainText or not ("<" in text and ">" in text):
        fm = QFontMetrics(label.font())
        lines = text.splitlines() or [""]
        return max(fm.horizontalAdvance(line) for line in lines), fm.lineSpacing() * len(lines)
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    doc.setDocumentMargin(0)
    doc.setHtml(text)
    size = doc.size()
    return int(size.width()), int(size.height())


def cut_or_overlapping_labels(top: QWidget) -> list[str]:
    problems = []
    labels = [w for w in top.findChildren(QLabel) if w.text().strip() and _shown(w, top)]
    for label in labels:
        need_w, need_h = _label_need(label)
        room = label.contentsRect()
        if need_w > room.width() + SLACK or need_h > room.height() + SLACK:
            problems.append(f"label cut: {label.text()[:60]!r} needs {need_w}x{need_h}, has "
                            f"{room.width()}x{room.height()}")
    for button in top.findChildren(QAbstractButton):
        if button.text().strip() and _shown(button, top) and button.sizeHint().width() > button.width() + SLACK:
            problems.append(f"button cut: {button.text()!r} needs {button.sizeHint().width()}, has {button.width()}")
    for a, b in itertools.combinations(labels, 2):
        if a.isAncestorOf(b) or b.isAncestorOf(a):
            continue
        if _global(a, top).intersects(_global(b, top)):
            problems.append(f"labels overlap: {a.text()[:40]!r} and {b.text()[:40]!r}")
    return problems


def cut_table_cells(top: QWidget) -> list[str]:
    problems = []
    for view in top.findChildren(QAbstractItemView):
        if not isinstance(view, (QTableView, QTableWidget)) or not _shown(view, top):
            continue
        model = view.model()
        if model is None or model.rowCount() == 0:
            continue
        header = view.horizontalHeader()
        if header.length() > view.viewport().width() + SLACK:
            problems.append(f"table wider than its view: {header.length()} > {view.viewport().width()}")
        hfm = QFontMetrics(header.font())
        header_margin = view.style().pixelMetric(view.style().PixelMetric.PM_HeaderMargin, None, header)
        for col in range(model.columnCount()):
            if view.isColumnHidden(col):
                continue
            width = view.columnWidth(col)
            title = str(model.headerData(col, header.orientation()) or "")
            if max(hfm.horizontalAdvance(line) for line in title.splitlines() or [""]) + 2 * header_margin \
                    > width + SLACK:
                problems.append(f"header cut: {title!r} in {width}px")
            if view.sizeHintForColumn(col) > width + SLACK:  # what resizing to the contents would give it
                problems.append(f"cells cut in column {title!r}: need {view.sizeHintForColumn(col)}px, have {width}")
    return problems


def cut_list_rows(top: QWidget, whole: int = 3) -> list[str]:
    """A list of up to `whole` rows shows each row whole (a longer one may scroll)."""
    problems = []
    for view in top.findChildren(QListView):
        if not _shown(view, top) or view.model() is None or not 0 < view.model().rowCount() <= whole:
            continue
        room = view.viewport().rect()
        for row in range(view.model().rowCount()):
            rect = view.visualRect(view.model().index(row, 0))
            if not room.contains(rect):
                problems.append(f"list row cut: {view.model().index(row, 0).data()!r}")
    return problems


def _axis_texts(axis: pg.AxisItem) -> list[tuple[QRectF, str]]:
    """The axis's tick labels, as drawn, in scene coordinates."""
    from PySide6.QtGui import QImage, QPainter

    img = QImage(1, 1, QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if not specs:
        return []
    return [(axis.mapRectToScene(QRectF(rect)), text) for rect, _flags, text in specs[2]]


def chart_overlaps(top: QWidget) -> list[str]:
    problems = []
    for plot in top.findChildren(pg.PlotWidget):
        if not _shown(plot, top):
            continue
        item = plot.getPlotItem()
        title = item.titleLabel.text or "a chart"
        if item.titleLabel.isVisible() and item.titleLabel.item.boundingRect().width() > plot.width():
            problems.append(f"chart title cut: {title[:60]!r} needs {item.titleLabel.item.boundingRect().width():.0f}"
                            f"px, has {plot.width()}")
        texts = []
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            if axis.isVisible():
                texts += [(r, t, name) for r, t in _axis_texts(axis)]
        for (ra, ta, na), (rb, tb, nb) in itertools.combinations(texts, 2):
            if ra.intersects(rb):
                problems.append(f"{title}: ticks {ta!r} ({na}) and {tb!r} ({nb}) overlap")
        vb = item.getViewBox()
        marks = [i for i in vb.allChildren() if isinstance(i, pg.TextItem) and i.isVisible() and i.textItem.toPlainText()]
        for a, b in itertools.combinations(marks, 2):
            if a.sceneBoundingRect().intersects(b.sceneBoundingRect()):
                problems.append(f"{title}: {a.textItem.toPlainText()!r} over {b.textItem.toPlainText()!r}")
        legend = item.legend
        if legend is not None and legend.isVisible() and legend.items:
            box = legend.sceneBoundingRect()
            for data in item.listDataItems():
                xs, ys = data.getData()
                if xs is None:
                    continue
                for x, y in zip(xs, ys):
                    if box.contains(vb.mapViewToScene(QPointF(float(x), float(y)))):
                        problems.append(f"{title}: the legend covers {data.name() or 'a line'} at x={x:g}")
                        break
    return problems


def layout_problems(top: QWidget) -> list[str]:
    """Everything cut or overlapping on what `top` shows now."""
    return cut_or_overlapping_labels(top) + cut_table_cells(top) + cut_list_rows(top) + chart_overlaps(top)


def window_problems(win) -> dict[str, list[str]]:
    """layout_problems of every tab of a shown MainWindow, by tab name (empty when all is well)."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from desktop.window import TAB_NAMES

    problems = {}
    for i, name in enumerate(TAB_NAMES):
        win.tabs.setCurrentIndex(i)
        for _ in range(3):
            QApplication.processEvents()
            QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)  # labels a redraw replaced
        found = layout_problems(win.tabs.currentWidget())
        if found:
            problems[name] = found
    return problems
