"""The Session tab shows Claude Code's own moves (issue 47): a session's compactions by who started them, and
the cache misses its status line counted, by cause (pytest-qt, offscreen)."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from desktop.tabs.limits import LimitsPanel  # noqa: E402
from desktop.tabs.session import SessionTab  # noqa: E402
from service.client.figures import usd  # noqa: E402


def fact_texts(tab: SessionTab) -> list[str]:
    items = [tab.facts.itemAt(i).widget() for i in range(tab.facts.count())]
    return [w.text() for w in items]


def test_a_live_sessions_compactions_and_an_ended_ones(qtbot):
    tab = SessionTab()
    qtbot.addWidget(tab)
    tab.show_snapshot({"session_id": "s", "project": "/home/u/p", "totalStock": 90_000, "B_default": 20_000,
                       "lamp": {"state": "good", "colour": "green"}, "compactions": {"manual": 1, "auto": 0,
                                                                                     "idle": 2}})
    texts = fact_texts(tab)
    assert "Compactions" in texts and "<b>1 by you, 2 while you were idle</b>" in texts
    tab.show_ended({"project": "/home/u/p", "usd": 1.0, "calls": 3, "compactions": {"manual": 0, "auto": 1,
                                                                                    "idle": 0}}, [])
    assert "<b>1 automatic</b>" in fact_texts(tab)
    tab.show_ended({"project": "/home/u/p", "usd": 1.0, "calls": 3}, [])
    assert "Compactions" not in fact_texts(tab)


def test_the_sessions_cache_misses_by_cause(qtbot):
    panel = LimitsPanel()
    qtbot.addWidget(panel)
    panel.show_limits({"session": {"cache_misses": {"misses": 3, "miss_causes": {"ttl_expired_5m": 2,
                                                                                 "model_changed": 1},
                                                    "rewrote_usd": 1.2}}})
    assert panel.note.text().endswith(
        f"3 cache misses: 2 after a break past 5 minutes, 1 model switch; they rewrote {usd(1.2)}.")
    panel.show_limits({"session": {}})
    assert "cache miss" not in panel.note.text()
