"""The window at its default size and larger, with the demo's data: no text over text, no cut text, no
legend over data, on every tab (tests/support/layout.py says what is checked)."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from desktop.datasource import DemoSource  # noqa: E402
from desktop.window import TAB_NAMES, MainWindow  # noqa: E402
from tests.support.layout import layout_problems  # noqa: E402


@pytest.fixture(autouse=True)
def private_dirs(ctx_home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return ctx_home


@pytest.mark.parametrize("size", [(1100, 760), (1400, 900)])
def test_every_tab_of_the_demo_has_no_cut_or_overlapping_text(qtbot, size):
    win = MainWindow(DemoSource())
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    win.load_all()
    problems = {}
    for i, name in enumerate(TAB_NAMES):
        win.tabs.setCurrentIndex(i)
        for _ in range(3):
            QApplication.processEvents()
            QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)  # labels a redraw replaced
        found = layout_problems(win.tabs.currentWidget())
        if found:
            problems[name] = found
    assert problems == {}, "\n".join(f"{k}: {p}" for k, v in problems.items() for p in v)
