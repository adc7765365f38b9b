"""The window with sync on (pytest-qt, offscreen): the Overview lists the devices of the sync folder with
what each spent, from a real service; Settings turns sync on and syncs now, through the API only."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from desktop.connection.datasource import ApiSource  # noqa: E402
from desktop.present import fmt  # noqa: E402
from desktop.present import overview as om  # noqa: E402
from tests.support.corpus import ROOT, copy_fixtures  # noqa: E402
from tests.support.layout import layout_problems  # noqa: E402
from tests.support.servicectl import running_service  # noqa: E402

LAPTOP = ("94d43126-6140-498c-a6f6-39f68241e74d", "b6776253-f37c-4eb5-ad4d-74e2851adb30")


def cli(env: dict, *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_overview_shows_the_devices_and_settings_syncs(qtbot, tmp_path):
    from desktop.tabs.overview import OverviewTab
    from desktop.tabs.settings import SettingsTab
    from service.client.api import ApiClient

    every = copy_fixtures(tmp_path / "every")
    folder = tmp_path / "iCloud" / "ctxlamp"
    folder.mkdir(parents=True)
    desktop = {**os.environ, "CTXLAMP_HOME": str(tmp_path / "desktop"), "CLAUDE_CONFIG_DIR": str(every),
               "HOME": str(tmp_path / "du")}
    cli(desktop, "sync", "--name", "desktop")
    cli(desktop, "sync", "--folder", str(folder))
    claude = tmp_path / "laptop-claude"
    src = next((every / "projects").iterdir())
    (claude / "projects" / src.name).mkdir(parents=True)
    for sid in LAPTOP:
        (claude / "projects" / src.name / f"{sid}.jsonl").write_bytes((src / f"{sid}.jsonl").read_bytes())
    home = tmp_path / "laptop"
    home.mkdir()
    laptop = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude), "HOME": str(tmp_path / "lu")}
    with running_service(laptop, home, timeout=120) as (_proc, info):
        source = ApiSource(ApiClient(info, timeout=120))
        settings = SettingsTab(source)
        qtbot.addWidget(settings)
        settings.reload()
        settings.rows["sync.folder"].set_value(str(folder))
        settings.rows["sync.name"].set_value("laptop")
        qtbot.waitUntil(lambda: settings.save_button.isEnabled(), timeout=10_000)
        settings.save()
        assert source.config()["sync"]["folder"] == str(folder)
        settings.sync_now()
        qtbot.waitUntil(lambda: settings.sync_button.isEnabled(), timeout=120_000)
        assert "2 devices" in settings.sync_status.text(), settings.sync_status.text()

        (folder / "ctxlamp-device-0123 (desktop's conflicted copy 2026-12-02).json").write_text("{}")
        tab = OverviewTab(source)
        qtbot.addWidget(tab)
        tab.days = 30
        tab.resize(1100, 700)  # the window's default size, less its tab bar
        tab.show()
        tab.reload()
        qtbot.wait(50)
        assert layout_problems(tab) == []  # the devices' table cuts no text and covers nothing
        assert tab.devices_box.isVisibleTo(tab) and tab.all_devices.isVisibleTo(tab)
        shown = [[tab.devices.item(r, c).text() for c in range(4)] for r in range(tab.devices.rowCount())]
        every_doc = tab.doc
        tab.all_devices.setChecked(False)  # this computer's own figures
        own_doc = tab.doc
    # what each device spent, as `ctxlamp report --json` over every device says it (fixtures: all within 30 days)
    report = json.loads(cli(laptop, "report", "--json", "--no-service"))
    want = {d["name"] + (" (this device)" if d["this"] else ""): d for d in report["devices"]}
    assert [row[0] for row in shown] == ["laptop (this device)", "desktop"]
    for name, spent, calls, _seen in shown:
        assert spent == fmt.usd(want[name]["total_usd"]) and calls == fmt.count(want[name]["calls"])
    assert "Dropbox" in tab.devices_note.text() and "conflicted copy" in tab.devices_note.text()
    assert Path(report["sync"]["skipped"][0]["file"]).name.startswith("ctxlamp-device-0123")
    # the headline and the bars follow the choice: every device's sum, or this computer's own
    mine = json.loads(cli(laptop, "report", "--json", "--no-service", "--device", "this"))
    assert every_doc["spend"]["billed_usd"] == pytest.approx(report["spend"]["billed"]["usd"], abs=1e-8)
    assert own_doc["spend"]["billed_usd"] == pytest.approx(mine["spend"]["billed"]["usd"], abs=1e-8)
    assert own_doc["spend"]["billed_usd"] < every_doc["spend"]["billed_usd"]
    bars = om.daily_stacks(every_doc, "model")
    assert sum(bars.totals) == pytest.approx(report["spend"]["billed"]["usd"], abs=1e-8)
    for day, usd in report["spend"]["by_day"].items():
        assert sum(every_doc["spend"]["by_day_model"][day].values()) == pytest.approx(usd, abs=1e-8)
        assert sum(every_doc["spend"]["by_day_project"][day].values()) == pytest.approx(usd, abs=1e-8)
    assert om.spend_figures(every_doc)[0].value == fmt.usd(report["spend"]["billed"]["usd"])
    assert every_doc["rent"]["rent_usd"] > own_doc["rent"]["rent_usd"]
