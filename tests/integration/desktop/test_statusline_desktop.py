"""Plan limits in the tray and the window (issue 16): words, notices once per window, the idle-cache
notice, the Session tab's usage plot and per-turn table. Qt offscreen."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from tests.support.limits import limits  # noqa: E402


def test_tray_tooltip_menu_and_notices(tray):
    said = []
    tray._notify = lambda title, body, quiet=False: said.append((title, body))
    snap = {"session_id": "s1", "project": "/p", "lamp": {"state": "good", "colour": "green"}}
    tray.set_status({"sessions": [snap], "followed": "s1", "service": {}, "limits": limits(five=83)})
    assert "5h 83%" in tray.tray.toolTip() and "week 12%" in tray.tray.toolTip()
    tray.update_menu()
    assert tray.limits_action.isVisible() and tray.limits_action.text().startswith("Plan: 5h 83%")
    assert len(said) == 1 and "83%" in said[0][0]
    tray.on_limits(limits(five=84))
    assert len(said) == 1


def test_session_tab_panel_draws_usage_and_turns(qtbot):
    from desktop.tabs.limits import LimitsPanel

    panel = LimitsPanel()
    qtbot.addWidget(panel)
    assert "none seen yet" in panel.note.text()
    (lo, hi), (bottom, top) = panel.plot.getPlotItem().getViewBox().viewRange()
    assert hi - lo == 5 * 3600 and hi > 1.7e9 and (bottom, top) == (0, 100)  # the last hours, not 1970's
    data = {"limits": limits(), "account": [],
            "session": {"readings": [{"at": "2026-11-30T10:00:00Z", "five_hour": 10, "seven_day": 3},
                                     {"at": "2026-11-30T10:05:00Z", "five_hour": 12.5, "seven_day": 3}],
                        "turns": [{"turn": 2, "turns": 1, "before_pct": 10, "after_pct": 12.5, "delta_pct": 2.5,
                                   "cost_usd": 0.5, "label": "measured"}]}}
    panel.show_limits(data)
    assert "5h 37%" in panel.note.text()
    assert panel.table.rowCount() == 1 and panel.table.item(0, 3).text() == "2.50%"
    assert len(panel.plot.getPlotItem().listDataItems()) == 2
