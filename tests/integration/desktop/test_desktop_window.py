"""The window and its charts: empty data, a long session, channel export, settings."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from desktop.connection.datasource import DataError, DemoSource  # noqa: E402
from desktop.window import TAB_NAMES, MainWindow  # noqa: E402
from tests.support.corpus import ROOT  # noqa: E402
from tests.support.layout import window_problems  # noqa: E402



@pytest.fixture(autouse=True)
def private_dirs(ctx_home, tmp_path, monkeypatch):
    """The settings tab shows (and may write) the ctxlamp home and the autostart entry: keep them in tmp."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return ctx_home


def load_make_demo():
    spec = importlib.util.spec_from_file_location("make_demo", ROOT / "resources" / "demo" / "make_demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_source(folder: Path, status, series, segments, channels, config) -> DemoSource:
    folder.mkdir(parents=True, exist_ok=True)
    for name, obj in [("status.json", status), ("series.json", series), ("segments.json", segments),
                      ("channels.json", channels), ("config.json", config)]:
        (folder / name).write_text(json.dumps(obj))
    return DemoSource(folder)


def curve_items(plot):
    return [i for i in plot.getPlotItem().listDataItems()]


def test_every_tab_renders_with_empty_data(qtbot, tmp_path, ctx_home):
    empty_channel = {"label": "measured", "bucket": "day", "buckets": [], "totals": {}, "sources": []}
    src = write_source(tmp_path / "empty", {"sessions": [], "followed": None, "service": {}}, {},
                       {"segments": []}, {n: empty_channel for n in ("edit", "pinch", "retrieval")}, {})
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.load_all()
    for i in range(len(TAB_NAMES)):
        win.tabs.setCurrentIndex(i)
        img = win.grab().toImage()
        assert img.width() > 0
    assert "No live session" in win.session_tab.title.text()
    assert win.history_tab.table.rowCount() == 0
    assert win.files_tab.list.count() == 0


def test_every_empty_view_says_why_it_is_empty_and_what_fills_it(qtbot, tmp_path):
    import pyqtgraph as pg

    empty_channel = {"label": "measured", "bucket": "day", "buckets": [], "totals": {}, "sources": []}
    src = write_source(tmp_path / "empty", {"sessions": [], "followed": None, "service": {}}, {},
                       {"segments": []}, {n: {**empty_channel, "channel": n} for n in ("edit", "pinch", "retrieval")},
                       {})
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.resize(1100, 760)
    win.show()
    win.load_all()
    assert "No finished stretch of work yet" in win.history_tab.note.text()  # the glossary's word
    assert "compacted" in win.history_tab.note.text() and not win.history_tab.table.isVisibleTo(win)
    for name, tab in win.channel_tabs.items():
        notes = [i.textItem.toPlainText() for i in tab.plot.getPlotItem().getViewBox().allChildren()
                 if isinstance(i, pg.TextItem)]
        assert len(notes) == 1 and " in this period: " in notes[0] and "this chart" in notes[0], (name, notes)
    live = [win.overview_tab.live.item(i).text() for i in range(win.overview_tab.live.count())]
    assert live == ["No live session: one shows here from its first call."]
    assert window_problems(win) == {}


@pytest.mark.parametrize("size", [(1100, 760), (1400, 900)])
def test_every_tab_of_the_demo_has_no_cut_or_overlapping_text(qtbot, size):
    """The window at its default size and larger, with the demo's data: no text over text, no cut text, no
    legend over data (tests/support/layout.py says what is checked)."""
    win = MainWindow(DemoSource())
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    win.load_all()
    problems = window_problems(win)
    assert problems == {}, "\n".join(f"{k}: {p}" for k, v in problems.items() for p in v)


def test_a_gated_snapshot_and_a_session_with_one_call(qtbot, tmp_path):
    gated = {"session_id": "g", "lamp": {"state": "insufficient_data", "colour": "white"}, "skeleton": None,
             "x": 1, "u": None}
    series = {"g": {"session_id": "g", "calls": [{"call": 1, "totalStock": 5000, "L": 0, "B": 5000,
                                                  "bill_cycle_usd": 0.0}],
                    "resets": [], "reminders": [], "skeleton": None, "paths": []}}
    src = write_source(tmp_path / "g", {"sessions": [gated], "followed": "g"}, series, {"segments": []},
                       {n: {} for n in ("edit", "pinch", "retrieval")}, {})
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.load_all()
    assert curve_items(win.session_tab.curve_plot) == []
    assert len(curve_items(win.session_tab.stock_plot)) == 3


def test_a_long_session_of_2000_calls_renders(qtbot, tmp_path):
    from service.cli.demo_session import generate

    demo = load_make_demo()
    path = tmp_path / "projects" / "-home-u-big" / "long-1.jsonl"
    path.parent.mkdir(parents=True)
    entries = generate("/home/u/big", seed=99, calls=2000, session="long-1", compact_at=1200)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    snapshot, series, profiles = demo.measure(path, set())  # the real engine, as make_demo uses it
    assert len(series["calls"]) == 2000
    channels = json.loads((ROOT / "resources" / "demo" / "channels.json").read_text())
    src = write_source(tmp_path / "long", {"sessions": [snapshot], "followed": "long-1"}, {"long-1": series},
                       {"segments": profiles}, channels, {})
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.resize(1000, 700)
    win.show()
    win.load_all()
    stock = curve_items(win.session_tab.stock_plot)
    assert {len(c.xData) for c in stock} == {2000}
    (curve,) = [c for c in curve_items(win.session_tab.curve_plot) if len(c.xData) > 1]
    assert len(curve.xData) == 64
    img = win.grab().toImage()
    assert img.width() == 1000 and img.height() == 700


def test_demo_window_point_sits_in_its_lamp_band(qtbot):
    src = DemoSource()
    status = src.status()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.load(status["followed"])
    snap = win.snapshot
    sk = snap["skeleton"]
    band = {"white": (0, sk["u_mirror"]), "green": (sk["u_mirror"], sk["u_amber"]),
            "amber": (sk["u_amber"], sk["u_crit"]), "red": (sk["u_crit"], 99)}[snap["lamp"]["colour"]]
    assert band[0] <= snap["u"] < band[1]
    assert win.session_tab.curve_plot.now_point.xData[0] == pytest.approx(snap["u"])
    # the reminders of the segment sit on the curve as diamonds
    diamonds = [c for c in curve_items(win.session_tab.curve_plot) if c.opts.get("symbol") == "d"]
    segment_reminders = [r for r in src.series(snap["session_id"])["reminders"] if r["segment"] == snap["segment"]]
    assert len(diamonds) == len(segment_reminders) > 0


def test_channel_export_writes_csv_and_png(qtbot, tmp_path):
    src = DemoSource()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.load_all()
    tab = win.channel_tabs["retrieval"]
    assert "ESTIMATED" in tab.badge.text()
    assert "MEASURED" in win.channel_tabs["edit"].badge.text()
    csv_path = tab.export_csv(tmp_path / "r.csv")
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("start,") and len(lines) == 1 + len(src.channel("retrieval")["buckets"])
    png = tab.export_png(tmp_path / "r.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # choosing another counter redraws the bars from that counter
    tab.counter.setCurrentIndex(tab.counter.findData("bytes_saved"))
    assert tab.counter.currentText() == "bytes spared (estimate)"
    (bars,) = [i for i in tab.plot.getPlotItem().items if type(i).__name__ == "BarGraphItem"]
    heights = list(bars.opts["height"])
    assert heights == [b.get("bytes_saved", 0) for b in src.channel("retrieval")["buckets"]]  # empty days: 0


def test_history_tab_lists_segment_profiles(qtbot):
    src = DemoSource()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.load_all()
    assert win.history_tab.table.rowCount() == len(src.segments()["segments"])


def test_history_tab_shows_each_model_a_segment_used(qtbot, tmp_path):
    demo = DemoSource()
    profile = dict(demo.segments()["segments"][0], model="claude-sonnet-4-5",
                   models=[{"model": "claude-sonnet-4-5", "calls": 6, "bill_in_usd": 0.4, "bill_out_usd": 0.02},
                           {"model": "claude-opus-4-5", "calls": 3, "bill_in_usd": 1.25, "bill_out_usd": 0.02}])
    src = write_source(tmp_path / "switch", demo.status(), {}, {"segments": [profile]},
                       {n: demo.channel(n) for n in ("edit", "pinch", "retrieval")}, demo.config())
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.load_all()
    table = win.history_tab.table
    header = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    cell = table.item(0, header.index("Models\n(calls, $)"))
    assert cell.text() == "Sonnet 4.5 ×6 $0.42; Opus 4.5 ×3 $1.27"
    assert table.item(0, header.index("Model")).text() == "Sonnet 4.5"  # the model the part opened with


def test_settings_send_only_what_changed(qtbot, tmp_path):
    saved = []

    class Recording(DemoSource):
        live = True

        def save_config(self, changes):
            saved.append(changes)
            return changes and self.config()

    src = Recording()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.load_all()
    tab = win.settings_tab
    assert tab.save() and saved == []
    tab.rows["engine.eps_amber"].set_value(0.08)
    assert tab.save()
    assert saved == [{"engine": {"eps_amber": 0.08}}]
    # amber above red is refused at the field, and Save stays off
    tab.rows["engine.eps_amber"].set_value(0.5)
    assert not tab.validate() and not tab.save_button.isEnabled()
    assert "above amber" in tab.rows["engine.eps_crit"].error.text() and not tab.rows["engine.eps_crit"].error.isHidden()
    assert not tab.save() and len(saved) == 1
    # reset puts the default back, and the footer's message of the refused value goes with it
    assert "Fix the marked settings" in tab.status.text()
    tab.rows["engine.eps_amber"].reset.click()
    assert tab.rows["engine.eps_amber"].value() == 0.05
    tab.validate()
    assert "Fix" not in tab.status.text() and tab.rows["engine.eps_crit"].error.text() == ""


def test_saving_a_team_server_opens_the_team_tab_at_once_and_says_so(qtbot):
    class Saving(DemoSource):
        live = True

        def save_config(self, changes):
            self._config.setdefault("team", {}).update(changes.get("team") or {})
            return self.config()

    win = MainWindow(Saving())
    qtbot.addWidget(win)
    win.load_all()
    labels = lambda: [win.tabs.tabText(i) for i in range(win.tabs.count())]  # noqa: E731
    assert "Team" not in labels()
    tab = win.settings_tab
    tab.rows["team.url"].set_value("postgresql://team.example/ctxlamp")
    assert tab.save(), tab.status.text()
    assert labels()[-1] == "Team" and "Team tab" in tab.status.text()
    tab.rows["team.url"].set_value("")
    assert tab.save(), tab.status.text()
    assert "Team" not in labels() and "Team tab is closed" in tab.status.text()


def test_demo_source_refuses_to_save():
    with pytest.raises(DataError):
        DemoSource().save_config({"engine": {"g_floor": 1}})


def test_price_overrides_are_validated_and_written_to_the_config_dir(qtbot, ctx_home):
    class Live(DemoSource):
        live = True

    from desktop.tabs.settings import SettingsTab

    tab = SettingsTab(Live())
    qtbot.addWidget(tab)
    tab.reload()
    tab._add_price_row("claude-new-model-9", {"input": "3"})  # a model the table lacks needs all five prices
    assert not tab.check_prices() and not tab.prices_button.isEnabled()
    assert "all five" in tab.prices_error.text()
    assert not tab.save_prices() and not (ctx_home / "prices.json").exists()
    tab.prices.setRowCount(0)
    tab._add_price_row("claude-sonnet-4-5", {"cache_read": "0.3"})  # a known model: one price is enough
    assert tab.check_prices() and tab.save_prices()
    assert json.loads((ctx_home / "prices.json").read_text()) == {"models": {"claude-sonnet-4-5": {"cache_read": 0.3}}}
    tab.reload()  # read back into the table
    assert tab.price_rows() == [("claude-sonnet-4-5", {"input": "", "output": "", "cache_read": "0.3",
                                                       "cache_write_5m": "", "cache_write_1h": ""})]
    tab.prices.item(0, 3).setText("-1")
    assert "0 or more" in tab.prices_error.text()
    tab.prices.setRowCount(0)
    assert tab.save_prices() and not (ctx_home / "prices.json").exists()


def test_the_stock_chart_marks_a_rewind_between_the_calls_around_it(qtbot, tmp_path):
    from service.engine import LineSplitter
    from service.engine_setup.engines import load_prices, new_engine
    from tests.support import transcripts as T

    b = T.Branching()
    b.read_turn(f"{T.CWD}/src/big.py", 800)
    b.rewind(0)  # back to before "read it": the Read leaves B
    b.call()
    eng = new_engine("/tmp/rewound.jsonl", load_prices(), full_events=False)
    for line in LineSplitter().feed(T.to_bytes(b.entries)):
        eng.feed_line(line)
    snap = eng.snapshot()
    series = {"session_id": snap["session_id"], "calls": eng.live_series(), "resets": eng.resets,
              "rewinds": eng.rewinds, "reminders": eng.reminders, "skeleton": snap["skeleton"],
              "paths": eng.path_rows()}
    src = write_source(tmp_path / "rw", {"sessions": [snap], "followed": snap["session_id"]},
                       {snap["session_id"]: series}, {"segments": []}, {n: {} for n in ("edit", "pinch", "retrieval")},
                       {})
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.show()
    win.load_all()
    lines = [i for i in win.session_tab.stock_plot.getPlotItem().items if type(i).__name__ == "InfiniteLine"]
    assert [line.value() for line in lines] == [3.5]  # after the third call, before the fourth
    b_values = [c["B"] for c in series["calls"]]
    assert b_values[-1] < b_values[-2]  # and B fell there


def test_the_settings_list_the_transcripts_the_service_skipped(qtbot, ctx_home):
    from desktop.tabs.settings import SettingsTab

    skipped = [{"path": "/p/-home-u/x.jsonl", "reason": "not a regular file (a FIFO)"},
               {"path": "/p/-home-u/w.jsonl", "reason": "permission denied"}]

    class Skipping(DemoSource):
        def status(self) -> dict:
            doc = super().status()
            doc["service"] = {**(doc.get("service") or {}), "skipped_files": skipped}
            return doc

    tab = SettingsTab(Skipping())
    qtbot.addWidget(tab)
    tab.reload()
    assert not tab.skipped_box.isHidden()
    form = tab.skipped_form
    shown = [(form.itemAt(i, form.ItemRole.LabelRole).widget().text(),
              form.itemAt(i, form.ItemRole.FieldRole).widget().text()) for i in range(form.rowCount())]
    assert shown == [(r["reason"], r["path"]) for r in skipped]
    plain = SettingsTab(DemoSource())
    qtbot.addWidget(plain)
    plain.reload()
    assert plain.skipped_box.isHidden()


MARKUP = "<a href='https://example.invalid/x'>click</a><img src='/etc/x.png'>"


def _renders_markup(label) -> bool:
    """Whether Qt draws this label's text as rich text (Qt's own rule for AutoText)."""
    from PySide6.QtGui import Qt  # QtGui's Qt carries mightBeRichText

    form = label.textFormat()
    return form == Qt.TextFormat.RichText or (form == Qt.TextFormat.AutoText and Qt.mightBeRichText(label.text()))


def test_a_file_name_from_a_transcript_is_shown_as_written_in_every_label(qtbot, tmp_path):
    """A transcript names its files: the status bar and every label show such a name as text, never as markup."""
    from PySide6.QtWidgets import QLabel

    src = DemoSource()
    sid = src.status()["followed"]
    src._series[sid]["paths"].append({"path": f"/p/{MARKUP}.py", "tokens": 10, "selected": True, "why": None})
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.load(sid)
    win.files_tab.selection_changed.emit(f"/p/{MARKUP}.py", False)  # the user unticks it
    assert MARKUP in win.status_label.text()
    win.files_tab.show_error(f"no such file /p/{MARKUP}.py")
    for label in win.findChildren(QLabel):
        assert not (MARKUP in label.text() and _renders_markup(label)), label.text()


def test_the_cost_curves_bands_say_where_they_lie(qtbot):
    """Each band of the curve is named by where it lies on the curve (docs/glossary.md): green runs past the
    sweet spot too, so the amber band is "well past it" (issue 51), the red one says the lamp's "restart pays"."""
    import pyqtgraph as pg

    from service.client.words import STATE_WORDS

    src = DemoSource()
    win = MainWindow(src)
    qtbot.addWidget(win)
    win.load(src.status()["followed"])
    labels = [item.toPlainText() for item in win.session_tab.curve_plot.getPlotItem().items
              if isinstance(item, pg.TextItem)]
    assert labels[:4] == ["early", "around the sweet spot", "well past it", STATE_WORDS["critical"]]


def test_the_settings_show_the_size_of_the_kept_transcripts(qtbot, ctx_home):
    from desktop.tabs.settings import SettingsTab

    class Keeping(DemoSource):
        def status(self) -> dict:
            doc = super().status()
            doc["service"] = {**(doc.get("service") or {}),
                              "kept_transcripts": {"on": True, "files": 195, "bytes": 5_600_000}}
            return doc

    tab = SettingsTab(Keeping())
    qtbot.addWidget(tab)
    tab.reload()
    form = tab.paths_form
    shown = dict((form.itemAt(i, form.ItemRole.LabelRole).widget().text(),
                  form.itemAt(i, form.ItemRole.FieldRole).widget().text()) for i in range(form.rowCount()))
    assert shown["Kept copies of transcripts"] == "195 files, 5.6 MB: read once Claude Code deletes a transcript"


def test_live_sessions_with_long_project_folders_show_their_lamps_words(qtbot):
    """Real transcripts' folders are long ("agent-workflows-monorepo-v2"): the Live sessions box cut "— past the
    sweet spot" at its edge behind a sideways scroll bar at the default size; a row wraps instead."""
    from tests.support.layout import layout_problems

    class LongNames(DemoSource):
        def status(self) -> dict:
            doc = super().status()
            first = doc["sessions"][0]
            doc["sessions"] = [{**first, "session_id": f"s{i}", "project": f"/home/dev/{name}"}
                               for i, name in enumerate(("agent-workflows-monorepo-v2", "spotter-dashboard-0zw",
                                                         "a-rather-long-project-folder-name"))]
            return doc

    win = MainWindow(LongNames())
    qtbot.addWidget(win)
    win.resize(1100, 760)
    win.show()
    win.load_all()
    win.tabs.setCurrentIndex(0)
    qtbot.wait(50)
    live = win.overview_tab.live
    assert live.count() == 3 and all("agent-workflows" in live.item(0).text() for _ in (0,))
    assert not live.horizontalScrollBar().isVisible()
    assert [p for p in layout_problems(win.overview_tab) if "list row" in p] == []
