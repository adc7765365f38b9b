"""The Overview tab and the words on screen: formatting, the overview's view model and widget, and the
overview's sums against `ctxlamp report --json` on the same transcripts (a real service)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from desktop import fmt  # noqa: E402
from desktop.present import overview as om  # noqa: E402
from desktop.datasource import DemoSource  # noqa: E402
from tests.support import transcripts as tr  # noqa: E402
from tests.support.servicectl import running_service  # noqa: E402
from tests.support.corpus import ROOT  # noqa: E402



# ---------------- formatting ----------------

@pytest.mark.parametrize("value,text", [(None, "–"), (0, "$0"), (1234.5, "$1,234"), (12.345, "$12.35"),
                                        (0.994, "$0.99"), (0.42, "$0.42"), (0.0042, "$0.004"),
                                        (0.00012, "$0.0001"), (-2.5, "-$2.50")])
def test_money(value, text):
    assert fmt.usd(value) == text


@pytest.mark.parametrize("value,text", [(850, "850"), (1500, "1.5k"), (12_345, "12k"), (2_500_000, "2.50M")])
def test_tokens(value, text):
    assert fmt.tokens(value) == text


@pytest.mark.parametrize("value,text", [(512, "512 B"), (9004, "9.0 kB"), (949_460, "949.5 kB"),
                                        (4_500_000, "4.5 MB"), (2e9, "2.0 GB")])
def test_bytes(value, text):
    assert fmt.size(value) == text


@pytest.mark.parametrize("value,text", [(45, "45 s"), (65, "1 min 05 s"), (600, "10 min"), (3720, "1 h 02 min"),
                                        (90_000, "1 d 1 h"), (None, "–")])
def test_durations(value, text):
    assert fmt.duration(value) == text


def test_counts_percent_plural():
    assert fmt.count(1234567) == "1,234,567" and fmt.count(2.0) == "2"
    assert fmt.percent(0.37) == "37 %" and fmt.percent(0.004) == "0.4 %" and fmt.percent(0) == "0 %"
    assert fmt.plural(1, "call") == "1 call" and fmt.plural(3, "stretch", "stretches") == "3 stretches"


def test_dates_are_local_time(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # UTC+9, no daylight saving
    time.tzset()
    try:
        now = fmt.parse_time("2026-11-30T02:00:00Z")  # 11:00 in Tokyo
        assert fmt.when("2026-11-30T01:05:00Z", now) == "today 10:05"
        assert fmt.when("2026-11-28T20:30:00Z", now) == "Sun 29 Nov 05:30"
        assert fmt.when("2025-03-01T00:00:00Z", now) == "1 Mar 2025 09:00"
        assert fmt.day("2026-11-29") == "Sun 29 Nov"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# ---------------- the overview's view model ----------------

def doc_with(models: dict[str, list[float]], days: list[str]) -> dict:
    by_day = {d: {m: v[i] for m, v in models.items() if v[i]} for i, d in enumerate(days)}
    return {"spend": {"days": days, "by_day_model": by_day, "by_day_project": {}}}


def test_daily_stacks_keep_the_dearest_and_fold_the_rest_into_other():
    days = ["2026-11-28", "2026-11-29"]
    models = {f"claude-sonnet-4-{i}": [float(i), 1.0] for i in range(1, 9)}
    stacks = om.daily_stacks(doc_with(models, days))
    names = [n for n, _ in stacks.layers]
    assert len(names) == om.MAX_STACKS and names[-1] == om.OTHER
    assert names[0] == "Sonnet 4.8"  # dearest at the bottom
    assert stacks.totals == pytest.approx([sum(v[0] for v in models.values()), 8.0])


def test_model_and_project_names_are_words():
    assert om.model_name("claude-opus-4-8") == "Opus 4.8"
    assert om.model_name("claude-haiku-4-5-20251001") == "Haiku 4.5"
    assert om.model_name(None) == "unknown model"
    assert om.project_name("/home/dev/webshop") == "webshop"


RECORDED_LIMITS = {"five_hour": {"used_percentage": 37.0, "resets_at": "2026-11-30T18:00:00Z",
                                 "seen_at": "2026-11-30T14:02:00Z"},
                   "seven_day": {"used_percentage": 81.5, "resets_at": "2026-12-03T09:00:00Z",
                                 "seen_at": "2026-11-30T14:02:00Z"},
                   "spend_limit": None}


def test_limit_meters_from_the_status_shape():
    meters = om.limit_meters({"limits": RECORDED_LIMITS}, fmt.parse_time("2026-11-30T14:05:00Z"))
    assert [m.name for m in meters] == ["5-hour limit", "Weekly limit"]
    assert meters[0].percent == 37.0 and meters[0].text.startswith("37 % used, resets ")
    assert om.limit_meters({"limits": None}) == [] and om.limit_meters({}) == []


def test_channel_headlines_are_sentences_with_units():
    doc = DemoSource().overview(30)
    lines = dict(om.channel_headlines(doc))
    e = doc["channels"]["edit"]
    assert lines["Edits"].startswith(f"{e['str_replace_calls']} replace edits paid "
                                     f"{fmt.tokens(e['str_replace_old_string_tokens'])} output tokens")
    assert "Context trimming saved" in lines["Trimming"] and "kB" in lines["Search"]


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
    assert any(fmt.usd(doc["spend"]["total_usd"]) in t for t in texts)
    assert any(fmt.usd(doc["spend"]["estimated_usd"]) in t for t in texts)
    assert "Haiku 5.6" in tab.notes.text()  # the estimated part says which model and why
    assert tab.sessions.rowCount() == len(doc["sessions"])
    assert tab.live.count() == len(src.status()["sessions"])
    assert not tab.limits_box.isVisibleTo(win)  # the demo has no limits: no meters
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


def test_limit_meters_appear_when_the_status_has_them(qtbot):
    from desktop.tabs.overview import OverviewTab

    src = DemoSource()
    tab = OverviewTab(src)
    qtbot.addWidget(tab)
    tab.show()
    tab.show_overview(src.overview(7), {**src.status(), "limits": RECORDED_LIMITS})
    assert tab.limits_box.isVisible() and tab.limits_lay.count() == 2
    bar = tab.limits_lay.itemAt(0).widget()
    assert bar.value() == 37 and bar.text().startswith("5-hour limit: 37 % used")


def test_count_axes_tick_whole_numbers_only(qtbot):
    from desktop.charts import UnitAxis

    axis = UnitAxis("left", "count")
    values = [v for _, vs in axis.tickValues(0, 3.2, 400) for v in vs]
    assert values and all(float(v).is_integer() for v in values)
    assert axis.tickStrings([1000.0, 2000.0], 1, 1000) == ["1,000", "2,000"]
    assert UnitAxis("left", "usd").tickStrings([0.5, 2.0], 1, 0.5) == ["$0.50", "$2.00"]


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
    from service.api.client import ApiClient

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
    assert sum(stacks.totals) == pytest.approx(rep["total_usd"], abs=1e-8)
    assert om.spend_figures(ov)[0].value == fmt.usd(rep["total_usd"])
    # the week leaves out the session five days ago only when it is older than the week: here it is inside
    assert week["period"]["days"] == 7 and len(week["spend"]["days"]) == 7
    assert week["spend"]["total_usd"] == pytest.approx(rep["total_usd"], abs=1e-8)


def test_config_check_validates_with_the_service_rules_and_saves_nothing(tmp_path):
    from service.api.client import ApiClient

    home, claude = tmp_path / "home", tmp_path / "claude"
    home.mkdir()
    (claude / "projects").mkdir(parents=True)
    env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude)}
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info, timeout=10)
        before = client.get("/api/v1/config")
        ok = client.post("/api/v1/config?check=1", {"engine": {"g_floor": 900}})
        assert ok["engine"]["g_floor"] == 900
        status, answer = client.request("POST", "/api/v1/config?check=1", {"reminders": {"min_gap": "soon"}})
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
