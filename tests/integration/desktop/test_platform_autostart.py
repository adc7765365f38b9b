"""The autostart seam: the Settings switch writes and removes each system's start-at-login entry
(XDG autostart, a LaunchAgent, the Run key), with the system passed in."""
from __future__ import annotations

import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from desktop.platforms import autostart
from desktop.platforms.autostart import LoginItem

ODD_PYTHON = "/opt/Ada Lovelace/py\\thon $HOME 100%/bin/python"


class DictRunKey:
    """The Run key as a dict: the branch's registry writes, seen without Windows."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def set(self, name: str, value: str) -> None:
        self.values[name] = value

    def delete(self, name: str) -> None:
        self.values.pop(name, None)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no `ctxlamp` on PATH: this Python runs -m
    return tmp_path


def _unquote_exec(value: str) -> list[str]:
    """Exec= read as the Desktop Entry spec says (written here independently of the writer)."""
    text = value.replace("\\\\", "\\")  # the string-value escape first
    words, word, quoted, i, started = [], "", False, 0, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\" and i + 1 < len(text) and text[i + 1] in '"`$\\':
                word += text[i + 1]
                i += 1
            elif c == '"':
                quoted = False
            else:
                word += c
        elif c == '"':
            quoted, started = True, True
        elif c == " ":
            if started or word:
                words.append(word)
            word, started = "", False
        else:
            word += c
        i += 1
    if started or word:
        words.append(word)
    return [w.replace("%%", "%") for w in words]


def test_linux_writes_an_xdg_entry_that_reads_back_as_the_tray_command(home, monkeypatch):
    monkeypatch.setattr(sys, "executable", ODD_PYTHON)
    item = LoginItem("linux")
    where = Path(item.set_enabled(True))
    assert where == home / ".config" / "autostart" / "ctxlamp.desktop" and item.is_enabled()
    text = where.read_text()
    (exec_line,) = [line for line in text.splitlines() if line.startswith("Exec=")]
    assert _unquote_exec(exec_line[5:]) == [ODD_PYTHON, "-P", "-m", "service.cli", "tray"]
    validate = "/usr/bin/desktop-file-validate"
    if Path(validate).exists():
        run = subprocess.run([validate, str(where)], capture_output=True, text=True, check=False)
        assert run.returncode == 0 and "error" not in run.stdout.lower(), run.stdout
    item.set_enabled(False)
    assert not where.exists() and not item.is_enabled()
    item.set_enabled(False)  # removing twice is fine


def test_macos_writes_a_launch_agent_and_removes_it(home, monkeypatch):
    monkeypatch.setattr(sys, "executable", ODD_PYTHON)
    item = LoginItem("darwin")
    where = Path(item.set_enabled(True))
    assert where == home / "Library" / "LaunchAgents" / "io.ctxlamp.tray.plist" and item.is_enabled()
    agent = plistlib.loads(where.read_bytes())
    assert agent["Label"] == "io.ctxlamp.tray" and agent["RunAtLoad"] is True and agent["KeepAlive"] is False
    assert agent["ProgramArguments"] == [ODD_PYTHON, "-P", "-m", "service.cli", "tray"]  # a list: no shell quoting
    assert agent["LimitLoadToSessionType"] == "Aqua"
    item.set_enabled(False)
    assert not where.exists() and not item.is_enabled()


def test_windows_writes_the_run_key_and_removes_it(home, monkeypatch):
    monkeypatch.setattr(sys, "executable", "C:\\Program Files\\Python311\\python.exe")
    key = DictRunKey()
    item = LoginItem("win32", run_key=key)
    assert not item.is_enabled()
    where = item.set_enabled(True)
    assert where == "HKEY_CURRENT_USER\\Software\\Microsoft\\Windows\\CurrentVersion\\Run\\ctxlamp"
    assert key.values == {"ctxlamp": '"C:\\Program Files\\Python311\\python.exe" -P -m service.cli tray'}
    assert item.is_enabled()
    item.set_enabled(False)
    assert key.values == {} and not item.is_enabled()


def test_windows_starts_the_tray_without_a_console_window(tmp_path, monkeypatch):
    python = tmp_path / "Python311" / "python.exe"
    python.parent.mkdir()
    python.touch()
    (python.parent / "pythonw.exe").touch()
    monkeypatch.setattr(sys, "executable", str(python))
    assert autostart.tray_argv("win32") == [str(python.parent / "pythonw.exe"), "-P", "-m", "service.cli", "tray"]


def test_a_frozen_build_starts_itself(monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/Applications/ctxlamp.app/Contents/MacOS/ctxlamp")
    assert autostart.tray_argv("darwin") == ["/Applications/ctxlamp.app/Contents/MacOS/ctxlamp"]


def test_an_installed_ctxlamp_is_preferred_on_linux_and_macos(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/local/bin/ctxlamp" if name == "ctxlamp" else None)
    assert autostart.tray_argv("linux") == autostart.tray_argv("darwin") == ["/usr/local/bin/ctxlamp", "tray"]


def test_each_system_has_its_kind():
    assert [autostart.system_kind(s) for s in ("linux", "freebsd14", "darwin", "win32")] == [
        "xdg", "xdg", "macos", "windows"]


def test_the_settings_switch_writes_and_removes_the_entry(home, qtbot, ctx_home):
    from desktop.connection.datasource import DemoSource
    from desktop.tabs.settings import SettingsTab

    tab = SettingsTab(DemoSource())
    qtbot.addWidget(tab)
    assert not tab.autostart.isChecked()
    tab.autostart.setChecked(True)
    entry = Path(autostart.location())
    assert entry.exists() and str(entry) in tab.status.text()
    tab.autostart.setChecked(False)
    assert not entry.exists() and "Removed" in tab.status.text()


@pytest.mark.parametrize("system", ["linux", "darwin", "win32"])
@pytest.mark.parametrize("odd", ["\nExec=/bin/sh -c 'touch /tmp/pwned'\nX=", "\r", "\t", "\x1b]0;x\x07", "\x85"])
def test_a_path_with_a_control_character_is_refused_and_nothing_is_written(home, monkeypatch, system, odd):
    """A line break in the program's path added keys to the XDG entry (an injected Exec= ran)."""
    monkeypatch.setattr(sys, "executable", f"/opt/ada{odd}/bin/python")
    run_key = DictRunKey()
    item = LoginItem(system, run_key)
    with pytest.raises(autostart.UnsafeCommand, match="control character"):
        item.set_enabled(True)
    assert not item.is_enabled() and run_key.values == {}
    assert not list(home.rglob("*.desktop")) and not list(home.rglob("*.plist"))
