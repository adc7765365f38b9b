"""The tray on Qt's offscreen platform: lamp colour, notices, service down, supervision."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication

from desktop.connection.datasource import ApiSource
from desktop.present import fmt
from desktop.connection.events import EventStream
from desktop.connection.restart_policy import RestartPolicy
from desktop.connection.supervisor import ServiceSupervisor
from desktop.tray import TrayController


def snap(sid="s1", colour="green", state="good", **kw):
    return {"session_id": sid, "project": "/home/u/proj", "lamp": {"state": state, "colour": colour},
            "x": 1.5, "xSweet": 2.0, "dhat": 4.0, "bill_cycle_usd": 0.2, "br": 0.5,
            "updated_at": "2026-01-01T10:00:00Z", **kw}


def rem(lap, sid="s1"):
    return {"session_id": sid, "segment": 0, "lap": lap, "call": 10 * lap, "at": "2026-01-01T10:00:00Z",
            "restart_usd": 0.4, "payback_calls": 3.0, "rent_usd": 0.4 * lap}


def icon_pixel(tray: TrayController, size=32) -> QColor:
    img = tray.tray.icon().pixmap(size, size).toImage()
    return img.pixelColor(size // 2, int(size * 0.75))  # below the grey lamp's bar


def test_lamp_colour_follows_snapshots(tray):
    expect = {
        "white": lambda c: min(c.red(), c.green(), c.blue()) > 200,
        "green": lambda c: c.green() > c.red() + 60 and c.green() > c.blue() + 60,
        "amber": lambda c: c.red() > 200 and c.green() > 120 and c.blue() < 80,
        "red": lambda c: c.red() > 180 and c.green() < 90 and c.blue() < 90,
    }
    for colour, state in [("white", "warming"), ("green", "good"), ("amber", "warning"), ("red", "critical"),
                          ("green", "good")]:
        tray.on_snapshot(snap(colour=colour, state=state))
        assert tray.colour() == colour
        assert expect[colour](icon_pixel(tray)), (colour, icon_pixel(tray).name())
        assert colour in tray.tray.toolTip()


def test_the_followed_session_decides_the_colour_and_the_menu_can_switch(tray):
    tray.set_status({"sessions": [snap("a", "red", "critical"), snap("b", "green")], "followed": "a",
                     "service": {}})
    assert tray.colour() == "red"
    tray.update_menu()
    actions = {a.text(): a for a in tray.session_actions if not a.isSeparator()}
    assert len(actions) == 2
    checked = [t for t, a in actions.items() if a.isChecked()]
    assert len(checked) == 1 and "red" in checked[0]
    next(a for t, a in actions.items() if "green" in t).trigger()
    assert tray.followed == "b" and tray.colour() == "green"


def test_the_lamp_follows_the_session_the_service_says_it_follows_unless_the_user_chose(qtbot, ctx_home):
    """Decision 496: the tray kept the session /status named when it connected; when the service followed
    another (an older session grew, a start found it newest), the lamp showed one session and `ctxlamp status`
    another. The stream's `followed` event moves the lamp; a session the user picked in the menu stays."""
    stream = EventStream()
    t = TrayController(ApiSource(), stream=stream, open_window_without_tray=False)
    try:
        t.set_status({"sessions": [snap("a", "red", "critical"), snap("b", "green")], "followed": "a",
                      "service": {}})
        assert t.followed == "a" and t.colour() == "red"
        stream._dispatch("followed", {"session_id": "b"})
        assert t.followed == "b" and t.colour() == "green"
        stream._dispatch("followed", {"session_id": 7})  # not a session id: ignored
        assert t.followed == "b"
        t.follow("a")
        stream._dispatch("followed", {"session_id": "b"})
        assert t.followed == "a"
    finally:
        t.shutdown()


def test_while_the_service_reads_recent_sessions_the_tooltip_says_so(tray):
    tray.set_status({"sessions": [], "followed": None,
                     "service": {"scan": {"state": "catching_up", "done": 1, "total": 9}}})
    assert tray.colour() == "white" and "reading your recent" in tray.tray.toolTip()
    tray.on_service({"scan": {"state": "scanning", "done": 0, "total": 40}})
    assert "no live Claude Code session yet" in tray.tray.toolTip()
    tray.set_status({"sessions": [], "followed": None, "service": {"scan": {"state": "catching_up"}}})
    tray.on_snapshot(snap(colour="amber", state="warning"))
    assert tray.colour() == "amber" and "reading" not in tray.tray.toolTip()


def test_a_stretch_of_17_rent_laps_and_a_red_lamp_is_said_in_one_notice(tray, qtbot):
    """The demo's moment: the rent reaches a restart's cost while the lamp is green, laps follow, the lamp
    turns red. The user is told once (the first lap: the rent ledger's reminder is the one voice), in two
    lines as the lamp stands; the red lamp is shown, not announced."""
    shown = []
    tray.notice_shown.connect(lambda t, via: shown.append((t["kind"], t["lap"], via)))
    tray.on_snapshot(snap(colour="green", state="good", laps=1))
    tray.on_reminder(rem(1), now=1000.0)
    assert shown == [("rent", 1, "popup")]  # offscreen has no tray: the fallback window
    body = tray.popup.body.text()
    assert len(body.splitlines()) == 2 and "prepare a handoff" in body and "$0.40" in body
    label = tray.popup.body
    assert label.heightForWidth(label.width()) <= 2 * label.fontMetrics().lineSpacing() + 2  # two lines as shown
    assert "amber" not in body and "red" not in body.replace("prepare", "")
    assert "restart at your next break" in tray.popup.title.text()
    assert not tray.popup.why.isVisible()
    tray.popup.why_button.click()  # the explanation, one click away
    assert tray.popup.why.isVisible() and "The lamp is green" in tray.popup.why.text()
    for lap in range(2, 18):
        tray.on_snapshot(snap(colour="amber" if lap > 8 else "green", state="warning", laps=lap))
        tray.on_reminder(rem(lap), now=1000.0 + lap)
    assert len(shown) == 1
    assert "restarts' worth" not in tray.tray.toolTip()  # later laps: the figures in money, not a count
    tray.on_snapshot(snap(colour="red", state="critical", laps=17))
    assert len(shown) == 1  # the colour is shown, not announced
    tray.on_snapshot(snap(colour="red", state="critical", laps=18))
    tray.on_reminder(rem(18), now=5000.0)
    assert len(shown) == 1 and tray.notices_shown == 1


def test_clicking_a_notice_copies_the_handoff_and_opens_the_session_tab_with_the_why(tray, qtbot):
    tray.on_snapshot(snap(colour="green", state="good", laps=1, restart_savings={"first_reminder_call": 10}))
    tray.on_reminder(rem(1), now=1000.0)
    tray.tray.messageClicked.emit()  # what the desktop's notification sends on a click
    assert "mcp__ctxlamp__handoff_save" in QGuiApplication.clipboard().text()
    win = tray.window
    qtbot.addWidget(win)
    assert win.isVisible() and win.tabs.currentWidget() is win.session_tab
    advice = win.session_tab.advice.text()
    assert advice.startswith("Restart at your next break") and "The lamp is green" in advice


def test_a_held_notice_is_shown_by_one_timer(tray, qtbot):
    tray.coalescer.min_gap_s = 0.4
    shown = []
    tray.notice_shown.connect(lambda t, via: shown.append(t["segment"]))
    tray.on_reminder(rem(1))
    tray.on_reminder({**rem(1), "segment": 1})  # a new stretch right after: its notice waits for the gap
    assert shown == [0]
    with qtbot.waitSignal(tray.notice_shown, timeout=3000):
        pass
    assert shown == [0, 1]


def test_snooze_silences_the_session(tray):
    shown = []
    tray.notice_shown.connect(lambda t, via: shown.append(t["lap"]))
    tray.on_reminder(rem(1), now=0.0)
    tray.snooze()
    tray.coalescer.min_gap_s = 0
    tray.on_reminder({**rem(1), "segment": 1})
    assert shown == [1]


def test_a_lamp_already_red_when_the_tray_connects_is_shown_not_announced(tray):
    shown = []
    tray.notice_shown.connect(lambda t, via: shown.append(t["kind"]))
    tray.set_status({"sessions": [snap("a", "red", "critical")], "followed": "a", "service": {}})
    tray.on_snapshot(snap("a", "red", "critical"))
    assert shown == [] and tray.colour() == "red"


def test_fallback_popup_never_takes_focus(tray):
    tray.on_reminder(rem(1))
    p = tray.popup
    assert p.windowFlags() & Qt.WindowDoesNotAcceptFocus
    assert p.windowFlags() & Qt.Tool and p.windowFlags() & Qt.WindowStaysOnTopHint
    assert p.testAttribute(Qt.WA_ShowWithoutActivating)


def test_prepare_handoff_copies_a_handoff_save_prompt(tray):
    tray.on_snapshot(snap())
    text = tray.prepare_handoff()
    assert "mcp__ctxlamp__handoff_save" in text
    assert QGuiApplication.clipboard().text() == text


def test_service_down_without_api_json_is_a_grey_lamp_that_says_so(qtbot, ctx_home):
    stream = EventStream()
    tray = TrayController(ApiSource(), stream=stream, open_window_without_tray=False)
    try:
        with qtbot.waitSignal(stream.disconnected, timeout=5000):
            stream.start()
        assert tray.colour() == "grey"
        tip = tray.tray.toolTip()
        assert "service down" in tip and "not running" in tip
        assert tray.tooltip().startswith("ctxlamp — service down")
    finally:
        stream.stop()
        tray.shutdown()
    assert not stream.isRunning()


def test_supervisor_restarts_a_dying_service_three_times_then_gives_up(qtbot, ctx_home):
    sup = ServiceSupervisor(policy=RestartPolicy(backoff_s=(0.05, 0.1, 0.2)),
                            command=(sys.executable, ["-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"]))
    tray = TrayController(ApiSource(), supervisor=sup, open_window_without_tray=False)
    exits = []
    sup.child_exited.connect(exits.append)
    try:
        with qtbot.waitSignal(sup.gave_up, timeout=10000) as blocker:
            assert sup.ensure_running() == "started"
        assert len(exits) == 4  # the first start and three restarts
        assert "ctxlamp serve" in blocker.args[0] and "boom" in blocker.args[0]
        assert tray.colour() == "grey" and "not restarted" in tray.tray.toolTip()
        tray.update_menu()
        assert tray.retry_action.isVisible()
    finally:
        sup.stop()
        tray.shutdown()


def test_menu_snooze_and_popup_buttons_act_on_the_right_session(tray):
    # two sessions in one folder: the notice names which by when it started
    tray.set_status({"sessions": [snap("a", "amber", "warning", started_at="2026-11-29T08:00:00Z"),
                                  snap("b", "green", started_at="2026-11-29T09:30:00Z")], "followed": "a",
                     "service": {}})
    tray.update_menu()
    tray.snooze_action.trigger()
    assert tray.coalescer.snoozed("a", __import__("time").time())
    assert not tray.coalescer.snoozed("b", __import__("time").time())
    tray.on_reminder(rem(1, "b"))
    assert tray.popup.isVisible() and f"proj · started {fmt.when('2026-11-29T09:30:00Z')}" in tray.popup.title.text()
    tray.popup.snooze.click()
    assert tray.coalescer.snoozed("b", __import__("time").time())
    assert not tray.popup.isVisible()
