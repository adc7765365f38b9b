"""The Overview tab and the words on screen: formatting, the overview's view model and widget, and the
overview's sums against `ctxlamp report --json` on the same transcripts (a real service)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from desktop.present import fmt  # noqa: E402
from desktop.present import overview as om  # noqa: E402
from desktop.connection.datasource import DemoSource  # noqa: E402
from tests.support import transcripts as tr  # noqa: E402
from tests.support.servicectl import running_service  # noqa: E402
from tests.support.corpus import ROOT  # noqa: E402


# ---------------- formatting ----------------


# ---------------- the overview's view model ----------------


RECORDED_LIMITS = {"five_hour": {"used_percentage": 37.0, "resets_at": "2026-11-30T18:00:00Z",
                                 "seen_at": "2026-11-30T14:02:00Z"},
                   "seven_day": {"used_percentage": 81.5, "resets_at": "2026-12-03T09:00:00Z",
                                 "seen_at": "2026-11-30T14:02:00Z"},
                   "spend_limit": None}


# ---------------- the tab ----------------

def test_overview_tab_shows_the_demo_and_a_click_opens_the_session(qtbot):
    from desktop.window import TAB_NAMES, MainWindow

    assert TAB_NAMES[0] == "overview"
    src = DemoSource()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.load_all()
    tab = win.overview_tab
    doc = src.overview(7)
    assert tab.doc == doc and win.tabs.currentIndex() == 0
    texts = [tab.figures.itemAt(i).widget().text() for i in range(tab.figures.count())]
    assert any(fmt.usd(doc["spend"]["billed_usd"]) in t for t in texts)  # the headline: what was billed (issue 26)
    assert any(fmt.usd(doc["spend"]["estimated_usd"]) in t for t in texts)
    assert "Haiku 5.6" in tab.notes.text()  # the estimated part says which model and why
    assert tab.sessions.rowCount() == len(doc["sessions"])
    assert tab.live.count() == len(src.status()["sessions"])
    # the demo's plan windows (one runs out before its reset) and budgets (issue 26): a meter each
    assert tab.limits_box.isVisibleTo(win) and tab.limits_lay.count() == 4
    texts_of_bars = [tab.limits_lay.itemAt(i).widget().text() for i in range(4)]
    assert "at this pace" in texts_of_bars[0] and texts_of_bars[2].startswith("Daily budget: ")
    # the period switch loads another period
    tab.period_group.button(30).click()
    assert tab.doc == src.overview(30)
    # a live session opens with its curve
    live_row = next(r for r in range(tab.sessions.rowCount()) if tab.sessions.item(r, 4).text() == "yes")
    sid = tab.sessions.item(live_row, 0).data(0x0100)
    tab.sessions.cellClicked.emit(live_row, 0)
    assert win.tabs.currentWidget() is win.session_tab and win.session_id == sid
    assert win.session_tab.curve_plot.now_point is not None
    # an ended one shows what is known of it
    win.tabs.setCurrentIndex(0)
    ended_row = next(r for r in range(tab.sessions.rowCount()) if tab.sessions.item(r, 4).text() == "")
    tab.sessions.cellActivated.emit(ended_row, 0)
    assert win.tabs.currentWidget() is win.session_tab
    assert "not live any more" in win.session_tab.title.text()
    assert win.session_tab.curve_plot.now_point is None


class _Quiet(DemoSource):
    """The demo before its first call: no session until `writing`; counts the overview loads and says
    which thread asked for the last one."""

    writing = False
    loads = 0
    asked_on: threading.Thread | None = None

    def status(self) -> dict:
        doc = super().status()
        return doc if self.writing else {**doc, "sessions": [], "followed": None}

    def overview(self, days: int) -> dict:
        self.loads += 1
        self.asked_on = threading.current_thread()
        doc = super().overview(days)
        return doc if self.writing else {**doc, "sessions": []}


def _quiet_window(qtbot):
    from desktop.window import MainWindow

    src = _Quiet()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.load_all()
    return src, win


def test_a_window_opened_before_the_first_call_follows_the_session(qtbot):
    src, win = _quiet_window(qtbot)
    tab = win.overview_tab
    tab.reload_timer.setInterval(50)
    assert [tab.live.item(i).text() for i in range(tab.live.count())] == [
        "No live session: one shows here from its first call."]
    assert win.session_id is None and tab.sessions.rowCount() == 0
    loads = src.loads
    src.writing = True
    first, second = DemoSource().status()["sessions"][:2]
    for _ in range(5):  # calls as they come: the live list at once, the figures once for all of them
        win.on_live_snapshot(first)
    assert tab.live.count() == 1 and tab.live.item(0).data(0x0100) == first["session_id"]
    assert win.session_id == first["session_id"] and win.snapshot == first  # the Session tab took it up
    qtbot.waitUntil(lambda: tab.sessions.rowCount() > 0)  # the figures, fetched off the window's thread
    assert src.asked_on is not threading.main_thread() and not tab.fetching
    qtbot.wait(200)
    assert src.loads == loads + 1
    win.on_live_snapshot(second)  # another session: listed, the shown one stays
    assert [tab.live.item(i).data(0x0100) for i in range(2)] == [first["session_id"], second["session_id"]]
    assert win.session_id == first["session_id"]
    win.tabs.setCurrentWidget(win.history_tab)  # hidden, the tab waits to be shown before it loads
    win.on_live_snapshot(second)
    qtbot.waitUntil(lambda: tab.stale)
    assert src.loads == loads + 1
    win.tabs.setCurrentWidget(tab)
    assert src.loads == loads + 2 and not tab.stale


def test_an_ended_session_being_read_is_not_replaced_by_a_live_one(qtbot):
    _, win = _quiet_window(qtbot)
    ended = next(s for s in DemoSource().overview(7)["sessions"] if not s["live"])
    win.open_session(ended["session_id"])
    win.on_live_snapshot(DemoSource().status()["sessions"][0])
    assert win.session_id is None and "not live any more" in win.session_tab.title.text()


def test_limit_meters_appear_when_the_status_has_them(qtbot):
    from desktop.tabs.overview import OverviewTab

    src = DemoSource()
    tab = OverviewTab(src)
    qtbot.addWidget(tab)
    tab.show()
    tab.show_overview(src.overview(7), {**src.status(), "limits": RECORDED_LIMITS, "budgets": None})
    assert tab.limits_box.isVisible() and tab.limits_lay.count() == 2
    bar = tab.limits_lay.itemAt(0).widget()
    assert bar.value() == 37 and bar.text().startswith("5-hour limit: 37 % used")


def test_count_axes_tick_whole_numbers_only(qtbot):
    from desktop.widgets.charts import UnitAxis

    axis = UnitAxis("left", "count")
    values = [v for _, vs in axis.tickValues(0, 3.2, 400) for v in vs]
    assert values and all(float(v).is_integer() for v in values)
    assert axis.tickStrings([1000.0, 2000.0], 1, 1000) == ["1,000", "2,000"]
    assert UnitAxis("left", "usd").tickStrings([0.5, 2.0], 1, 0.5) == ["$0.50", "$2.00"]


def test_a_period_with_nothing_spent_still_names_its_days(qtbot):
    from desktop.widgets.charts import draw_stacks, new_plot

    plot = new_plot("Spend per day", "", "", left_unit="usd", bottom_unit="day", legend=True)
    qtbot.addWidget(plot)
    days = [f"2026-11-{d}" for d in range(26, 31)] + ["2026-12-01", "2026-12-02"]
    draw_stacks(plot, days, [("Sonnet 4.5", [0.0] * 7)])
    (lo, hi), _ = plot.getPlotItem().getViewBox().viewRange()
    assert (lo, hi) == (-0.6, 6.6)  # every day of the period, not the first two of it
    axis = plot.getAxis("bottom")
    ticks = [v for _, vs in axis.tickValues(lo, hi, 700) for v in vs]
    assert axis.tickStrings([min(ticks), max(ticks)], 1, 1) == [fmt.day(days[0]), fmt.day(days[-1])]
    draw_stacks(plot, days, [("Sonnet 4.5", [0.0] * 6 + [1.5])])  # and as much when something was
    assert plot.getPlotItem().getViewBox().viewRange()[0] == [-0.6, 6.6]



def test_a_channel_with_nothing_in_it_keeps_its_days_on_the_time_axis(qtbot):
    """The Trimming tab of a demo with no trims drew its note over 1970's first second ("00.100")."""
    from desktop.present.channel import channel_view
    from desktop.widgets.charts import draw_bars, new_plot

    plot = new_plot("Trimming", "events", "", date_axis=True)
    qtbot.addWidget(plot)
    days = [f"2026-11-{d:02d}T00:00:00Z" for d in range(20, 31)]
    channel = {"channel": "pinch", "label": "measured", "bucket": "day", "totals": {"requests": 12},
               "buckets": [{"start": d, "events": 0, "requests": 1} for d in days]}
    draw_bars(plot, channel_view(channel, "events"))
    (lo, hi), _ = plot.getPlotItem().getViewBox().viewRange()
    assert lo == fmt.parse_time(days[0]) and hi == fmt.parse_time(days[-1]) + 86400  # its days, no more (issue 51)
    plot.resize(700, 300)
    plot.grab()  # painted once: the date axis picks its zoom level from its font
    ticks = [v for _, vs in plot.getAxis("bottom").tickValues(lo, hi, 700) for v in vs]
    labels = plot.getAxis("bottom").tickStrings(ticks, 1, 86400)
    assert labels and all(label.isdigit() or label.isalpha() for label in labels), labels  # days, not seconds

# ---------------- the overview's sums are the report's ----------------

def _shifted(entries: list[dict], days_ago: int, sid: str, cwd: str) -> list[dict]:
    """Entries moved to `days_ago` days before now, in another session and folder."""
    base = datetime.now(timezone.utc).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=days_ago)
    out = []
    for e in entries:
        e = json.loads(json.dumps(e))
        t = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")) - tr.T0
        e["timestamp"] = (base + t).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        e["sessionId"], e["cwd"] = sid, cwd
        out.append(e)
    return out


def write_history(claude: Path) -> None:
    """Four sessions in two projects, two models, over three days (one with a subagent call)."""
    plan = [("aaaa1111-0000-4000-8000-000000000001", "/home/u/shop", 0, "claude-sonnet-4-5", 30),
            ("aaaa1111-0000-4000-8000-000000000002", "/home/u/shop", 2, "claude-opus-4-8", 12),
            ("aaaa1111-0000-4000-8000-000000000003", "/home/u/notes", 2, "claude-sonnet-4-5", 8),
            ("aaaa1111-0000-4000-8000-000000000004", "/home/u/notes", 5, "claude-haiku-4-5", 20)]
    for i, (sid, cwd, days_ago, model, n) in enumerate(plan):
        entries = tr.growing_session(n, model=model, prefix=f"s{i}m")
        if i == 1:
            entries.append(tr.sidechain(tr.call(f"s{i}side", 10 * n + 5, cw5=4000, out=300, model=model)))
        path = claude / "projects" / cwd.replace("/", "-") / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(tr.to_bytes(_shifted(entries, days_ago, sid, cwd)))


def test_overview_sums_equal_the_report_on_the_same_transcripts(tmp_path):
    from service.client.api import ApiClient

    home, claude = tmp_path / "home", tmp_path / "claude"
    home.mkdir()
    write_history(claude)
    env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude)}
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info, timeout=60)
        ov = client.get("/api/v1/overview?days=30")
        week = client.get("/api/v1/overview?days=7")
    period = ov["period"]
    r = subprocess.run([sys.executable, "-m", "service.cli", "report", "--json", "--no-service",
                        "--since", period["since"], "--until", period["until"]],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)["spend"]
    spend = ov["spend"]
    assert spend["total_usd"] == rep["total_usd"] > 0 and spend["calls"] == rep["calls"]
    assert spend["by_model"] == rep["by_model"] and len(rep["by_model"]) == 3
    assert spend["by_project"] == rep["by_project"] and len(rep["by_project"]) == 2
    assert spend["subagents_usd"] == rep["subagents_usd"] > 0
    for day, usd in rep["by_day"].items():
        assert sum(spend["by_day_model"][day].values()) == pytest.approx(usd, abs=1e-8)
        assert sum(spend["by_day_project"][day].values()) == pytest.approx(usd, abs=1e-8)
    for model, usd in rep["by_model"].items():
        assert sum(row.get(model, 0) for row in spend["by_day_model"].values()) == pytest.approx(usd, abs=1e-8)
    assert [s["usd"] for s in ov["sessions"]] == sorted((s["usd"] for s in rep["by_session"].values()),
                                                        reverse=True)
    # what the tab draws adds up to the same: the stacked bars and the headline figure
    stacks = om.daily_stacks(ov, "project")
    assert sum(stacks.totals) == pytest.approx(rep["billed_usd"], abs=1e-8)
    assert om.spend_figures(ov)[0].value == fmt.usd(rep["billed_usd"])
    # each session is named by when it started: its transcript's earliest call
    firsts: dict[str, str] = {}
    for path in (claude / "projects").rglob("*.jsonl"):
        for raw in path.read_bytes().splitlines():
            entry = json.loads(raw)
            if "subagents" not in path.parts and entry.get("type") == "assistant":
                firsts[path.stem] = min(firsts.get(path.stem, "~"), entry["timestamp"])
    assert {s["session_id"]: fmt.parse_time(s["started_at"]) for s in ov["sessions"]} == \
        {s["session_id"]: fmt.parse_time(firsts[s["session_id"]]) for s in ov["sessions"]}
    # the week leaves out the session five days ago only when it is older than the week: here it is inside
    assert week["period"]["days"] == 7 and len(week["spend"]["days"]) == 7
    assert week["spend"]["total_usd"] == pytest.approx(rep["total_usd"], abs=1e-8)


def test_config_check_validates_with_the_service_rules_and_saves_nothing(tmp_path):
    from service.client.api import ApiClient

    home, claude = tmp_path / "home", tmp_path / "claude"
    home.mkdir()
    (claude / "projects").mkdir(parents=True)
    env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude)}
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info, timeout=10)
        before = client.get("/api/v1/config")
        ok = client.post("/api/v1/config?check=1", {"engine": {"g_floor": 900}})
        assert ok["engine"]["g_floor"] == 900
        status, answer = client.exchange("POST", "/api/v1/config?check=1", {"reminders": {"min_gap": "soon"}})
        assert status == 400 and "duration" in answer["error"]
        assert client.get("/api/v1/config") == before  # checking saved nothing
        assert client.get("/api/v1/config/defaults")["engine"]["g_floor"] == 500


def test_keyboard_reaches_every_tab_and_opens_a_session(qtbot):
    from PySide6.QtCore import Qt

    from desktop.window import TAB_NAMES, MainWindow

    src = DemoSource()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.windowHandle().requestActivate()  # shortcuts go to the active window
    qtbot.waitUntil(lambda: (win.activateWindow(), win.isActiveWindow())[1], timeout=5000)
    win.load_all()
    from PySide6.QtGui import QKeySequence
    from PySide6.QtTest import QTest

    for i in range(len(TAB_NAMES)):
        QTest.keySequence(win, QKeySequence(f"Ctrl+{i + 1}"))
        assert win.tabs.currentIndex() == i
    QTest.keySequence(win, QKeySequence("Ctrl+1"))
    tab = win.overview_tab
    tab.live.setFocus()
    tab.live.setCurrentRow(1)
    qtbot.keyClick(tab.live, Qt.Key_Return)
    assert win.tabs.currentWidget() is win.session_tab
    assert win.session_id == src.status()["sessions"][1]["session_id"]
