"""The one-per-user lock on every branch: fcntl (Linux, macOS), msvcrt (Windows, through a
stand-in that holds a real kernel lock) and the portable socket lock (neither module).

Each branch: a second lock is refused and names the owner, release frees it, and a holder
killed with SIGKILL never blocks the next start.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from service.daemon import lock as lock_mod
from service.daemon.lock import (
    AlreadyRunning,
    ServiceLock,
    is_held,
    lock_kind,
    ports_for,
)
from tests.support.corpus import ROOT

try:
    from tests.support import fake_msvcrt  # holds a real flock: needs fcntl
except ImportError:  # the portable leg (no fcntl): only the socket branch can run
    fake_msvcrt = None  # type: ignore[assignment]

BRANCHES = [pytest.param("fcntl", marks=pytest.mark.skipif(fake_msvcrt is None, reason="no fcntl here")),
            pytest.param("msvcrt", marks=pytest.mark.skipif(fake_msvcrt is None, reason="no fcntl for the stand-in")),
            "socket"]


def _lock(path: Path, kind: str) -> ServiceLock:
    return ServiceLock(path, kind=kind, module=fake_msvcrt if kind == "msvcrt" else None)


def _held(path: Path, kind: str) -> bool:
    return is_held(path, kind=kind, module=fake_msvcrt if kind == "msvcrt" else None)


_HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from service.daemon.lock import ServiceLock, AlreadyRunning
    kind = sys.argv[2]
    if kind == "msvcrt":
        from tests.support import fake_msvcrt
    else:
        fake_msvcrt = None
    try:
        ServiceLock(Path(sys.argv[1]), kind=kind, module=fake_msvcrt if kind == "msvcrt" else None).acquire()
    except AlreadyRunning as exc:
        print("refused", exc.pid, flush=True)
        sys.exit(3)
    print("held", flush=True)
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 60)
""")


def _start_holder(path: Path, kind: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), kind, *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("kind", BRANCHES)
def test_second_lock_is_refused_and_names_the_owner(tmp_path, kind):
    path = tmp_path / "service.lock"
    first = _lock(path, kind).acquire()
    try:
        assert _held(path, kind)
        with pytest.raises(AlreadyRunning) as err:
            _lock(path, kind).acquire()
        assert err.value.pid == os.getpid()
        assert path.read_text() == f"{os.getpid()}\n"  # readable while held (Windows: the locked byte is elsewhere)
    finally:
        first.release()
    assert not _held(path, kind)
    _lock(path, kind).acquire().release()  # free again


@pytest.mark.parametrize("kind", BRANCHES)
def test_kill_9_never_blocks_the_next_start(tmp_path, kind):
    path = tmp_path / "service.lock"
    for _ in range(2):
        holder = _start_holder(path, kind)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            assert _held(path, kind)
            refused = _start_holder(path, kind)
            out, _ = refused.communicate(timeout=30)
            assert refused.returncode == 3 and out.split() == ["refused", str(holder.pid)]
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=10)
        started = time.monotonic()
        mine = _lock(path, kind).acquire()  # at once: no stale file, port or lock waits for a timeout
        assert time.monotonic() - started < 2
        mine.release()


@pytest.mark.skipif(fake_msvcrt is None, reason="no fcntl for the stand-in")
def test_msvcrt_locks_a_byte_beyond_the_pid_text(tmp_path):
    fake_msvcrt.offsets.clear()
    held = _lock(tmp_path / "service.lock", "msvcrt").acquire()
    held.release()
    assert fake_msvcrt.offsets and min(fake_msvcrt.offsets) > 64


def test_the_kind_follows_the_modules_the_interpreter_has(monkeypatch):
    assert lock_kind() == ("fcntl" if fake_msvcrt is not None else "socket")  # this interpreter
    monkeypatch.setitem(sys.modules, "fcntl", None)  # import fcntl now raises ImportError
    monkeypatch.setitem(sys.modules, "msvcrt", types.ModuleType("msvcrt"))
    assert lock_kind() == "msvcrt"
    monkeypatch.setitem(sys.modules, "msvcrt", None)
    assert lock_kind() == "socket"
    assert ServiceLock(Path("x")).kind == "socket"


def test_without_fcntl_the_service_lock_still_holds(tmp_path, monkeypatch):
    """The module as imported on a system with neither fcntl nor msvcrt."""
    monkeypatch.setitem(sys.modules, "fcntl", None)
    monkeypatch.setitem(sys.modules, "msvcrt", None)
    path = tmp_path / "service.lock"
    with ServiceLock(path) as first:
        assert first.kind == "socket" and is_held(path)
        with pytest.raises(AlreadyRunning):
            ServiceLock(path).acquire()
    assert not is_held(path)


def test_socket_lock_skips_a_port_another_program_holds(tmp_path):
    path = tmp_path / "service.lock"
    first_port = ports_for(path)[0]
    squatter = socket.socket()
    try:
        squatter.bind(("127.0.0.1", first_port))
        squatter.listen(1)  # some other program: accepts but never says who it is
    except OSError:
        squatter.close()
        pytest.skip(f"port {first_port} is busy on this machine")
    try:
        with _lock(path, "socket") as held:
            assert held._holder is not None and held._holder.port == ports_for(path)[1]
            assert is_held(path, kind="socket")
            with pytest.raises(AlreadyRunning):
                _lock(path, "socket").acquire()
    finally:
        squatter.close()


def test_socket_locks_of_two_paths_do_not_meet(tmp_path):
    a, b = tmp_path / "a" / "service.lock", tmp_path / "b" / "service.lock"
    with _lock(a, "socket"), _lock(b, "socket"):
        assert is_held(a, kind="socket") and is_held(b, kind="socket")


def test_socket_lock_with_many_starting_at_once_leaves_exactly_one(tmp_path):
    path = tmp_path / "service.lock"
    racers = [_start_holder(path, "socket", "3") for _ in range(5)]
    outs = [r.communicate(timeout=60)[0].split() for r in racers]
    assert sum(1 for out in outs if out == ["held"]) == 1, outs
    assert all(out == ["held"] or out[0] == "refused" for out in outs)


def test_a_bad_kind_is_refused():
    with pytest.raises(ValueError):
        ServiceLock(Path("x"), kind="flock")
    assert lock_mod.KINDS == ("fcntl", "msvcrt", "socket")
