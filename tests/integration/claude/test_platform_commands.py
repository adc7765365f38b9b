"""The commands `ctxlamp install` writes run through Claude Code's shell on every system: quoted
for sh and Git Bash (and PowerShell where it can be), with spaces and backslashes in paths."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service.claude import settings as cs
from service.claude.command_line import command_line, portable_path
from service.statusline import settings as status_line
from tests.support.corpus import ROOT

WIN_PY = "C:\\Program Files\\Python311\\python.exe"
WIN_SCRIPT = "C:\\Users\\Ada Lovelace\\ctxlamp\\service\\statusline\\fast.py"


def test_windows_lines_use_forward_slashes_and_a_program_that_needs_no_quotes():
    line = command_line(WIN_PY, ["-S", portable_path(WIN_SCRIPT, "win32")], system="win32",
                        short_path=lambda p: "C:\\PROGRA~1\\PYTHON~1\\python.exe" if p == WIN_PY else None)
    assert line == "C:/PROGRA~1/PYTHON~1/python.exe -S 'C:/Users/Ada Lovelace/ctxlamp/service/statusline/fast.py'"
    assert shlex.split(line) == ["C:/PROGRA~1/PYTHON~1/python.exe", "-S",
                                 "C:/Users/Ada Lovelace/ctxlamp/service/statusline/fast.py"]


def test_windows_program_without_a_short_name_is_quoted_for_git_bash():
    line = command_line(WIN_PY, ["hook"], system="win32", short_path=lambda p: None)
    assert shlex.split(line) == ["C:/Program Files/Python311/python.exe", "hook"]


def test_posix_lines_keep_backslashes_and_spaces():
    line = command_line("/opt/a b\\c/python", ["-S", "/x y/fast.py"], env={"PYTHONPATH": "/p q"}, system="darwin")
    assert shlex.split(line) == ["env", "PYTHONPATH=/p q", "/opt/a b\\c/python", "-S", "/x y/fast.py"]


def test_windows_entries_are_recognised_as_ours():
    launcher = cs.Launcher("C:\\Users\\Ada Lovelace\\venv\\Scripts\\ctxlamp.exe", [], {})
    hook = {"type": "command", "command": launcher.shell("hook", "session-start", system="win32")}
    assert cs.is_our_hook(hook) and "\\" not in hook["command"]
    assert cs.is_our_server(cs.mcp_entry(launcher))
    mine = "C:\\tools\\my line.exe --x 'y'"
    entry = {"type": "command", "command": status_line.command(mine, python=WIN_PY, system="win32")}
    assert status_line.is_ours(entry) and status_line.wrapped(entry) == mine  # the user's command comes back intact


@pytest.fixture
def spaced_python(tmp_path) -> tuple[Path, Path]:
    """This venv's Python and a copy of this checkout's code, in folders with spaces and backslashes."""
    base = tmp_path / "a b\\c" / "venv dir"
    (base / "bin").mkdir(parents=True)
    venv = Path(sys.prefix)
    if not (venv / "pyvenv.cfg").is_file():
        pytest.skip("the tests run outside a venv")
    shutil.copy(venv / "pyvenv.cfg", base / "pyvenv.cfg")
    (base / "lib").symlink_to(venv / "lib")
    (base / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    checkout = tmp_path / "a b\\c" / "ctx lamp"  # a copy: the status line's script path is resolved
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "service", checkout / "service", ignore=ignore)
    shutil.copytree(ROOT / "models", checkout / "models", ignore=ignore)
    (checkout / "resources").symlink_to(ROOT / "resources")
    return base / "bin" / "python", checkout


def test_installed_commands_run_through_sh_from_paths_with_spaces_and_backslashes(spaced_python, tmp_path):
    python, checkout = spaced_python
    config = tmp_path / "claude config"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"model": "opus"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_", "PYTHON"))}
    env.update(HOME=str(tmp_path), CLAUDE_CONFIG_DIR=str(config), PYTHONPATH=str(checkout),
               CTXLAMP_HOME=str(tmp_path / "ctx home"))
    run = subprocess.run([str(python), "-m", "service.cli", "install"], env=env, cwd="/", capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    written = json.loads((config / "settings.json").read_text())
    status_cmd = written["statusLine"]["command"]
    (hook,) = [h for g in written["hooks"]["SessionStart"] for h in g["hooks"] if cs.is_our_hook(h)]
    assert str(python) in shlex.split(hook["command"]) and "a b\\c/ctx lamp/service/statusline/fast.py" in status_cmd
    del env["PYTHONPATH"]  # Claude Code's environment: only what the command line says
    payload = json.dumps({"session_id": "5e0f3c1a-0000-4000-8000-000000000001", "cwd": str(tmp_path),
                          "source": "startup", "hook_event_name": "SessionStart"})
    ran_hook = subprocess.run(["sh", "-c", hook["command"]], input=payload, env=env, cwd="/",
                              capture_output=True, text=True, timeout=60, check=False)
    assert ran_hook.returncode == 0 and ran_hook.stderr == ""
    ran_line = subprocess.run(["sh", "-c", status_cmd], input="{}", env=env, cwd="/", capture_output=True,
                              text=True, timeout=30, check=False)
    assert ran_line.returncode == 0 and "ctxlamp" in ran_line.stdout and ran_line.stderr == ""
    server = json.loads((config / ".claude.json").read_text())["mcpServers"]["ctxlamp"]
    assert server["command"] == str(python) and server["args"][-1] == "mcp"
    env["PYTHONPATH"] = str(checkout)
    assert subprocess.run([str(python), "-m", "service.cli", "uninstall"], env=env, cwd="/",
                          capture_output=True, timeout=120, check=False).returncode == 0
    assert json.loads((config / "settings.json").read_text()) == {"model": "opus"}


TYPOGRAPHIC = ["\u2018", "\u2019", "\u201a", "\u201b"]  # PowerShell ends a '...' string at each of them


@pytest.mark.parametrize("quote", TYPOGRAPHIC)
def test_windows_words_with_a_typographic_quote_become_their_short_names(quote):
    """In '...' PowerShell reads ‘ ’ ‚ ‛ as the closing quote, sh as a letter: such a word is written as its 8.3 name."""
    script = f"C:\\Users\\O{quote}Brien\\ctxlamp\\service\\statusline\\fast.py"
    python = f"C:\\Users\\O{quote}Brien\\venv\\Scripts\\python.exe"
    shorts = {script: "C:\\Users\\OBRIEN~1\\ctxlamp\\service\\STATUS~1\\fast.py",
              python: "C:\\Users\\OBRIEN~1\\venv\\Scripts\\python.exe",
              f"C:\\Users\\O{quote}Brien\\ctxlamp": "C:\\Users\\OBRIEN~1\\ctxlamp"}
    line = command_line(python, ["-S", portable_path(script, "win32")], system="win32", short_path=shorts.get,
                        env={"PYTHONPATH": f"C:\\Users\\O{quote}Brien\\ctxlamp"})
    assert not any(q in line for q in TYPOGRAPHIC)
    assert shlex.split(line) == ["env", "PYTHONPATH=C:/Users/OBRIEN~1/ctxlamp", "C:/Users/OBRIEN~1/venv/Scripts/python.exe",
                                 "-S", "C:/Users/OBRIEN~1/ctxlamp/service/STATUS~1/fast.py"]


@pytest.mark.parametrize("quote", TYPOGRAPHIC)
def test_windows_words_with_a_typographic_quote_and_no_short_name_are_refused(quote):
    from service.claude.command_line import Unquotable

    with pytest.raises(Unquotable, match="typographic quote"):
        command_line(f"C:\\Users\\O{quote}Brien\\python.exe", ["hook"], system="win32", short_path=lambda p: None)
    with pytest.raises(Unquotable):
        command_line("C:\\Python\\python.exe", [f"C:/O{quote}Brien/fast.py"], system="win32", short_path=lambda p: None)
    # sh takes them as letters: on Linux and macOS the line is unchanged
    assert shlex.split(command_line(f"/home/o{quote}brien/python", ["hook"], system="linux")) == [
        f"/home/o{quote}brien/python", "hook"]
