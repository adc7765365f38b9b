"""The folders seam: the cheap standard-library folders (service/client/where.py: the status line and
the tray) agree with service/client/paths.py (platformdirs) on Linux, macOS and Windows; Claude Code's folder on each system."""
from __future__ import annotations

import os
import sys

import pytest

from service.client import paths
from service.client import privdir, where

WIN_LOCAL = "C:\\Users\\Ada Lovelace\\AppData\\Local"


def _clean(monkeypatch, **env: str) -> None:
    for key in ("CTXLAMP_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "LOCALAPPDATA",
                "WIN_PD_OVERRIDE_LOCAL_APPDATA", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def _same(system: str, ours: tuple[str, str]) -> None:
    theirs = paths.app_paths(system)
    got = (str(theirs.data), str(theirs.runtime))
    if system == "win32":  # platformdirs joins with this machine's separator when asked for Windows' rules
        got = tuple(p.replace("/", "\\") for p in got)
    assert ours == got


@pytest.mark.parametrize("system", ["linux", "freebsd14", "darwin", "win32"])
def test_the_status_lines_folders_agree_with_service_paths(system, monkeypatch, tmp_path):
    home = tmp_path / "home with space"
    home.mkdir()
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    cases = [
        {"HOME": str(home)},
        {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg data")},
        {"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)},
        {"HOME": str(home), "XDG_DATA_HOME": "relative/is/ignored"},
    ]
    if system == "win32":
        cases = [{"LOCALAPPDATA": WIN_LOCAL, "WIN_PD_OVERRIDE_LOCAL_APPDATA": WIN_LOCAL}]
    for env in cases:
        _clean(monkeypatch, **env)
        _same(system, where.folders(system, dict(os.environ)))


def test_ctxlamp_home_wins_everywhere(monkeypatch, tmp_path):
    _clean(monkeypatch, CTXLAMP_HOME=str(tmp_path / "x" / ".." / "ctx"))
    for system in ("linux", "darwin", "win32"):
        data, runtime = where.folders(system)
        assert data == runtime == str(tmp_path / "ctx") == str(paths.app_paths(system).runtime)


def test_the_folders_per_system_are_the_documented_ones():
    assert where.folders("darwin", {"HOME": "/Users/ada"}) == (
        "/Users/ada/Library/Application Support/ctxlamp", "/Users/ada/Library/Caches/TemporaryItems/ctxlamp")
    assert where.folders("win32", {"LOCALAPPDATA": WIN_LOCAL}) == (
        WIN_LOCAL + "\\ctxlamp", WIN_LOCAL + "\\Temp\\ctxlamp")
    assert where.folders("win32", {"USERPROFILE": "C:\\Users\\ada"}) == (
        "C:\\Users\\ada\\AppData\\Local\\ctxlamp", "C:\\Users\\ada\\AppData\\Local\\Temp\\ctxlamp")
    assert where.folders("linux", {"HOME": "/home/ada", "XDG_RUNTIME_DIR": "/run/user/1000"}) == (
        "/home/ada/.local/share/ctxlamp", "/run/user/1000/ctxlamp")
    assert where.folders("linux", {"HOME": "/home/ada"}) == (
        "/home/ada/.local/share/ctxlamp", "/home/ada/.local/share/ctxlamp/run")


def test_the_status_line_finds_the_service_where_service_paths_puts_it(monkeypatch, tmp_path):
    _clean(monkeypatch, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    runtime = paths.app_paths().runtime
    runtime.mkdir(parents=True)
    (runtime / "api.json").write_text("{}")
    assert where.runtime_dir() == str(runtime)


def test_claude_codes_folder(monkeypatch, tmp_path):
    _clean(monkeypatch, HOME=str(tmp_path))
    assert paths.claude_dir() == tmp_path / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "~/elsewhere")
    assert paths.claude_dir() == tmp_path / "elsewhere"


def test_on_windows_claude_codes_folder_is_under_userprofile():
    """Path.home() on Windows reads USERPROFILE (ntpath.expanduser), so ~/.claude is %USERPROFILE%\\.claude."""
    import ntpath

    env = {"USERPROFILE": "C:\\Users\\Ada Lovelace", "HOME": "/c/Users/other"}
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        assert ntpath.join(ntpath.expanduser("~"), ".claude") == "C:\\Users\\Ada Lovelace\\.claude"
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert sys.platform  # this machine's own rule is tested above


def _plant(how: str, base) -> str:
    """A runtime folder somebody else could have planted (or one that is the user's own: "private")."""
    if how == "a link":
        real = base / "real"
        real.mkdir(mode=0o700)
        (base / "xdg").symlink_to(real)
        return str(base / "xdg")
    parent = base / "shared"
    parent.mkdir()
    parent.chmod(0o777 if how == "below a folder anyone may write" else 0o755)
    folder = parent / "xdg"
    folder.mkdir()
    folder.chmod(0o755 if how == "readable by others" else 0o700)
    if how == "another user's":
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    return str(folder)


@pytest.mark.skipif(os.name != "posix", reason="runtime folders by owner and mode are a POSIX rule")
@pytest.mark.parametrize("how", ["private", "another user's", "readable by others", "below a folder anyone may write",
                                 "a link"])
def test_a_planted_runtime_folder_is_refused_by_where_and_paths_alike(how, monkeypatch, tmp_path):
    """where.py (the status line, the tray) and paths.py (platformdirs' rule) take $XDG_RUNTIME_DIR only
    when it is the user's own private folder, and agree on every planted one: an api.json planted
    there is never read."""
    import warnings

    import platformdirs

    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("handing a folder to another user needs root")
    xdg = _plant(how, tmp_path)
    _clean(monkeypatch, HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=xdg)
    planted = os.path.join(xdg, "ctxlamp")
    if how != "another user's":
        os.makedirs(planted, exist_ok=True)
        with open(os.path.join(planted, "api.json"), "w") as fh:
            fh.write('{"port": 1, "token": "planted"}')
    trusted = how == "private"
    assert (privdir.runtime_base_problem(xdg) is None) == trusted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns once when it refuses the folder
        assert platformdirs.PlatformDirs("ctxlamp", appauthor=False).user_runtime_dir.startswith(xdg) == trusted
    expected = planted if trusted else str(tmp_path / "home" / ".local" / "share" / "ctxlamp" / "run")
    assert where.folders()[1] == str(paths.app_paths().runtime) == expected
    assert where.runtime_dir() == expected and where.api_file() == os.path.join(expected, "api.json")
