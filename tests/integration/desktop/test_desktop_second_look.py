"""What a newcomer saw in the window (issue 51): the Edits bars count what the table counts, a channel's
chart ends with its period and names it, a settings message does not push the rows down, and a notice
goes when its lamp moves on."""
from __future__ import annotations

import json
import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from desktop.present.channel import channel_view
from tests.support.corpus import ROOT

DEMO = json.loads((ROOT / "resources" / "demo" / "channels.json").read_text())


def test_the_edits_bars_add_up_to_the_table_s_replace_edits():
    view = channel_view(DEMO["edit"])
    assert view.counter == "kind:str_replace"
    replace_edits = dict(view.totals)["Replace edits"]
    assert int(replace_edits.replace(",", "")) == round(sum(view.heights)) > 0


def test_a_channel_chart_ends_with_its_period_and_names_it():
    view = channel_view(DEMO["edit"])
    last_bucket_end = max(view.xs) + view.width_s / 2
    assert view.span[1] == last_bucket_end
    assert "–" in view.period and "Nov" in view.period
    now = time.time()
    tomorrow = {**DEMO["edit"], "until": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 86400)),
                "buckets": [*DEMO["edit"]["buckets"], {"start": time.strftime("%Y-%m-%dT00:00:00Z",
                                                                              time.gmtime(now + 86400)),
                                                       "events": 0}]}
    ahead = channel_view(tomorrow)
    assert ahead.span[1] <= now + 86400 and all(x < now for x in ahead.xs)  # no bucket not begun yet


def test_the_totals_table_names_the_period(qtbot):
    from desktop.tabs.channel import ChannelTab

    class Demo:
        def channel(self, name, bucket):
            return DEMO[name]

    tab = ChannelTab("edit", Demo())
    qtbot.addWidget(tab)
    tab.reload()
    head = tab.totals.horizontalHeaderItem(0).text()
    assert head.startswith("Over ") and "shown period" not in head and "Nov" in head
    assert tab.counter.currentData() == "kind:str_replace"


def test_a_settings_message_does_not_push_the_rows_below_it_down(qtbot):
    from desktop.present import settings as sm
    from desktop.tabs.settings import FieldRow

    row = FieldRow(next(f for f in sm.FIELDS if f.key == "engine.eps_crit"))
    qtbot.addWidget(row)
    row.resize(700, row.sizeHint().height())
    row.show()
    before = row.sizeHint().height()
    row.set_error("Red starts at must be above amber")
    assert row.sizeHint().height() == before
    row.set_error(None)
    assert row.sizeHint().height() == before


def _snap(colour, laps=1):
    return {"session_id": "s1", "project": "/home/u/proj", "lamp": {"state": "good", "colour": colour},
            "x": 1.5, "xSweet": 2.0, "dhat": 4.0, "bill_cycle_usd": 0.4, "br": 0.5, "laps": laps,
            "updated_at": "2026-01-01T10:00:00Z"}


def test_a_green_notice_goes_when_the_lamp_turns_amber(tray, qtbot):
    tray.on_snapshot(_snap("green"))
    tray.on_reminder({"session_id": "s1", "segment": 0, "lap": 1, "call": 10, "at": "2026-01-01T10:00:00Z",
                      "restart_usd": 0.4, "payback_calls": 3.0, "rent_usd": 0.4}, now=1000.0)
    assert tray.popup is not None and tray.popup.isVisible()
    tray.on_snapshot(_snap("green", laps=2))
    assert tray.popup.isVisible()  # the same lamp: the notice stays
    tray.on_snapshot(_snap("amber", laps=3))
    assert not tray.popup.isVisible()


def test_the_cost_curve_names_its_zones_by_where_they_lie():
    from desktop.widgets.charts import BAND_WORDS

    assert BAND_WORDS["amber"] != "past the sweet spot" and "sweet spot" in BAND_WORDS["green"]
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    assert all(f"**{words}**" in glossary for words in BAND_WORDS.values())
