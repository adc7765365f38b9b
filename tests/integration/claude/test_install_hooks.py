"""`ctxlamp install` registers the hooks the installed Claude Code offers (issue 47): SessionStart as
always, PreModelSwitch from 2.1.332; each idempotent, and `uninstall` takes exactly them out."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.claude import settings as cs
from tests.support.corpus import ROOT

USER_SETTINGS = {"model": "opus", "hooks": {
    "PreModelSwitch": [{"matcher": "", "hooks": [{"type": "command", "command": "/usr/bin/their-guard"}]}],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]}}


@pytest.fixture
def config(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "claude-config"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return folder


def ours(settings: dict, event: str) -> list[dict]:
    return [h for g in (settings.get("hooks") or {}).get(event) or [] for h in g.get("hooks") or []
            if cs.is_our_hook(h)]


def install(version) -> cs.Plan:
    return cs.apply_fresh(lambda: cs.plan_install(cs.python_launcher(), version=version))


def test_pre_model_switch_is_registered_where_claude_code_offers_it_idempotent_and_uninstalled(config):
    raw = (json.dumps(USER_SETTINGS, indent=2) + "\n").encode()
    (config / "settings.json").write_bytes(raw)
    older = install((2, 1, 300))  # an older Claude Code: only what it is known to offer
    settings = json.loads((config / "settings.json").read_text())
    assert older.settings_changed and len(ours(settings, "SessionStart")) == 1 and not ours(settings, "PreModelSwitch")
    install((2, 1, 332))
    settings = json.loads((config / "settings.json").read_text())
    (switch,) = ours(settings, "PreModelSwitch")
    assert switch["command"].split()[-2:] == ["hook", "pre-model-switch"] and cs.is_our_hook(switch, "pre-model-switch")
    assert settings["hooks"]["PreModelSwitch"][0] == USER_SETTINGS["hooks"]["PreModelSwitch"][0]  # theirs kept first
    assert len(ours(settings, "SessionStart")) == 1 and not cs.is_our_hook(switch, "session-start")
    assert not install((2, 1, 332)).settings_changed  # twice: nothing changes the second time
    assert not cs.plan_install(cs.python_launcher(), version=(3, 0, 0)).settings_changed
    cs.apply_fresh(cs.plan_uninstall)
    after = json.loads((config / "settings.json").read_text())
    assert after == USER_SETTINGS  # exactly theirs: both of our hooks out, theirs and their events in


def test_uninstall_takes_out_our_pre_model_switch_even_for_an_older_claude_code(config):
    install((2, 1, 332))
    assert ours(json.loads((config / "settings.json").read_text()), "PreModelSwitch")
    cs.apply_fresh(cs.plan_uninstall)
    assert not (config / "settings.json").exists()  # ctxlamp created it: gone again


def test_the_installed_pre_model_switch_command_really_runs_ctxlamp(config, tmp_path):
    install((2, 1, 332))
    (switch,) = ours(json.loads((config / "settings.json").read_text()), "PreModelSwitch")
    doc = {"hook_event_name": "PreModelSwitch", "to_model": "claude-opus-4-5", "context_tokens": 50_000,
           "prompt_cache_warm": True, "estimated_cache_write_usd": 0.31}
    run = subprocess.run(switch["command"], shell=True, input=json.dumps(doc), capture_output=True, text=True,
                         timeout=30, cwd="/", env=dict(os.environ, CTXLAMP_HOME=str(tmp_path / "ctx")))
    assert run.returncode == 0 and "switching to Opus 4.5 rewrites 50k tokens" in json.loads(run.stdout)["systemMessage"]


def test_the_version_is_the_installed_claude_codes_own(config, monkeypatch):
    from tests.support.claude_cli import claude_binary

    binary = claude_binary()  # the pinned CLI, or a loud skip saying why
    monkeypatch.setenv("PATH", str(Path(binary).parent) + os.pathsep + os.environ.get("PATH", ""))
    version = cs.claude_version()
    assert version is not None and version >= (2, 1, 332)
    out = subprocess.run([sys.executable, "-m", "service.cli", "install"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert ours(json.loads((config / "settings.json").read_text()), "PreModelSwitch")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert cs.claude_version() is None and cs.offered_hooks(None) == [("SessionStart", "session-start")]


def test_idle_compaction_is_on_unless_claude_codes_settings_turn_it_off(config):
    assert cs.idle_compaction_on()  # no settings file: Claude Code's default
    path = config / "settings.json"
    path.write_text(json.dumps({"idleCompaction": False}))
    assert not cs.idle_compaction_on()
    path.write_text(json.dumps({"idleCompaction": True, "model": "opus"}) + "\n")  # another size: read again
    assert cs.idle_compaction_on()
    path.write_text("{broken")
    assert cs.idle_compaction_on()
