"""A config.toml that does not parse is one sentence naming the file and the line, in every command
(serve, status, report, doctor, the tray), never a traceback; the last start failure is kept for the
tray and `status`, and goes once the service starts (issue 51)."""
from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from service import config
from service.client import start_failure
from service.client.paths import Paths
from tests.support.harness import one_session_home
from tests.support.procs import ctl

TWICE = '[reminders]\nmin_gap = "10m"\n\n[reminders]\nmin_gap = "5m"\n'  # the newcomer's file: line 4


@pytest.mark.parametrize("text, line, words", [
    (TWICE, 4, "[reminders] appears twice"),
    ('[engine]\ng_floor = 500\ng_floor = 600\n', 3, "already set above"),
    ('[report]\ntimezone = Europe/Paris\n', 2, "quotes"),
    ('[engine\n', 1, "expected ']'"),
    ('[engine]\n\n\ng_floor = [1,\n', 5, "value"),   # tomllib: at the end of the document
])
def test_the_sentence_names_the_file_and_the_line(tmp_path, text, line, words):
    path = tmp_path / "config.toml"
    path.write_text(text)
    found = config.check_file(path)
    assert found is not None and (found.path, found.line) == (path, line)
    sentence = str(found)
    assert str(path) in sentence and f"line {line}:" in sentence and words.lower() in sentence.lower()
    assert "\n" not in sentence
    with pytest.raises(config.ConfigUnreadable) as raised:
        config.load(path)
    assert str(raised.value) == sentence
    assert path.read_text() == text  # never overwritten


def test_a_byte_that_is_not_utf8_is_named_by_its_line(tmp_path):
    path = tmp_path / "config.toml"
    path.write_bytes(b"[engine]\n# caf\xe9\n")
    found = config.check_file(path)
    assert found is not None and found.line == 2 and "not UTF-8" in str(found)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('[]=."\'\n #abc1,{}')), max_size=60))
def test_any_file_that_does_not_parse_gets_a_line_inside_it(text):
    try:
        tomllib.loads(text)
        return
    except tomllib.TOMLDecodeError as exc:
        found = config.unreadable(Path("c.toml"), text, exc)
    assert 1 <= found.line <= text.count("\n") + 1
    assert "\n" not in str(found) and "c.toml" in str(found)


@pytest.fixture
def broken(tmp_path):
    home, env = one_session_home(tmp_path, 6)
    (home / "config.toml").write_text(TWICE)
    return home, env


def _one_sentence(stderr: str, home: Path) -> None:
    assert "Traceback" not in stderr
    assert f"{home / 'config.toml'} cannot be read: line 4: " in stderr, stderr
    assert "[reminders] appears twice" in stderr


def test_every_command_names_the_line_and_none_prints_a_traceback(broken):
    home, env = broken
    serve = ctl(env, "serve", timeout=60)
    assert serve.returncode == start_failure.CANNOT_START
    _one_sentence(serve.stderr, home)
    assert len(serve.stderr.strip().splitlines()) == 1
    log = (home / "service.log").read_text()
    assert "line 4" in log and "Traceback" not in log
    assert "line 4" in (home / start_failure.NAME).read_text()

    status = ctl(env, "status", "--once")
    assert status.returncode == 1
    _one_sentence(status.stderr, home)
    assert "not running" in status.stderr

    report = ctl(env, "report")
    assert report.returncode == 2 and report.stdout == ""
    _one_sentence(report.stderr, home)

    doctor = ctl({**env, "QT_QPA_PLATFORM": "offscreen"}, "doctor")
    assert doctor.returncode != 0
    _one_sentence(doctor.stderr, home)
    assert "Everything ctxlamp needs is here" not in doctor.stdout + doctor.stderr


def test_a_service_that_starts_forgets_the_last_failure(broken):
    from tests.support.servicectl import running_service

    home, env = broken
    assert ctl(env, "serve", timeout=60).returncode == start_failure.CANNOT_START
    assert start_failure.last(Paths(home, home, home)) is not None
    (home / "config.toml").write_text('[reminders]\nmin_gap = "5m"\n')
    with running_service(env, home):
        assert start_failure.last(Paths(home, home, home)) is None
    doctor = ctl({**env, "QT_QPA_PLATFORM": "offscreen"}, "doctor")
    assert "cannot" not in doctor.stderr.split("Qt")[0]


@pytest.mark.skipif(sys.platform == "win32", reason="QProcess exit codes and offscreen Qt: POSIX here")
def test_the_tray_says_why_the_service_is_not_running_in_its_tooltip_and_menu(qtbot, ctx_home):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    pytest.importorskip("pytestqt")
    from desktop.connection.datasource import ApiSource
    from desktop.connection.supervisor import ServiceSupervisor, service_command
    from desktop.tray import TrayController

    (ctx_home / "config.toml").write_text(TWICE)
    sup = ServiceSupervisor(command=service_command())
    tray = TrayController(ApiSource(), supervisor=sup, open_window_without_tray=False)
    exits: list[str] = []
    sup.child_exited.connect(exits.append)
    try:
        with qtbot.waitSignal(sup.gave_up, timeout=60000):
            assert sup.ensure_running() == "started"
        assert len(exits) == 1  # a restart would fail alike: none is tried
        tip = tray.tray.toolTip()
        assert tray.colour() == "grey" and "line 4" in tip and str(ctx_home / "config.toml") in tip
        assert "Traceback" not in tip
        tray.update_menu()
        shown = " ".join(a.text() for a in tray.reason_actions)
        assert "line 4" in shown and "appears twice" in shown
        assert all(len(a.text()) <= 64 for a in tray.reason_actions)
        assert tray.retry_action.isVisible()
    finally:
        sup.stop()
        tray.shutdown()


def test_a_tray_without_a_service_of_its_own_reads_the_kept_failure(qtbot, ctx_home):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    pytest.importorskip("pytestqt")
    from desktop.connection.datasource import ApiSource
    from desktop.connection.events import EventStream
    from desktop.tray import TrayController

    start_failure.record(Paths(ctx_home, ctx_home, ctx_home), str(config.ConfigUnreadable(
        ctx_home / "config.toml", 7, "the section [engine] appears twice (merge the two)")))
    stream = EventStream()
    tray = TrayController(ApiSource(), stream=stream, open_window_without_tray=False)
    try:
        with qtbot.waitSignal(stream.disconnected, timeout=5000):
            stream.start()
        assert "line 7" in tray.tray.toolTip() and "not reachable" not in tray.tray.toolTip()
    finally:
        stream.stop()
        tray.shutdown()
