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


# ---- the socket kind against another local user (who can reach 127.0.0.1 but not the private folder) ----
def _bind_all(ports: list[int]) -> list[socket.socket]:
    held = []
    for port in ports:
        s = socket.socket()
        try:
            if os.name == "posix":  # as another user's program would: a closed holder's TIME_WAIT does not stop it
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen(8)
        except OSError:
            s.close()
            for h in held:
                h.close()
            pytest.skip(f"port {port} is busy on this machine")
        held.append(s)
    return held


def test_socket_lock_ports_come_from_a_private_key_not_from_the_path(tmp_path):
    """Another user knows the path; the ports it would squat are not the lock's."""
    import hashlib

    path = tmp_path / "service.lock"
    key_file = path.with_name("service.lock.key")
    ports = ports_for(path)
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert ports_for(path) == ports  # the same key: the same ports at every start
    public = hashlib.sha256(b"ports:" + os.fsencode(os.path.realpath(path))).digest()
    guessed = [20000 + int.from_bytes(public[i:i + 2], "big") % 30000 for i in range(0, 12, 2)]
    assert not set(guessed) & set(ports)
    assert ports_for(path, key=b"another user's key") != ports


def test_socket_lock_with_every_port_squatted_is_a_plain_refusal(tmp_path):
    """Even with its key leaked and all its ports held, `ctxlamp serve` says why, without a traceback."""
    home = tmp_path / "home"
    path = home / "service.lock"
    squatters = _bind_all(ports_for(path))
    try:
        with pytest.raises(lock_mod.LockUnavailable, match="no free port"):
            _lock(path, "socket").acquire()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
        env.update(CTXLAMP_HOME=str(home), CLAUDE_CONFIG_DIR=str(tmp_path / "claude"),
                   PYTHONPATH=str(ROOT / "tests" / "posixless"))  # no fcntl: the socket kind
        run = subprocess.run([sys.executable, "-m", "service.cli", "serve"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 1 and "no free port" in run.stderr and "Traceback" not in run.stderr, run.stderr
    finally:
        for s in squatters:
            s.close()


def test_socket_lock_is_not_impersonated_by_a_replayed_answer(tmp_path):
    """Another user listening on the first port and replaying a holder's answer is not taken for a service."""
    path = tmp_path / "service.lock"
    ports = ports_for(path)
    with _lock(path, "socket") as real:
        assert real._holder is not None
        with socket.create_connection(("127.0.0.1", real._holder.port), timeout=5) as c:
            c.sendall(b"ctxlamp-lock/2 " + lock_mod._identity(path).encode() + b" " + b"ab" * 16 + b"\n")
            recorded = c.recv(300)
        assert recorded.startswith(b"ctxlamp-lock/2 ")
    (impostor,) = _bind_all(ports[:1])

    def replay():
        while True:
            try:
                conn, _ = impostor.accept()
            except OSError:
                return
            with conn:
                conn.sendall(recorded.replace(str(os.getpid()).encode(), b"1", 1))

    import threading

    threading.Thread(target=replay, daemon=True).start()
    try:
        assert not is_held(path, kind="socket")
        with _lock(path, "socket") as mine:  # the impostor's "already running (pid 1)" is not believed
            assert mine._holder is not None and mine._holder.port == ports[1]
    finally:
        impostor.close()


def test_socket_lock_holds_while_its_answering_thread_is_flooded(tmp_path):
    """Hundreds of connections that never ask must not silence the holder: a second service is refused."""
    path = tmp_path / "service.lock"
    holder = _start_holder(path, "socket")
    flood: list[socket.socket] = []
    try:
        assert holder.stdout.readline().strip() == "held"
        port = next(p for p in ports_for(path) if lock_mod._ask(p, lock_mod._identity(path), lock_mod.lock_key(path)))
        for _ in range(300):
            flood.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        t0 = time.monotonic()
        with pytest.raises(AlreadyRunning) as refused:
            _lock(path, "socket").acquire()
        assert refused.value.pid == holder.pid and time.monotonic() - t0 < 2.0
        assert is_held(path, kind="socket")
    finally:
        for s in flood:
            s.close()
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("kind", BRANCHES)
def test_a_data_folder_reached_through_a_link_is_one_lock(tmp_path, kind):
    real = tmp_path / "data"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    with _lock(real / "service.lock", kind):
        with pytest.raises(AlreadyRunning):
            _lock(tmp_path / "linked" / "service.lock", kind).acquire()
        assert _held(tmp_path / "linked" / "service.lock", kind)
