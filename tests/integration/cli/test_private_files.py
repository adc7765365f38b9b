"""ctxlamp's folders are 0700 and its logs 0600, whichever process comes first (issue 25, attack 7).

Each process runs with a permissive umask (0), so a mode the code does not set itself shows.
"""
from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from service.client.privdir import make_private_dirs
from tests.support.corpus import ROOT
from tests.support.harness import service_env

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def folders_below(top: Path) -> list[Path]:
    return [top, *(p for p in top.rglob("*") if p.is_dir())]


def env_without_home(tmp_path: Path) -> dict:
    """No CTXLAMP_HOME: the data folder is $XDG_DATA_HOME/ctxlamp (not there yet), the runtime folder under it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "XDG_", "CLAUDE_PID"))}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg" / "share"), XDG_CONFIG_HOME=str(tmp_path / "xdg" / "config"),
               HOME=str(tmp_path / "home"), CLAUDE_CONFIG_DIR=str(tmp_path / "claude"), NO_COLOR="1")
    return env


def run(args: list[str], env: dict, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(args, check=False, input=stdin, env=env, cwd=ROOT, capture_output=True, timeout=60,
                          preexec_fn=lambda: os.umask(0))


@pytest.fixture(autouse=True)
def permissive_umask():
    old = os.umask(0)
    yield
    os.umask(old)


def test_the_helper_makes_each_missing_folder_private_and_leaves_others(tmp_path):
    (tmp_path / "there").mkdir(mode=0o755)
    os.chmod(tmp_path / "there", 0o755)
    made = make_private_dirs(tmp_path / "there" / "a" / "b" / "c")
    assert made == str(tmp_path / "there" / "a" / "b" / "c")
    assert [mode(tmp_path / "there" / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    assert mode(tmp_path / "there") == 0o755  # not ours to change
    make_private_dirs(tmp_path / "there" / "a" / "b" / "c")  # again: nothing happens


def test_the_status_line_run_first_makes_private_folders(tmp_path):
    env = env_without_home(tmp_path)
    proc = run([sys.executable, "-S", str(ROOT / "service" / "statusline" / "fast.py")], env,
               json.dumps({"session_id": "s1", "model": {"display_name": "Opus"}}).encode())
    assert proc.returncode == 0
    made = tmp_path / "xdg"
    assert (made / "share" / "ctxlamp" / "run" / "statusline").is_dir()
    assert {str(p.relative_to(tmp_path)): mode(p) for p in folders_below(made)} == \
        {str(p.relative_to(tmp_path)): 0o700 for p in folders_below(made)}


def test_the_hook_run_first_makes_private_folders(tmp_path):
    env = dict(env_without_home(tmp_path), CLAUDE_PID=str(os.getpid()))
    payload = {"session_id": "s1", "transcript_path": "/nowhere/s1.jsonl", "cwd": "/work/p",
               "hook_event_name": "SessionStart", "source": "startup"}
    proc = run([sys.executable, "-m", "service.cli", "hook", "session-start"], env, json.dumps(payload).encode())
    assert proc.returncode == 0
    made = tmp_path / "xdg"
    assert (made / "share" / "ctxlamp" / "run" / "sessions").is_dir()
    assert all(mode(p) == 0o700 for p in folders_below(made)), {str(p): oct(mode(p)) for p in folders_below(made)}


def test_the_cli_writing_a_file_first_makes_private_folders(tmp_path):
    from service.client.privdir import write_private

    write_private(tmp_path / "new" / "deeper" / "api.json", b"{}")
    assert mode(tmp_path / "new") == mode(tmp_path / "new" / "deeper") == 0o700
    assert mode(tmp_path / "new" / "deeper" / "api.json") == 0o600


def test_the_store_opening_first_makes_private_folders(tmp_path):
    from models.database import open_database

    db = open_database(tmp_path / "a" / "b" / "ctxlamp.db")
    db.close()
    assert mode(tmp_path / "a") == mode(tmp_path / "a" / "b") == 0o700


def test_the_service_log_and_each_rotated_one_are_private(tmp_path):
    from service.daemon.runtime import PrivateRotatingFileHandler

    path = tmp_path / "service.log"
    handler = PrivateRotatingFileHandler(path, maxBytes=2000, backupCount=3, encoding="utf-8")
    logger = logging.getLogger("ctxlamp.test-private-log")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        for i in range(200):
            logger.warning("line %d %s", i, "x" * 50)
    finally:
        logger.removeHandler(handler)
        handler.close()
    logs = sorted(tmp_path.glob("service.log*"))
    assert [p.name for p in logs] == ["service.log", "service.log.1", "service.log.2", "service.log.3"]
    assert {p.name: mode(p) for p in logs} == {p.name: 0o600 for p in logs}


def test_the_service_started_first_makes_private_folders_and_log(tmp_path):
    """`ctxlamp serve` under a umask of 0 with nothing there yet."""
    from tests.support.servicectl import running_service

    (tmp_path / "a").mkdir()  # servicectl keeps the service's output beside CTXLAMP_HOME
    home = tmp_path / "a" / "ctx"
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    env = service_env(home, claude)
    umask_zero = "import os, sys; os.umask(0); os.execv(sys.argv[1], sys.argv[1:])"
    with running_service(env, home, prefix=(sys.executable, "-c", umask_zero)):
        pass
    assert all(mode(p) == 0o700 for p in folders_below(home)), {str(p): oct(mode(p)) for p in folders_below(home)}
    assert mode(home / "service.log") == 0o600
    assert all(mode(p) == 0o600 for p in home.iterdir() if p.is_file()), \
        {p.name: oct(mode(p)) for p in home.iterdir() if p.is_file()}


def test_a_link_planted_at_the_temporary_name_is_not_written_through(tmp_path):
    """write_private's temporary name is predictable (`.name.<pid>-<thread>.tmp`): a link waiting there is
    removed and the file is created afresh, so the link's target keeps its bytes and mode."""
    import os
    import threading

    from service.client.privdir import write_private

    target = tmp_path / "victim.txt"
    target.write_text("theirs")
    target.chmod(0o644)
    path = tmp_path / "data" / "api.json"
    path.parent.mkdir(mode=0o700)
    (path.parent / f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp").symlink_to(target)
    write_private(path, b"ours")
    assert path.read_bytes() == b"ours" and not path.is_symlink()
    assert target.read_text() == "theirs" and (target.stat().st_mode & 0o777) == 0o644


def test_two_threads_replacing_the_same_file_both_succeed_and_leave_one_whole(tmp_path):
    """The service's first pass saves the report's cache while a report asked for meanwhile saves it too:
    with one temporary name per process, one thread's write failed (the API answered 500)."""
    import threading

    from service.client.privdir import write_private

    path = tmp_path / "cache" / "report-scan.json"
    bodies = [bytes([65 + i]) * 200_000 for i in range(2)]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(body: bytes) -> None:
        start.wait()
        try:
            for _ in range(150):
                write_private(path, body, durable=False)
        except BaseException as exc:  # noqa: BLE001 - the test reports what a thread met
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_bytes() in bodies
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def test_a_link_planted_at_the_log_or_at_the_settings_temp_name_is_never_written_through(tmp_path):
    """The service log and the temporary file Claude Code's settings are written through open by `open_own`:
    a link waiting at either name is refused (the log then goes to stderr), its target keeps its bytes."""
    from service.claude.settings import _atomic_write
    from service.daemon.runtime import PrivateRotatingFileHandler

    target = tmp_path / "victim.txt"
    target.write_text("theirs")
    log = tmp_path / "service.log"
    log.symlink_to(target)
    with pytest.raises(OSError):
        PrivateRotatingFileHandler(str(log), maxBytes=1 << 20, backupCount=3, encoding="utf-8")
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    (settings.parent / f".{settings.name}.{os.getpid()}.ctxlamp-tmp").symlink_to(target)
    with pytest.raises(OSError):
        _atomic_write(settings, "{}\n", 0o600)
    assert target.read_text() == "theirs" and not settings.exists()
