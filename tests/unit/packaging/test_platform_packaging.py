"""Packaging per system: the spec builds a folder with `ctxlamp` on Linux, `ctxlamp.exe` (and the
windowless `ctxlampw.exe`) on Windows, a menu-bar-only `ctxlamp.app` on macOS. The spec is run
here with PyInstaller's build steps recorded, for each system's plan."""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from desktop.connection import supervisor

from desktop.platforms import autostart
from tests.support.corpus import ROOT

sys.path.insert(0, str(ROOT / "packaging"))
import targets  # packaging/ is not a package: on sys.path above


def _run_spec(system: str, monkeypatch) -> dict:
    """Execute ctxlamp.spec as PyInstaller would, with its build steps recorded instead of run."""
    made: dict = {"exe": [], "bundle": None, "collect": None}
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_data_files = lambda package, includes=(): [(package, i) for i in includes]
    hooks.collect_submodules = lambda package: [package]
    for name in ("PyInstaller", "PyInstaller.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)
    monkeypatch.setattr(sys, "platform", system)

    def exe(pyz, scripts, binaries, **kw):
        made["exe"].append((kw["name"], kw["console"]))
        return kw["name"]

    def bundle(coll, **kw):
        made["bundle"] = kw

    def collect(*parts, **kw):
        made["collect"] = (parts, kw["name"])

    spec_globals = {"SPECPATH": str(ROOT / "packaging"), "__name__": "__spec__",
                    "Analysis": lambda *a, **k: types.SimpleNamespace(pure=[], scripts=[], binaries=["b"], datas=["d"]),
                    "PYZ": lambda pure: "pyz", "EXE": exe, "COLLECT": collect, "BUNDLE": bundle}
    spec = compile((ROOT / "packaging" / "ctxlamp.spec").read_text(), "ctxlamp.spec", "exec")
    exec(spec, spec_globals)  # noqa: S102 - our own spec file, run as PyInstaller runs it
    return made


def test_linux_builds_one_folder_with_ctxlamp(monkeypatch):
    made = _run_spec("linux", monkeypatch)
    assert made["exe"] == [("ctxlamp", True)] and made["bundle"] is None
    assert made["collect"] == (("ctxlamp", ["b"], ["d"]), "ctxlamp")


def test_windows_builds_a_folder_with_ctxlamp_exe_and_a_windowless_tray(monkeypatch):
    made = _run_spec("win32", monkeypatch)
    assert made["exe"] == [("ctxlamp", True), ("ctxlampw", False)] and made["bundle"] is None
    assert made["collect"][0][:2] == ("ctxlamp", "ctxlampw")  # one folder, shared libraries


def test_macos_builds_a_menu_bar_only_app(monkeypatch):
    made = _run_spec("darwin", monkeypatch)
    assert made["exe"] == [("ctxlamp", False)]
    bundle = made["bundle"]
    assert bundle["name"] == "ctxlamp.app" and bundle["bundle_identifier"] == "io.ctxlamp.tray"
    assert bundle["info_plist"]["LSUIElement"] is True  # no Dock icon, no app menu


def test_make_dist_says_where_the_program_is():
    assert targets.built_executable("linux", "dist") == "dist/ctxlamp/ctxlamp"
    assert targets.built_executable("win32", "dist") == "dist\\ctxlamp\\ctxlamp.exe"
    assert targets.built_executable("darwin", "dist") == "dist/ctxlamp.app/Contents/MacOS/ctxlamp"
    makefile = (ROOT / "Makefile").read_text()
    assert "dist: $(RUN_STAMP)" in makefile and "packaging/ctxlamp.spec" in makefile


@pytest.mark.parametrize("system", ["linux", "darwin", "win32"])
def test_the_packaged_tray_starts_its_service_and_itself_at_login(system, monkeypatch, tmp_path):
    exe = tmp_path / ("ctxlamp.exe" if system == "win32" else "ctxlamp")
    exe.touch()
    (tmp_path / "ctxlampw.exe").touch()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(exe))
    assert supervisor.service_command() == (str(exe), ["serve"])
    want = tmp_path / "ctxlampw.exe" if system == "win32" else exe
    assert autostart.tray_argv(system) == [str(want)]
    assert Path(want).exists()
