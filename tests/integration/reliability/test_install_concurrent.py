"""`ctxlamp install` while another program keeps editing the same files.

Claude Code rewrites `.claude.json` all the time (startup counters, per-project
state) and `settings.json` when the user changes a setting. Here two writers
edit them in a loop (read, add a key of their own, swap the new version in
atomically and give back what they displaced if it was not what they read, as a
careful editor does; Linux renameat2) while
`ctxlamp install` and `ctxlamp uninstall` run. Whatever the interleaving, each
file must end as valid JSON that still holds every key the other program
wrote, and -- when install says it succeeded -- our hook and server; or install
must refuse cleanly (exit 1, a message, the files as the other program left them).
tests/integration/claude/test_install.py covers malformed and read-only files.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from service.claude import settings as cs
from tests.support.corpus import ROOT

WRITER = r"""
import ctypes, json, os, sys, time
path, stop, prefix, ready = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
def swap(a, b):  # atomic exchange: what we displaced lands in `a`
    assert renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0, ctypes.get_errno()
written = []
n = 0
while not os.path.exists(stop):
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        data = json.loads(text)
    except (OSError, ValueError):
        time.sleep(0.001)
        continue
    data[f"{prefix}{n}"] = n
    tmp = f"{path}.{os.getpid()}.other-tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2))
    swap(tmp, path)
    with open(tmp, encoding="utf-8") as fh:
        displaced = fh.read()
    if displaced == text:
        written.append(n)
        n += 1
        if n == 1:
            open(ready, "w").close()
    else:  # someone wrote meanwhile: give their version back, try again
        swap(tmp, path)
    os.unlink(tmp)
    time.sleep(0.010)
print(json.dumps(written))
"""


def _ctxlamp(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def _our_hook_in(data: dict) -> bool:
    return any(cs.is_our_hook(h) for group in (data.get("hooks") or {}).get("SessionStart") or []
               for h in group.get("hooks") or [])


def _our_server_in(data: dict) -> bool:
    return cs.is_our_server((data.get("mcpServers") or {}).get("ctxlamp"))


def test_install_and_uninstall_while_claude_code_edits_the_same_files(tmp_path):
    config, home = tmp_path / "claude-config", tmp_path / "home"
    config.mkdir()
    home.mkdir()
    settings, claude_json = config / "settings.json", config / ".claude.json"
    settings.write_text(json.dumps({"model": "opus", "env": {"FOO": "1"}}, indent=2))
    claude_json.write_text(json.dumps({"numStartups": 3, "mcpServers": {}}, indent=2))
    env = dict(os.environ, HOME=str(home), CLAUDE_CONFIG_DIR=str(config))
    for round_, command in enumerate(["install", "uninstall", "install"]):
        stop = tmp_path / f"stop-{round_}"
        ready = {path: tmp_path / f"ready-{round_}-{path.name}" for path in (settings, claude_json)}
        writers = {path: subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop), f"r{round_}_",
                                           str(ready[path])], stdout=subprocess.PIPE, text=True)
                   for path in (settings, claude_json)}
        try:
            deadline = time.monotonic() + 20
            while not all(r.exists() for r in ready.values()) and time.monotonic() < deadline:
                time.sleep(0.005)
            assert all(r.exists() for r in ready.values()), "the other programs were not writing yet"
            out = _ctxlamp([command], env)
            time.sleep(0.05)  # a few more edits after ours
        finally:
            stop.touch()
            written = {path: json.loads(w.communicate(timeout=30)[0]) for path, w in writers.items()}
        assert all(written.values()), "the other program never got a write in"
        for path, keys in written.items():
            data = json.loads(path.read_text())  # valid JSON whatever happened
            lost = [n for n in keys if data.get(f"r{round_}_{n}") != n]
            assert not lost, f"{command} lost the other program's writes {lost} to {path.name}: {out.stderr}"
        final_settings, final_mcp = json.loads(settings.read_text()), json.loads(claude_json.read_text())
        if out.returncode == 0:
            want = command == "install"
            assert _our_hook_in(final_settings) is want, (command, final_settings)
            assert _our_server_in(final_mcp) is want, (command, final_mcp)
        else:  # a clean refusal names the file and says nothing was changed by us
            assert out.returncode == 1 and "changed" in out.stderr, (out.returncode, out.stderr)
        assert final_settings["model"] == "opus" and final_settings["env"] == {"FOO": "1"}
        assert final_mcp["numStartups"] == 3
        for backup in config.glob("*.ctxlamp-backup"):
            json.loads(backup.read_text())  # a backup is a whole, valid earlier version
