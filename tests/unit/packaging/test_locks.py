"""The installs are pinned (requirements/README.md): every dependency of pyproject.toml, and PyInstaller for
`make dist`, is in its lock at one exact version with hashes, and the Makefile installs the locks with
--require-hashes and the project itself with --no-deps."""
from __future__ import annotations

import re
import tomllib

from tests.support.corpus import ROOT

REQ = ROOT / "requirements"
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked(lock: str) -> dict[str, list[str]]:
    """name -> the lines pinning it (one per marker range), each with its hashes."""
    pins: dict[str, list[str]] = {}
    entry = ""
    for line in (REQ / lock).read_text().splitlines() + [""]:
        if line.startswith((" ", "\t")) and entry:
            entry += line
            continue
        if entry and not entry.startswith("#"):
            pins.setdefault(_canonical(_NAME.match(entry).group(1)), []).append(entry)
        entry = line
    return pins


def _wanted(specs: list[str]) -> set[str]:
    return {_canonical(_NAME.match(spec).group(1)) for spec in specs}


def test_every_dependency_is_pinned_with_hashes_in_its_lock():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    dist = [line for line in (REQ / "dist.in").read_text().splitlines() if line and not line.startswith("#")]
    for lock, wanted in (("run.lock", _wanted(project["dependencies"])),
                         ("dev.lock", _wanted(project["dependencies"] + extras["test"] + extras["lint"])),
                         ("dist.lock", _wanted(project["dependencies"] + dist) | {"pyinstaller"})):
        pins = _locked(lock)
        assert wanted <= set(pins), f"{lock} lacks {sorted(wanted - set(pins))}: refresh it (requirements/README.md)"
        for name, lines in pins.items():
            for line in lines:
                assert re.search(r"==[^ ;\\]+", line), f"{lock}: {name} is not pinned to one version"
                assert "--hash=sha256:" in line, f"{lock}: {name} has no hash"


def test_the_compile_lock_pins_the_lint_tools_mypy_with_hashes():
    """`make run` compiles the engine with the mypy `make lint` checks it with (service/engine_setup/compiled.py)."""
    compile_pins, dev_pins = _locked("compile.lock"), _locked("dev.lock")
    assert {"mypy", "setuptools"} <= set(compile_pins)
    for name, lines in compile_pins.items():
        assert all("--hash=sha256:" in line for line in lines), f"compile.lock: {name} has no hash"
        assert [line.split()[0] for line in lines] == [line.split()[0] for line in dev_pins[name]], name
    source = (ROOT / "service" / "engine_setup" / "compiled.py").read_text()
    assert '"--require-hashes", "-r",' in source and 'COMPILE_LOCK = "requirements/compile.lock"' in source


def test_the_makefile_installs_the_locks_with_their_hashes():
    make = (ROOT / "Makefile").read_text()
    for lock in ("run.lock", "dev.lock", "dist.lock"):
        assert f"--require-hashes -r requirements/{lock}" in make
    installs = [line.strip() for line in make.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert all("--require-hashes" in line or "--no-deps" in line for line in installs), installs
