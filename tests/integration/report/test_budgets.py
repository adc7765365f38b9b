"""Issue 26, budgets: a daily and a monthly USD budget (ranged settings), what was billed against them in
the status, the Overview and the tray, and a notice at the configured share and at 100 %, once per period."""
from __future__ import annotations

import json
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from service.config import DEFAULTS, ConfigError, merge
from service.report import budgets
from tests.support import transcripts as T
from tests.support.harness import service_env

CFG = {"budgets": {"daily_usd": 20.0, "monthly_usd": 300.0, "notice_pct": 80.0}}
TODAY = date(2026, 11, 29)


def block(today_usd: float, month_usd: float, today: date = TODAY) -> dict:
    by_day = {today.isoformat(): today_usd, (today.replace(day=1)).isoformat(): month_usd - today_usd,
              "2026-10-31": 999.0}  # last month: not this month's
    return budgets.view(CFG, by_day, today, "Europe/Berlin")


def test_the_block_sums_today_and_this_month():
    b = block(5.0, 120.0)
    assert b["daily"] == {"period": "2026-11-29", "budget_usd": 20.0, "spent_usd": 5.0, "share": 0.25}
    assert b["monthly"]["period"] == "2026-11" and b["monthly"]["spent_usd"] == pytest.approx(120.0)
    assert b["timezone"] == "Europe/Berlin" and b["notice_pct"] == 80.0
    assert budgets.view({"budgets": {"daily_usd": 0}}, {}, TODAY, "UTC")["daily"] is None  # 0: no budget


def test_notices_at_the_share_and_at_100_once_per_period():
    sent: set[str] = set()
    notices, given = budgets.due(block(10.0, 100.0), sent)
    assert notices == [] and given == set()
    notices, given = budgets.due(block(16.0, 100.0), sent)  # 80 % of the day
    assert [n["title"] for n in notices] == ["ctxlamp: 80 % of the daily budget"]
    assert notices[0]["body"] == "Billed today: $16.00 of your $20.00 daily budget (80 %)."
    sent |= given
    assert budgets.due(block(17.0, 100.0), sent)[0] == []  # once
    notices, given = budgets.due(block(21.0, 100.0), sent)
    assert [n["title"] for n in notices] == ["ctxlamp: daily budget spent"]
    sent |= given
    # the next day starts afresh; the month passes both thresholds at once: one notice, the higher
    notices, given = budgets.due(block(1.0, 310.0, TODAY + timedelta(days=1)), sent)
    assert [n["title"] for n in notices] == ["ctxlamp: monthly budget spent"]
    assert budgets.current_keys(block(1.0, 310.0, TODAY + timedelta(days=1)), sent | given) == {
        "monthly:2026-11:80", "monthly:2026-11:100"}  # yesterday's keys can never come again: dropped


def test_budgets_are_ranged_settings():
    assert merge(DEFAULTS, CFG)["budgets"]["daily_usd"] == 20.0
    for bad in ({"daily_usd": -1}, {"monthly_usd": 2_000_000}, {"notice_pct": 0}, {"notice_pct": 101},
                {"daily_usd": "20"}):
        with pytest.raises(ConfigError):
            merge(DEFAULTS, {"budgets": bad})


def test_meters_and_tray_text():
    from desktop.present.overview import budget_meters, budgets_text

    status = {"budgets": block(16.0, 120.0)}
    meters = budget_meters(status)
    assert [m.name for m in meters] == ["Daily budget", "Monthly budget"]
    assert meters[0].percent == 80.0 and meters[0].text == "$16.00 of $20.00 today (80 %)"
    assert budgets_text(status["budgets"]) == "Budget today $16.00 of $20.00 (80 %); month $120 of $300 (40 %)"
    assert budget_meters({"budgets": None}) == [] and budgets_text(None) is None


def test_the_service_watches_the_budget_and_gives_each_notice_once(tmp_path):
    """A real `ctxlamp serve`: billed today against a $0.01 daily budget, in the status; its notice is kept
    given across a restart (the file in the data dir)."""
    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    home, claude = tmp_path / "ctx", tmp_path / "claude"
    folder = claude / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    home.mkdir()
    now = datetime.now(UTC) - timedelta(minutes=5)
    entries = [T.prompt("go", 0), T.call("m1", 10, cw5=20_000, cr=10_000, out=500)]
    for e in entries:
        e["timestamp"] = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    (folder / f"{T.SID}.jsonl").write_bytes(T.to_bytes(entries))
    (home / "config.toml").write_text('[budgets]\ndaily_usd = 0.01\nmonthly_usd = 1000.0\n[report]\ntimezone = "UTC"\n')
    env = service_env(home, claude, CTXLAMP_BUDGET_EVERY_S="0.3")

    def wait_for_budgets(info) -> dict:
        client = ApiClient(info, timeout=10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = client.exchange("GET", "/api/v1/status")[1].get("budgets")
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError("no budgets in the status")

    with running_service(env, home) as (_proc, info):
        got = wait_for_budgets(info)
    daily = got["daily"]
    assert daily["period"] == datetime.now(UTC).date().isoformat() and daily["budget_usd"] == 0.01
    assert daily["spent_usd"] > 0.01 and daily["share"] > 1
    assert got["monthly"]["share"] < 0.8
    given = json.loads((home / "budget-notices.json").read_text())
    assert given == [f"daily:{daily['period']}:100", f"daily:{daily['period']}:80"]
    mtime = (home / "budget-notices.json").stat().st_mtime_ns
    with running_service(env, home) as (_proc, info):
        wait_for_budgets(info)
    assert json.loads((home / "budget-notices.json").read_text()) == given  # nothing given twice
    assert (home / "budget-notices.json").stat().st_mtime_ns == mtime
    assert Path(home / "budget-notices.json").stat().st_mode & 0o077 == 0  # private, like the rest


def test_the_tray_shows_the_budgets_and_each_notice_the_service_sends(tray):
    said = []
    tray._notify = lambda title, body, quiet=False: said.append((title, body))
    snap = {"session_id": "s1", "project": "/p", "lamp": {"state": "good", "colour": "green"}}
    status_block = block(16.0, 120.0)
    tray.set_status({"sessions": [snap], "followed": "s1", "service": {}, "limits": {}, "budgets": status_block})
    assert "Budget today $16.00 of $20.00 (80 %); month $120 of $300 (40 %)" in tray.tray.toolTip()
    assert said == []  # the status never notifies: the event does, once
    notices, _ = budgets.due(block(21.0, 120.0), set())
    tray.on_budgets({**block(21.0, 120.0), "notices": notices})
    assert said == [("ctxlamp: daily budget spent", "Billed today: $21.00 of your $20.00 daily budget (105 %).")]
    assert "today $21.00 of $20.00 (105 %)" in tray.tray.toolTip()


def test_settings_show_the_time_zone_and_the_budgets_with_their_ranges(qtbot):
    from desktop.connection.datasource import DemoSource
    from desktop.tabs.settings import SettingsTab

    tab = SettingsTab(DemoSource())
    qtbot.addWidget(tab)
    tab.reload()
    for key in ("report.timezone", "budgets.daily_usd", "budgets.monthly_usd", "budgets.notice_pct"):
        assert key in tab.rows
    daily = tab.rows["budgets.daily_usd"].control.inner
    share = tab.rows["budgets.notice_pct"].control.inner
    assert (daily.minimum(), daily.maximum()) == (0, 1_000_000) and (share.minimum(), share.maximum()) == (1, 100)
    tab.rows["report.timezone"].set_value("Asia/Tokyo")
    assert tab.rows["report.timezone"].value() == "Asia/Tokyo"
