"""Every Python ctxlamp starts runs ctxlamp's code, whatever folder it is started from.

A project folder often holds a `service/` package (a common name); `python -m service.cli` and
`python -c` would run it in ctxlamp's place, and an empty `service/` folder would hide ctxlamp's
package. Each command ctxlamp writes or starts is run here from such a folder, for real.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from service import __version__

PLANTED = "PLANTED-SERVICE-RAN"


@pytest.fixture(params=["hostile package", "empty folder"])
def project(request, tmp_path) -> Path:
    """A user's project folder with a `service/` of its own (a package that announces itself, or empty)."""
    folder = tmp_path / "project"
    (folder / "service" / "cli").mkdir(parents=True)
    (folder / "service" / "report").mkdir()
    (folder / "PySide6").mkdir()
    if request.param == "hostile package":
        announce = f"import sys\nprint({PLANTED!r}, flush=True)\nsys.exit(97)\n"
        for pkg in ("service", "service/cli", "service/report", "PySide6"):
            (folder / pkg / "__init__.py").write_text(announce)
        (folder / "service" / "cli" / "__main__.py").write_text(announce)
        (folder / "service" / "report" / "spawned.py").write_text(announce)
    return folder


def _run(argv: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, **kw)


def _is_ctxlamp(proc: subprocess.CompletedProcess) -> None:
    assert PLANTED not in proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"ctxlamp {__version__}" in proc.stdout


def _with_version(argv: list[str], last: str) -> list[str]:
    """The same command line asking for `--version` instead of its subcommand `last`."""
    assert argv[-1] == last, argv
    return [*argv[:-1], "--version"]


def test_ctxlamp_start_children_run_ctxlamp(project):
    from service.cli.start import child_argv

    _is_ctxlamp(_run(child_argv(["--version"]), project))


def test_the_trays_service_runs_ctxlamp(project):
    from desktop.connection.supervisor import service_command

    program, args = service_command()
    _is_ctxlamp(_run(_with_version([program, *args], "serve"), project))


@pytest.mark.parametrize("system", ["linux", "win32"])
def test_the_login_entry_runs_ctxlamp(project, system, monkeypatch):
    from desktop.platforms import autostart

    monkeypatch.setattr(autostart.shutil, "which", lambda name: None)  # the `-m` form, as without a script
    _is_ctxlamp(_run(_with_version(autostart.tray_argv(system), "tray"), project))


def test_the_hook_and_mcp_commands_install_writes_run_ctxlamp(project):
    from service.claude import settings as cs

    launcher = cs.python_launcher()  # the `-m` form install writes where no `ctxlamp` script exists
    hook = cs.hook_entry(launcher)["command"]
    assert hook.endswith(" hook session-start")
    _is_ctxlamp(_run(["sh", "-c", hook[: -len("hook session-start")] + "--version"], project))
    mcp = cs.mcp_entry(launcher)
    _is_ctxlamp(_run(_with_version([mcp["command"], *mcp["args"]], "mcp"), project, env=_env(mcp["env"])))


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **extra}


def test_the_reports_spawned_workers_run_ctxlamp(project, monkeypatch):
    from service.report.forked import SpawnedMap

    monkeypatch.chdir(project)  # `ctxlamp report` run from the project's folder
    with SpawnedMap(abs, [-1, -2, -3], workers=2) as results:
        assert sorted(results) == [1, 2, 3]


def test_the_doctors_qt_probe_imports_the_real_qt(project, monkeypatch):
    from service.cli.doctor import qt_problem

    monkeypatch.chdir(project)
    assert qt_problem("offscreen") is None
