"""The desktop against the REAL service (`ctxlamp serve` in a temp home, a fixture transcript).

Skipped only while service/api/server.py cannot be imported (the service is built in
parallel); once it can, a service that does not come up is a failure.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

try:
    import service.api.server  # noqa: F401 - imported only to see that it can be
    HAVE_SERVICE = True
    WHY = ""
except Exception as exc:  # any import failure means "not built yet"
    HAVE_SERVICE = False
    WHY = f"service/api/server.py is not importable yet ({type(exc).__name__}: {exc})"

pytestmark = pytest.mark.skipif(not HAVE_SERVICE, reason=WHY)

from tests.support.corpus import CC, ROOT  # noqa: E402

SESSION_FIXTURE = CC / "long-session" / "projects"


def _wait(pred, timeout, what, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def make_home(base: Path) -> dict:
    home, claude = base / "home", base / "claude"
    home.mkdir(parents=True)
    shutil.copytree(SESSION_FIXTURE, claude / "projects")
    for f in (claude / "projects").rglob("*.jsonl"):
        os.utime(f)  # live: modified just now
    return {"CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude)}


def live_status(client):
    from service.client.api import ApiError

    try:
        st = client.status()
    except ApiError:
        return None
    ready = [s for s in st.get("sessions") or [] if s.get("skeleton") and s.get("calls")]
    return st if ready else None


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A real `ctxlamp serve` for this module; its env is set for the desktop code under test."""
    env_vars = make_home(tmp_path_factory.mktemp("live"))
    log = Path(env_vars["CTXLAMP_HOME"]) / "serve.out"
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env_vars.items():
            mp.setenv(k, v)
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve"], cwd=ROOT, env=os.environ.copy(),
                                    stdout=out, stderr=subprocess.STDOUT)
        try:
            from service.client.api import ApiClient

            client = ApiClient()
            _wait(lambda: ApiClient().alive(), 30, "the service's /health", log)
            status = _wait(lambda: live_status(ApiClient()), 60, "a measured session", log)
            yield {"status": status, "proc": proc, "env": env_vars, "client": client}
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_unticking_a_file_revalues_and_moves_the_curve_point(live, qtbot):
    from desktop.connection.datasource import ApiSource
    from desktop.window import MainWindow

    win = MainWindow(ApiSource())
    qtbot.addWidget(win)
    win.show()
    win.load()
    before = dict(win.snapshot)
    rows = [win.files_tab.list.item(i) for i in range(win.files_tab.list.count())]
    from PySide6.QtCore import Qt

    from desktop.present import fmt

    ticked = [it for it in rows if it.checkState() == Qt.Checked]
    assert ticked, "the fixture session has selected files"
    biggest = ticked[0]  # rows are sorted by tokens, largest first
    path = biggest.data(Qt.UserRole)
    with qtbot.waitSignal(win.snapshot_changed, timeout=10000) as sig:
        biggest.setCheckState(Qt.Unchecked)  # the user unticks it: POST /sessions/{id}/selection
    after = sig.args[0]
    assert after["B_default"] < before["B_default"]
    assert after["x"] > before["x"] and after["u"] != before["u"]
    assert win.session_tab.curve_plot.now_point.xData[0] == pytest.approx(after["u"])
    facts = win.session_tab.facts
    header = " ".join(facts.itemAt(i).widget().text() for i in range(facts.count()))
    assert f"{fmt.tokens(after['B_default'])} useful" in header  # the header follows the selection
    assert f"{fmt.tokens(before['B_default'])} useful" not in header
    series = ApiSource().series(after["session_id"])
    row = next(p for p in series["paths"] if p["path"] == path)
    assert row["selected"] is False and row["why"] == "excluded"
    # tick it again: the selection (and B_default) come back
    item = next(win.files_tab.list.item(i) for i in range(win.files_tab.list.count())
                if win.files_tab.list.item(i).data(Qt.UserRole) == path)
    with qtbot.waitSignal(win.snapshot_changed, timeout=10000) as sig:
        item.setCheckState(Qt.Checked)
    assert sig.args[0]["B_default"] == before["B_default"]


def test_the_event_stream_lights_the_lamp_from_real_snapshots(live, qtbot):
    from desktop.connection.datasource import ApiSource
    from desktop.connection.events import EventStream
    from desktop.tray import TrayController

    stream = EventStream()
    tray = TrayController(ApiSource(), stream=stream, open_window_without_tray=False)
    try:
        with qtbot.waitSignal(stream.snapshot, timeout=10000):
            stream.start()
        qtbot.waitUntil(lambda: tray.down_reason is None, timeout=5000)
        status = ApiSource().status()
        expected = next(s for s in status["sessions"] if s["session_id"] == tray.followed)
        assert tray.colour() == expected["lamp"]["colour"]
        assert "service down" not in tray.tray.toolTip()
        assert tray.coalescer.min_gap_s == 600  # reminders.min_gap "10m" from GET /config
    finally:
        stream.stop()
        tray.shutdown()


def test_the_supervisor_uses_a_running_service(live, qtbot):
    from desktop.connection.supervisor import ServiceSupervisor

    sup = ServiceSupervisor()
    assert sup.ensure_running() == "external"
    assert not sup.owns_child
    sup.stop()
    assert live["proc"].poll() is None  # an external service is left alone


def test_settings_round_trip_through_post_config(live, qtbot):
    from desktop.connection.datasource import ApiSource
    from desktop.tabs.settings import SettingsTab

    tab = SettingsTab(ApiSource())
    qtbot.addWidget(tab)
    tab.reload()
    tab.rows["engine.eps_crit"].set_value(0.25)
    assert tab.save(), tab.status.text()
    assert ApiSource().config()["engine"]["eps_crit"] == 0.25
    # the service's own check, before anything is saved: a gap it cannot read is refused at the field
    tab.rows["reminders.min_gap"].set_value("10m")
    tab.rows["engine.eps_crit"].set_value(0.2)
    assert tab.save(), tab.status.text()
    assert ApiSource().config()["engine"]["eps_crit"] == 0.2


def test_the_settings_tab_sets_how_many_sessions_are_live_at_a_start(live, qtbot):
    from desktop.connection.datasource import ApiSource
    from desktop.present import settings as sm
    from desktop.tabs.settings import SettingsTab

    tab = SettingsTab(ApiSource())
    qtbot.addWidget(tab)
    tab.reload()
    field = next(f for f in sm.FIELDS if f.key == "sessions.live_max")
    assert sm.show_value(field, 16) == "16 sessions" and tab.rows[field.key].value() == 16
    tab.rows[field.key].set_value(5000)  # the control stops at the service's bound
    assert tab.rows[field.key].value() == 1000
    tab.rows[field.key].set_value(4)
    assert tab.save(), tab.status.text()
    assert ApiSource().config()["sessions"]["live_max"] == 4
    tab.rows[field.key].set_value(16)  # the service is the module's: as it was for the tests after this one
    assert tab.save(), tab.status.text()


def test_screenshot_of_the_live_service(live, tmp_path):
    env = {**os.environ, **live["env"], "QT_QPA_PLATFORM": "offscreen"}
    out = tmp_path / "shots"
    r = subprocess.run([sys.executable, "-m", "service.cli", "screenshot", "--out", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (out / "window-session.png").stat().st_size > 5000


def test_the_tray_starts_and_stops_its_own_service(tmp_path, qtbot, monkeypatch):
    from desktop.connection.datasource import ApiSource
    from desktop.connection.events import EventStream
    from desktop.connection.supervisor import ServiceSupervisor
    from desktop.tray import TrayController

    for k, v in make_home(tmp_path).items():
        monkeypatch.setenv(k, v)
    stream = EventStream()
    sup = ServiceSupervisor()
    tray = TrayController(ApiSource(), stream=stream, supervisor=sup, open_window_without_tray=False)
    try:
        assert sup.ensure_running() == "started"
        stream.start()
        qtbot.waitUntil(lambda: tray.down_reason is None and tray.current is not None, timeout=60000)
        assert tray.colour() in ("white", "green", "amber", "red")
        pid = json.loads((tmp_path / "home" / "api.json").read_text())["pid"]
        assert pid == sup.process.processId()
        # the service dies: the lamp goes grey, the supervisor restarts it, the stream reconnects
        with qtbot.waitSignal(sup.child_exited, timeout=10000):
            os.kill(pid, 9)
        qtbot.waitUntil(lambda: tray.colour() == "grey", timeout=10000)
        qtbot.waitUntil(lambda: sup.process is not None and sup.process.processId() not in (0, pid), timeout=15000)
        qtbot.waitUntil(lambda: tray.down_reason is None and tray.current is not None, timeout=60000)
        pid = sup.process.processId()
        assert not sup.given_up
    finally:
        stream.stop()
        sup.stop()
        tray.shutdown()
    _wait(lambda: not _alive(pid), 10, "the child service to exit")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
