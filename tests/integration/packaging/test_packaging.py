"""packaging/: the frozen build runs, and the desktop, systemd and launchd files are valid."""
from __future__ import annotations

import configparser
import json
import plistlib
import shutil
import subprocess
import sys

import pytest

from tests.support.corpus import ROOT, scenario_session

PACKAGING = ROOT / "packaging"


def test_desktop_entry_is_valid():
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is not installed (apt-get install desktop-file-utils)")
    proc = subprocess.run([tool, str(PACKAGING / "ctxlamp.desktop")], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_systemd_unit_and_launchd_plist_start_the_service():
    unit = configparser.ConfigParser(interpolation=None)
    unit.read(PACKAGING / "ctxlamp.service")
    assert unit["Service"]["ExecStart"].endswith("ctxlamp serve")
    assert unit["Install"]["WantedBy"] == "default.target"
    plist = plistlib.loads((PACKAGING / "io.ctxlamp.service.plist").read_bytes())
    assert plist["ProgramArguments"][-1] == "serve" and plist["RunAtLoad"] is True


def test_a_wheel_ships_the_parsed_o200k_table(tmp_path):
    """`pipx install .` builds a wheel: its resources/ carry the table a first run would otherwise build."""
    import zipfile

    from service.engine_setup import tokenizer as ts

    source = tmp_path / "source"  # a copy: setuptools builds inside the tree it is given
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", "tests", "bench", "docs",
        "o200k_base.sorted.marshal"))  # so the table in the wheel is the one setup.py built
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "wheel"), str(source)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("ctxlamp-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {"desktop/app.py", "service/cli/__init__.py", "resources/prices.json"} <= names
        (tmp_path / ts.FAST_NAME).write_bytes(zf.read("resources/" + ts.FAST_NAME))
        requires = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    table = ts._read_table(tmp_path / ts.FAST_NAME)
    assert table is not None and len(table["tokens"]) > 199_000
    assert "Requires-Dist: PySide6-Essentials" in requires  # the tray comes with a plain install


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    if shutil.which("pyinstaller", path=str(ROOT / ".venv" / "bin")) is None and shutil.which("pyinstaller") is None:
        pytest.skip("pyinstaller is not installed")
    out = tmp_path_factory.mktemp("frozen")
    proc = subprocess.run([sys.executable, "-m", "PyInstaller", str(PACKAGING / "ctxlamp.spec"), "--noconfirm",
                           "--distpath", str(out / "dist"), "--workpath", str(out / "work"), "--log-level", "ERROR"],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / "dist" / "ctxlamp" / "ctxlamp"


def test_frozen_build_reports_its_version(frozen):
    proc = subprocess.run([str(frozen), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("ctxlamp ")


def test_frozen_replay_matches_the_source_tree(frozen, tmp_path):
    fixture = scenario_session("long-session")
    env = {"CTXLAMP_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    frozen_out = subprocess.run([str(frozen), "replay", str(fixture), "--jsonl"], capture_output=True,
                                timeout=120, env=env)
    source_out = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(fixture), "--jsonl"],
                                capture_output=True, timeout=120, cwd=ROOT, env={**env, "PATH": "/usr/bin:/bin"})
    assert frozen_out.returncode == 0, frozen_out.stderr
    a = [json.loads(x) for x in frozen_out.stdout.splitlines()]
    b = [json.loads(x) for x in source_out.stdout.splitlines()]
    assert a == b and a[-1]["event"] == "end"
