"""The compiled engine (mypyc, `make compiled`) against the pure-Python one: byte-identical output.

One source, two builds (service/engine_setup/compiled.py builds, service/engine/__init__.py selects). Every
fixture transcript and the demo session are replayed (`ctxlamp replay --jsonl`) and the fixtures, with the demo, reported (`ctxlamp report --json`) by
both builds, in fresh interpreters (`CTXLAMP_ENGINE=pure` for the pure one); the outputs must be the same
bytes. The third-party transcripts beside the checkout join when present. The comparison skips, saying
why, when no compiled build matches the engine's source (CI builds one for its compiled leg; locally
`make compiled`). The selection itself (a stale build never shadows edited source) is tested without a
compiler: the build is a folder the test writes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import service.engine as compiled  # the build's selection lives in the engine package
from service.cli.demo_session import generate
from tests.support.corpus import CC, REAL_FIXTURES, ROOT, copy_fixtures

BUILD_FILES, WHY_NOT = compiled.usable_build(compiled.BUILD, compiled.ROOT)
needs_build = pytest.mark.skipif(BUILD_FILES is None, reason=f"no compiled engine to compare: {WHY_NOT}")


def run_cli(build: str, args: list[str], env: dict[str, str]) -> bytes:
    env = {**env, "TZ": "UTC"}
    env.pop(compiled.FORCE_PURE, None)
    if build == "pure":
        env[compiled.FORCE_PURE] = "pure"
    probe = "import service.engine as e; print(e.build_state['engine'])"
    chosen = subprocess.run([sys.executable, "-P", "-c", probe], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, check=True).stdout.strip()
    assert chosen == build, f"asked for the {build} engine, {chosen} ran"
    r = subprocess.run([sys.executable, "-P", "-m", "service.cli", *args], cwd=ROOT,
                       env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    return r.stdout


def transcripts(claude_dir: Path) -> list[Path]:
    return sorted(p for p in (claude_dir / "projects").rglob("*.jsonl"))


@pytest.fixture(scope="module")
def claude_dir(tmp_path_factory) -> Path:
    dest = copy_fixtures(tmp_path_factory.mktemp("claude"), real=REAL_FIXTURES.is_dir())
    demo = dest / "projects" / "-tmp-ctxlamp-demo"
    demo.mkdir()
    (demo / "demo.jsonl").write_text("".join(json.dumps(e) + "\n" for e in generate("/tmp/ctxlamp-demo")))
    return dest


@needs_build
def test_replay_is_byte_identical_compiled_and_pure(claude_dir, tmp_path):
    env = {**os.environ, "CTXLAMP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    files = transcripts(claude_dir)
    assert len(files) >= len(list(CC.rglob("*.jsonl"))) // 2
    for path in files:
        args = ["replay", "--jsonl", str(path)]
        pure, fast = run_cli("pure", args, env), run_cli("compiled", args, env)
        assert pure.count(b"\n") > 0
        assert fast == pure, f"replay of {path.name} differs between the builds"


@needs_build
def test_report_is_byte_identical_compiled_and_pure(claude_dir, tmp_path):
    outputs = {}
    for build in ("pure", "compiled"):
        # the same home path for both (the report names its folders), emptied between: each report is cold
        shutil.rmtree(tmp_path / "home", ignore_errors=True)
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude_dir), "CTXLAMP_HOME": str(tmp_path / "home"),
               "HOME": str(tmp_path / "user")}
        outputs[build] = run_cli(build, ["report", "--json", "--no-service"], env)
    report = json.loads(outputs["pure"])
    assert report["spend"]["calls"] > 0 and report["restart_savings"]["segments"] > 0
    assert outputs["compiled"] == outputs["pure"]


_PICKLED = """
import pickle
from service.engine import EngineConfig
from service.engine.advice import AdviceBasis
from service.engine_setup.engines import load_prices
prices = load_prices()
config = EngineConfig(ratios={"opus": 1.3}, exclude_globs=("*.lock",), advice=AdviceBasis(horizon_calls=12.0))
p, c = pickle.loads(pickle.dumps(prices)), pickle.loads(pickle.dumps(config))
same = c == config and p.source == prices.source and all(
    p.lookup_at(m, "2026-11-01T09:00:00Z", "fast", "us") == prices.lookup_at(m, "2026-11-01T09:00:00Z", "fast", "us")
    for m in ("claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "no-such-model"))
print(same)
"""


@pytest.mark.parametrize("build", ["pure", "compiled"])
def test_what_a_spawned_worker_is_sent_comes_back_equal(build, tmp_path):
    """The price table and the engine's settings go pickled to spawned workers; the compiled build pickles a
    class as its attributes, which a frozen dataclass refused, so they are rebuilt from their fields."""
    if build == "compiled" and BUILD_FILES is None:
        pytest.skip(f"no compiled engine: {WHY_NOT}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXLAMP_HOME": str(tmp_path)}
    env.pop(compiled.FORCE_PURE, None)
    if build == "pure":
        env[compiled.FORCE_PURE] = "pure"
    out = subprocess.run([sys.executable, "-P", "-c", _PICKLED], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"


# ---- the selection: a build is used only while it matches the source, byte for byte ----

def fake_checkout(tmp_path: Path) -> Path:
    """A copy of the engine's sources (what the manifest hashes), without any compiled build."""
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "service" / "engine", root / "service" / "engine",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for dep in compiled.DEPENDENCIES:
        (root / dep).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / dep, root / dep)
    return root


def fake_build(root: Path, build: Path) -> None:
    """A build folder as `compiled.build` leaves it: a file per module and the manifest of the sources."""
    suffix = compiled.extension_suffix()
    (build / "service" / "engine").mkdir(parents=True)
    for m in compiled.engine_modules(root):
        (build / "service" / "engine" / f"{m}{suffix}").write_bytes(b"")
    (build / f"abc__mypyc{suffix}").write_bytes(b"")
    (build / compiled.MANIFEST).write_text(json.dumps({"suffix": suffix, "sources": compiled.source_hashes(root),
                                                       "shared": "abc__mypyc"}))


def test_a_build_of_the_same_sources_is_chosen(tmp_path):
    root = fake_checkout(tmp_path)
    fake_build(root, tmp_path / "build")
    files, why = compiled.usable_build(tmp_path / "build", root)
    assert files is not None, why
    assert set(files) == {f"service.engine.{m}" for m in compiled.engine_modules(root)} | {"abc__mypyc"}


def test_an_edited_engine_file_makes_the_build_stale(tmp_path):
    root = fake_checkout(tmp_path)
    fake_build(root, tmp_path / "build")
    window = root / "service" / "engine" / "window.py"
    window.write_text(window.read_text() + "\n# edited\n")
    files, why = compiled.usable_build(tmp_path / "build", root)
    assert files is None and "older than the engine's source" in why


def test_a_new_engine_module_or_an_edited_dependency_makes_the_build_stale(tmp_path):
    root = fake_checkout(tmp_path)
    fake_build(root, tmp_path / "build")
    (root / "service" / "engine" / "extra.py").write_text("X = 1\n")
    assert compiled.usable_build(tmp_path / "build", root)[0] is None
    (root / "service" / "engine" / "extra.py").unlink()
    assert compiled.usable_build(tmp_path / "build", root)[0] is not None
    payloads = root / compiled.DEPENDENCIES[0]
    payloads.write_text(payloads.read_text() + "\n")
    assert compiled.usable_build(tmp_path / "build", root)[0] is None


def test_a_build_for_another_python_or_missing_a_module_is_not_used(tmp_path):
    root = fake_checkout(tmp_path)
    build = tmp_path / "build"
    fake_build(root, build)
    next((build / "service" / "engine").iterdir()).unlink()
    assert "incomplete" in compiled.usable_build(build, root)[1]
    manifest = json.loads((build / compiled.MANIFEST).read_text())
    (build / compiled.MANIFEST).write_text(json.dumps({**manifest, "suffix": ".cpython-39-x.so"}))
    assert "another Python" in compiled.usable_build(build, root)[1]
    assert "no compiled build" in compiled.usable_build(tmp_path / "none", root)[1]


def test_pure_is_forced_and_doctor_says_which_engine_runs(tmp_path):
    probe = "import service.engine_setup.compiled as c; print(c.describe())"
    env = {**os.environ, "PYTHONPATH": str(ROOT), compiled.FORCE_PURE: "pure"}
    out = subprocess.run([sys.executable, "-P", "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "the engine runs as pure Python (CTXLAMP_ENGINE=pure)."
    env.pop(compiled.FORCE_PURE)
    out = subprocess.run([sys.executable, "-P", "-m", "service.cli.doctor", "--for-tests"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True).stdout
    said = "the engine runs compiled (mypyc, built from these sources)." if BUILD_FILES else \
        f"the engine runs as pure Python ({WHY_NOT})."
    assert f"ctxlamp doctor: {said}" in out.splitlines()
