"""While `make run` plays the demo, the Settings tab says the settings are the demo's (issue 51):
saved by the demo's own service, gone when the demo ends, the user's own untouched."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from tests.support.harness import service_env
from tests.support.servicectl import running_service


def test_the_settings_tab_says_whose_settings_it_edits_while_the_demo_plays(tmp_path, qtbot, monkeypatch):
    from desktop.connection.datasource import ApiSource
    from desktop.tabs.settings import SettingsTab

    demo = tmp_path / "data" / "demo"  # the layout `ctxlamp start` gives the demo (service/client/running.py)
    home, claude = demo / "ctxlamp", demo / "claude"
    (claude / "projects").mkdir(parents=True)
    home.mkdir()
    env = service_env(home, claude)
    monkeypatch.setenv("CTXLAMP_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    with running_service(env, home):
        tab = SettingsTab(ApiSource())
        qtbot.addWidget(tab)
        tab.reload()
        assert "demo's settings" in tab.form.parentWidget().title()
        assert "gone when the demo ends" in tab.status.text() and "not changed" in tab.status.text()
        tab.rows["engine.eps_crit"].set_value(0.25)
        assert tab.validate() and "for the demo only" in tab.status.text()
        assert tab.save(), tab.status.text()
        assert "Saved for the demo" in tab.status.text() and "unchanged" in tab.status.text()
        assert ApiSource().config()["engine"]["eps_crit"] == 0.25


def test_outside_the_demo_the_tab_speaks_of_the_user_s_own_settings(ctx_home, qtbot):
    from desktop.tabs.settings import SettingsTab
    from service.client.running import plays_demo

    class Offline:
        live = True

    assert not plays_demo()
    tab = SettingsTab(Offline())
    qtbot.addWidget(tab)
    assert "demo" not in tab.form.parentWidget().title() and "demo" not in tab._resting_text()
