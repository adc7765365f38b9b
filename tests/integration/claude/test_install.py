"""`ctxlamp install` / `uninstall`: Claude Code's settings and MCP config, edited with care."""
from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from service.claude import settings as cs
from tests.support.corpus import ROOT


USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi", "timeout": 3}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/guard"}]}],
    },
    "env": {"FOO": "1"},
}
USER_CLAUDE_JSON = {
    "numStartups": 12,
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {}}},
    "mcpServers": {"other": {"type": "stdio", "command": "/usr/bin/other", "args": [], "env": {}}},
    "theme": "dark",
}


def ctxlamp(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60, **kw)


@pytest.fixture
def claude_env(tmp_path):
    """A Claude Code config folder of its own (CLAUDE_CONFIG_DIR), and a HOME that must stay untouched."""
    config = tmp_path / "claude-config"
    config.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), CLAUDE_CONFIG_DIR=str(config))
    return env, config, home


def write_json(path: Path, data) -> bytes:
    raw = (json.dumps(data, indent=4) + "\n").encode()
    path.write_bytes(raw)
    return raw


def test_install_adds_hook_and_server_keeps_everything_else_and_backs_up(claude_env):
    env, config, home = claude_env
    raw_settings = write_json(config / "settings.json", USER_SETTINGS)
    raw_claude = write_json(config / ".claude.json", USER_CLAUDE_JSON)
    out = ctxlamp(["install"], env)
    assert out.returncode == 0, out.stderr
    settings_now = json.loads((config / "settings.json").read_text())
    claude_now = json.loads((config / ".claude.json").read_text())
    # every other key kept, in its order
    assert [k for k in settings_now if k != "statusLine"] == list(USER_SETTINGS)  # ours is added (issue 16)
    assert settings_now["permissions"] == USER_SETTINGS["permissions"] and settings_now["env"] == {"FOO": "1"}
    assert settings_now["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    groups = settings_now["hooks"]["SessionStart"]
    assert groups[0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert len(groups) == 2 and groups[1]["matcher"] == ""
    (hook,) = groups[1]["hooks"]
    assert hook["type"] == "command" and hook["timeout"] == 5
    words = shlex.split(hook["command"])
    assert words[-2:] == ["hook", "session-start"]
    exe = next(w for w in words if not w.startswith("env") and "=" not in w)
    assert Path(exe).is_absolute() and os.access(exe, os.X_OK)
    assert {k: v for k, v in claude_now.items() if k != "mcpServers"} == {k: v for k, v in USER_CLAUDE_JSON.items() if k != "mcpServers"}
    assert claude_now["mcpServers"]["other"] == USER_CLAUDE_JSON["mcpServers"]["other"]
    server = claude_now["mcpServers"]["ctxlamp"]
    assert server["type"] == "stdio" and Path(server["command"]).is_absolute() and server["args"][-1] == "mcp"
    assert isinstance(server["env"], dict)
    # backups hold the files as they were
    assert (config / "settings.json.ctxlamp-backup").read_bytes() == raw_settings
    assert (config / ".claude.json.ctxlamp-backup").read_bytes() == raw_claude
    # HOME was left alone: CLAUDE_CONFIG_DIR decides
    assert list(home.iterdir()) == []


def test_installed_commands_really_start_ctxlamp(claude_env):
    env, config, _ = claude_env
    assert ctxlamp(["install"], env).returncode == 0
    hook = json.loads((config / "settings.json").read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    run = subprocess.run(hook, shell=True, input="not json", capture_output=True, text=True, timeout=30, cwd="/",
                         env=dict(env, CTXLAMP_HOME=str(config / "ctx")))
    assert run.returncode == 0
    server = json.loads((config / ".claude.json").read_text())["mcpServers"]["ctxlamp"]
    probe = subprocess.run([server["command"], *server["args"][:-1], "mcp", "--help"], capture_output=True, text=True,
                           timeout=30, cwd="/", env=dict(env, **server["env"]))
    assert probe.returncode == 0 and "mcp" in probe.stdout


def test_install_twice_changes_nothing_the_second_time(claude_env):
    env, config, _ = claude_env
    write_json(config / "settings.json", USER_SETTINGS)
    assert ctxlamp(["install"], env).returncode == 0
    first = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in config.iterdir()}
    again = ctxlamp(["install"], env)
    assert again.returncode == 0 and "already in" in again.stdout
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in config.iterdir()} == first
    hooks = json.loads((config / "settings.json").read_text())["hooks"]["SessionStart"]
    assert sum(1 for g in hooks for h in g["hooks"] if cs.is_our_hook(h)) == 1


def test_an_older_ctxlamp_hook_is_updated_in_place_not_duplicated(claude_env):
    env, config, _ = claude_env
    stale = {"hooks": {"SessionStart": [{"matcher": "", "hooks": [
        {"type": "command", "command": "echo keep"},
        {"type": "command", "command": "/old/place/bin/ctxlamp hook session-start", "timeout": 5}]}]}}
    write_json(config / "settings.json", stale)
    assert ctxlamp(["install"], env).returncode == 0
    (group,) = json.loads((config / "settings.json").read_text())["hooks"]["SessionStart"]
    assert group["hooks"][0] == {"type": "command", "command": "echo keep"}
    assert len(group["hooks"]) == 2 and "/old/place" not in group["hooks"][1]["command"]


def test_dry_run_prints_a_diff_and_writes_nothing(claude_env):
    env, config, _ = claude_env
    raw = write_json(config / "settings.json", USER_SETTINGS)
    out = ctxlamp(["install", "--dry-run"], env)
    assert out.returncode == 0
    assert f"--- {config / 'settings.json'}" in out.stdout and "+++ " in out.stdout
    assert "+            \"command\":" in out.stdout or "hook session-start" in out.stdout
    assert "\"mcpServers\"" in out.stdout
    assert sorted(p.name for p in config.iterdir()) == ["settings.json"]
    assert (config / "settings.json").read_bytes() == raw


@pytest.mark.parametrize("text", ["{\"hooks\": {", "[1, 2]", "{\"hooks\": []}", "{\"hooks\": {\"SessionStart\": {}}}"])
def test_malformed_settings_are_reported_and_left_untouched(claude_env, text):
    env, config, _ = claude_env
    (config / "settings.json").write_text(text)
    raw_claude = write_json(config / ".claude.json", USER_CLAUDE_JSON)
    out = ctxlamp(["install"], env)
    assert out.returncode == 1
    assert "settings.json" in out.stderr and "nothing was changed" in out.stderr
    assert (config / "settings.json").read_text() == text
    assert (config / ".claude.json").read_bytes() == raw_claude  # neither file is written when one is bad
    assert not list(config.glob("*.ctxlamp-backup"))


def test_malformed_mcp_config_is_refused_too(claude_env):
    env, config, _ = claude_env
    (config / ".claude.json").write_text("{\"mcpServers\": \"nope\"}")
    out = ctxlamp(["install"], env)
    assert out.returncode == 1 and ".claude.json" in out.stderr
    assert not (config / "settings.json").exists()


def test_read_only_file_is_refused_untouched(claude_env):
    env, config, _ = claude_env
    raw = write_json(config / "settings.json", USER_SETTINGS)
    os.chmod(config / "settings.json", 0o444)
    try:
        out = ctxlamp(["install"], env)
        assert out.returncode == 1 and "read-only" in out.stderr
        assert (config / "settings.json").read_bytes() == raw
        assert stat.S_IMODE((config / "settings.json").stat().st_mode) == 0o444
        assert not (config / ".claude.json").exists()
    finally:
        os.chmod(config / "settings.json", 0o644)


def test_uninstall_is_the_exact_inverse(claude_env):
    env, config, _ = claude_env
    write_json(config / "settings.json", USER_SETTINGS)
    write_json(config / ".claude.json", USER_CLAUDE_JSON)
    os.chmod(config / ".claude.json", 0o600)
    assert ctxlamp(["install"], env).returncode == 0
    out = ctxlamp(["uninstall"], env)
    assert out.returncode == 0, out.stderr
    after_settings = json.loads((config / "settings.json").read_text())
    after_claude = json.loads((config / ".claude.json").read_text())
    assert after_settings == USER_SETTINGS and list(after_settings) == list(USER_SETTINGS)
    assert after_claude == USER_CLAUDE_JSON and list(after_claude) == list(USER_CLAUDE_JSON)
    assert stat.S_IMODE((config / ".claude.json").stat().st_mode) == 0o600
    again = ctxlamp(["uninstall"], env)
    assert again.returncode == 0 and "not in" in again.stdout


def test_uninstall_removes_files_that_install_created(claude_env):
    env, config, _ = claude_env
    assert ctxlamp(["install"], env).returncode == 0
    assert (config / "settings.json").exists() and (config / ".claude.json").exists()
    assert ctxlamp(["uninstall"], env).returncode == 0
    assert list(config.iterdir()) == []


def test_without_claude_config_dir_the_home_files_are_used(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(home)
    assert ctxlamp(["install"], env).returncode == 0
    assert cs.is_our_hook(json.loads((home / ".claude" / "settings.json").read_text())["hooks"]["SessionStart"][0]["hooks"][0])
    assert "ctxlamp" in json.loads((home / ".claude.json").read_text())["mcpServers"]


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)
OTHER_HOOK = st.fixed_dictionaries({"type": st.just("command"), "command": st.sampled_from(["echo a", "/bin/true", "ctxlampish x"])})
SETTINGS = st.dictionaries(st.text(max_size=6).filter(lambda k: k != "hooks"), JSON, max_size=4).flatmap(
    lambda base: st.one_of(
        st.just(base),
        st.dictionaries(st.sampled_from(["SessionStart", "Stop", "PreToolUse"]),
                        st.lists(st.fixed_dictionaries({"matcher": st.sampled_from(["", "startup"]),
                                                        "hooks": st.lists(OTHER_HOOK, max_size=2)}), max_size=2),
                        max_size=2).map(lambda hooks: {**base, "hooks": hooks})))
CLAUDE_JSON = st.dictionaries(st.text(max_size=6).filter(lambda k: k != "mcpServers"), JSON, max_size=4).flatmap(
    lambda base: st.one_of(st.just(base), st.dictionaries(st.text(min_size=1, max_size=4).filter(lambda k: k != "ctxlamp"),
                                                           JSON, max_size=2).map(lambda s: {**base, "mcpServers": s})))


@given(SETTINGS, CLAUDE_JSON)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_install_then_uninstall_restores_any_settings(tmp_path_factory, monkeypatch_session, user_settings, user_claude):
    folder = tmp_path_factory.mktemp("cfg")
    monkeypatch_session.setenv("CLAUDE_CONFIG_DIR", str(folder))
    (folder / "settings.json").write_text(json.dumps(user_settings))
    (folder / ".claude.json").write_text(json.dumps(user_claude))
    launcher = cs.Launcher("/opt/ctxlamp/bin/ctxlamp", [], {})
    cs.plan_install(launcher).apply()
    installed = json.loads((folder / "settings.json").read_text())
    assert sum(1 for g in installed["hooks"]["SessionStart"] for h in g["hooks"] if cs.is_our_hook(h)) == 1
    assert cs.plan_install(launcher).changed() == []  # idempotent
    cs.plan_uninstall().apply()
    assert (folder / "settings.json").read_text() == json.dumps(user_settings)  # byte for byte (issue 51)
    assert (folder / ".claude.json").read_text() == json.dumps(user_claude)
    assert not any(p.name.endswith(cs.BACKUP_SUFFIX) for p in folder.iterdir())


@pytest.fixture
def monkeypatch_session():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_source_checkout_launcher_runs_from_anywhere_and_is_recognised(tmp_path):
    """Without a `ctxlamp` script: `<python> -m service.cli`, with PYTHONPATH when needed."""
    launcher = cs.Launcher(sys.executable, ["-m", "service.cli"], {"PYTHONPATH": str(ROOT)})
    entry = cs.hook_entry(launcher)
    assert cs.is_our_hook(entry) and cs.is_our_server(cs.mcp_entry(launcher))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CTXLAMP_HOME"] = str(tmp_path)
    run = subprocess.run(entry["command"], shell=True, input="{}", capture_output=True, text=True, timeout=30,
                         cwd="/", env=env)
    assert run.returncode == 0 and run.stderr == ""
    assert not cs.is_our_hook({"type": "command", "command": "/usr/bin/notctxlamp hook session-start"})
    assert not cs.is_our_hook({"type": "command", "command": "ctxlamp hook session-start --other"})


# ---- symlinked files (dotfile managers keep them so) -------------------------------------------

@pytest.mark.skipif(os.name != "posix", reason="symlinks as dotfile managers make them")
def test_a_symlinked_settings_file_is_edited_at_its_target_and_stays_a_link(claude_env, tmp_path):
    env, config, _ = claude_env
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    raw_settings = write_json(dotfiles / "settings.json", USER_SETTINGS)
    raw_claude = write_json(dotfiles / "claude.json", USER_CLAUDE_JSON)
    (config / "settings.json").symlink_to(dotfiles / "settings.json")
    (config / ".claude.json").symlink_to(Path("..") / "dotfiles" / "claude" / "claude.json")  # a relative link
    out = ctxlamp(["install"], env)
    assert out.returncode == 0, out.stderr
    assert f"{(dotfiles / 'settings.json').resolve()} (the target of the link {config / 'settings.json'})" in out.stdout
    for name, target in (("settings.json", "settings.json"), (".claude.json", "claude.json")):
        assert (config / name).is_symlink() and (config / name).resolve() == (dotfiles / target).resolve()
    assert cs.is_our_hook(json.loads((dotfiles / "settings.json").read_text())["hooks"]["SessionStart"][1]["hooks"][0])
    assert "ctxlamp" in json.loads((dotfiles / "claude.json").read_text())["mcpServers"]
    # the backups sit beside the names Claude Code reads, not in the dotfile repository
    assert (config / "settings.json.ctxlamp-backup").read_bytes() == raw_settings
    assert (config / ".claude.json.ctxlamp-backup").read_bytes() == raw_claude
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude.json", "settings.json"]
    again = ctxlamp(["install"], env)
    assert again.returncode == 0 and (config / "settings.json").is_symlink()
    out = ctxlamp(["uninstall"], env)
    assert out.returncode == 0, out.stderr
    assert (config / "settings.json").is_symlink() and (config / ".claude.json").is_symlink()
    assert json.loads((dotfiles / "settings.json").read_text()) == USER_SETTINGS
    assert json.loads((dotfiles / "claude.json").read_text()) == USER_CLAUDE_JSON


@pytest.mark.skipif(os.name != "posix", reason="symlinks as dotfile managers make them")
def test_a_link_to_a_file_not_there_yet_is_created_at_its_target_and_uninstall_takes_it_back(claude_env, tmp_path):
    env, config, _ = claude_env
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (config / "settings.json").symlink_to(dotfiles / "settings.json")
    assert ctxlamp(["install"], env).returncode == 0
    assert (config / "settings.json").is_symlink() and (dotfiles / "settings.json").is_file()
    assert ctxlamp(["uninstall"], env).returncode == 0
    assert (config / "settings.json").is_symlink() and not (dotfiles / "settings.json").exists()


# -- issue 51: byte for byte, layouts kept, backups that are the user's own ----------------------------

LAYOUTS = st.builds(cs.Layout, st.sampled_from([None, 1, 2, 4, "\t"]), st.sampled_from([",", ", "]),
                    st.sampled_from([": ", ":"]), st.booleans(), st.booleans())


@given(st.dictionaries(st.text(max_size=5), JSON, max_size=4), LAYOUTS)
@settings(max_examples=200, deadline=None)
def test_a_file_s_layout_is_read_back_from_the_file_itself(data, layout):
    text = layout.dumps(data)
    assert cs.Layout.of(text).dumps(data) == text


def test_uninstall_gives_a_compact_file_back_byte_for_byte_and_keeps_no_backup(claude_env):
    env, config, _ = claude_env
    raw = b'{"model":"opus","env":{"FOO":"1"},"theme":"dark"}'  # compact, no last newline
    (config / "settings.json").write_bytes(raw)
    assert ctxlamp(["install"], env).returncode == 0
    assert (config / "settings.json.ctxlamp-backup").read_bytes() == raw
    installed = (config / "settings.json").read_text()
    assert "\n" not in installed and '"model":"opus"' in installed  # the layout kept while installed too
    out = ctxlamp(["uninstall"], env)
    assert out.returncode == 0, out.stderr
    assert (config / "settings.json").read_bytes() == raw
    assert not (config / "settings.json.ctxlamp-backup").exists()


def test_a_second_install_never_backs_up_the_installed_state(claude_env):
    env, config, _ = claude_env
    raw = write_json(config / "settings.json", USER_SETTINGS)
    assert ctxlamp(["install"], env).returncode == 0
    # the clone moved: install again from elsewhere rewrites our commands, and the backup stays the user's
    settings_now = json.loads((config / "settings.json").read_text())
    hook = settings_now["hooks"]["SessionStart"][1]["hooks"][0]
    hook["command"] = "/old/clone/.venv/bin/ctxlamp hook session-start"
    write_json(config / "settings.json", settings_now)
    again = ctxlamp(["install"], env)
    assert again.returncode == 0 and "installed in" in again.stdout
    assert (config / "settings.json.ctxlamp-backup").read_bytes() == raw
    assert ctxlamp(["uninstall"], env).returncode == 0
    assert json.loads((config / "settings.json").read_text()) == USER_SETTINGS


def test_a_file_changed_since_install_loses_only_ctxlamp_s_keys_and_keeps_its_tabs(claude_env):
    env, config, _ = claude_env
    (config / "settings.json").write_text(json.dumps({"model": "opus"}, indent="\t") + "\n")
    assert ctxlamp(["install"], env).returncode == 0
    now = json.loads((config / "settings.json").read_text())
    now["env"] = {"ADDED": "later"}  # the user (or Claude Code) changed the file since
    (config / "settings.json").write_text(json.dumps(now, indent="\t") + "\n")
    assert ctxlamp(["uninstall"], env).returncode == 0
    text = (config / "settings.json").read_text()
    assert text == json.dumps({"model": "opus", "env": {"ADDED": "later"}}, indent="\t") + "\n"
    assert not (config / "settings.json.ctxlamp-backup").exists()


def test_install_help_names_the_status_line():
    out = ctxlamp(["install", "--help"], dict(os.environ))
    assert out.returncode == 0 and "status line" in out.stdout


def test_doctor_says_what_moving_the_clone_breaks_and_names_a_command_whose_file_is_gone(claude_env, tmp_path):
    env, config, _ = claude_env
    env = dict(env, CTXLAMP_HOME=str(tmp_path / "ctx"), QT_QPA_PLATFORM="offscreen")
    out = ctxlamp(["install"], env)
    assert out.returncode == 0 and "moving or deleting that folder breaks them" in out.stdout
    doctor = ctxlamp(["doctor"], env)
    assert doctor.returncode == 0 and str(ROOT) in doctor.stdout and "run `ctxlamp install` again" in doctor.stdout
    moved = tmp_path / "moved-away" / "python3"
    settings_now = json.loads((config / "settings.json").read_text())
    settings_now["statusLine"]["command"] = f"{moved} -S {ROOT}/service/statusline/fast.py"
    (config / "settings.json").write_text(json.dumps(settings_now))
    doctor = ctxlamp(["doctor"], env)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert f"status line runs {moved}, which is not there any more" in doctor.stderr
    assert "Everything ctxlamp needs is here" not in doctor.stdout
