"""Real storage faults under a running service: locked, full, read-only, deleted.

The seed's Degradation section: "Persistence failures ... degrade independently
-- each fails open without stopping measurement." So while the fault lasts the
transcript keeps growing and GET /status keeps following it (equal to
`ctxlamp replay` of the bytes on disk), the user is told once (SERVICE.db says
what is wrong; one line on stderr), and when the fault clears the writes held
back (the compact's archived segment, the reminder) reach the database.

The faults are the operating system's own: another process holding
`BEGIN EXCLUSIVE`, a tmpfs filled to the last byte, a read-only bind mount,
the data folder removed. Mounting needs root (CAP_SYS_ADMIN); without it those
cases skip and say why. `CTXLAMP_LOCK_HOLD_S` sets how long the short lock test
holds the database (default 6 s); the slow variant holds it 30 s.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.harness import (LONG_SESSION, Service, append_lines, integrity, meaningful, replay,
                                       service_env, wait_for)

LOCK_HOLD_S = float(os.environ.get("CTXLAMP_LOCK_HOLD_S") or 6)
STATUS_LAG_S = 2.0         # how far GET /status may trail the transcript while the database misbehaves
LINES = LONG_SESSION.read_bytes().splitlines(keepends=True)
# Lines present at start / the line the transcript reaches while the fault lasts: the long session's /compact
# (near line 50) and its first reminder (call 42, near line 325) fall inside.
BEFORE = next(i for i, line in enumerate(LINES) if b'"compact_boundary"' in line) - 9
DURING = 400


def _mount(*args: str) -> None:
    out = subprocess.run(["mount", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise PermissionError(out.stderr.strip())


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _can_mount(tmp_path: Path) -> str | None:
    probe = tmp_path / "mount-probe"
    probe.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe))
    except (PermissionError, FileNotFoundError) as exc:
        return f"mount is not permitted here ({exc}); run as root (CAP_SYS_ADMIN) to test real storage faults"
    _umount(probe)
    return None


class Growth:
    """Feeds the fixture into the watched folder step by step and checks the service keeps up."""

    def __init__(self, svc: Service, dst: Path, replay_home: Path) -> None:
        self.svc, self.dst, self.replay_home = svc, dst, replay_home
        self.pos = 0
        self.worst_status_s = 0.0
        self.lags: list[float] = []

    def grow_to(self, n: int, steps: int = 1) -> dict:
        end = None
        for stop in [self.pos + (n - self.pos) * (k + 1) // steps for k in range(steps)]:
            append_lines(LINES[self.pos:stop], self.dst)
            self.pos = stop
            end = self.caught_up()
        return end

    def caught_up(self) -> dict:
        end, _, _ = replay(self.dst, self.replay_home)
        want = meaningful(end)
        t0 = time.monotonic()

        def same():
            t = time.monotonic()
            got = meaningful(self.svc.api.session(end["session_id"], timeout=STATUS_LAG_S + 5))
            self.worst_status_s = max(self.worst_status_s, time.monotonic() - t)
            return got == want
        wait_for(same, timeout=STATUS_LAG_S + 10, what=f"status == replay after {self.pos} lines")
        lag = time.monotonic() - t0
        self.lags.append(round(lag, 2))
        print(f"lines {self.pos}: status caught up in {lag:.2f}s (slowest GET /status {self.worst_status_s:.2f}s)")
        assert lag < STATUS_LAG_S, f"the status trailed the transcript by {lag:.1f}s during the fault"
        return end


def _db(svc: Service) -> dict:
    return svc.api.status(timeout=20)["service"]["db"]


def _told_once(svc: Service, words: tuple[str, ...], log: Path | None = None) -> str:
    """The stderr line announcing the fault: exactly one, naming it (and one in the log, when it is writable)."""
    lines = [ln for ln in svc.stderr().splitlines() if ln.startswith("ctxlamp:") and "database" in ln.lower()]
    faults = [ln for ln in lines if any(w in ln.lower() for w in words)]
    assert len(faults) == 1, f"expected one line about {words} on stderr, got: {lines}"
    if log is not None:
        logged = [ln for ln in log.read_text().splitlines() if faults[0][len("ctxlamp: "):] in ln]
        assert len(logged) == 1, f"expected the notice once in {log.name}, got: {logged}"
    return faults[0]


def _held_back_writes_arrive(svc: Service, sid: str, growth: Growth, db_path: Path) -> None:
    """After the fault: what happened during it (reminder, archived compact segment) is in the database."""
    growth.grow_to(len(LINES), steps=2)  # the next writes retry the queued ones
    wait_for(lambda: _db(svc)["ok"], timeout=60, what="SERVICE.db ok again")
    _, reminders, segments = replay(growth.dst, growth.replay_home)
    got = svc.api.get(f"/api/v1/reminders?session={sid}")["reminders"]
    assert [(r["segment"], r["lap"], r["call"]) for r in got] == \
        [(r["segment"], r["lap"], r["call"]) for r in reminders]
    archived = {(r["segment"], r["end_reason"], r["calls"]) for r in
                svc.api.get(f"/api/v1/segments?session={sid}")["segments"]}
    assert {(p["segment"], p["end_reason"], p["calls"]) for p in segments if p["end_reason"] != "end"} <= archived
    assert integrity(db_path) == "ok"


def _setup(tmp_path: Path, home: Path | None = None):
    home = home or tmp_path / "home"
    claude = tmp_path / "claude"
    proj = claude / "projects" / "-home-user-demo-project"
    proj.mkdir(parents=True)
    home.mkdir(exist_ok=True)
    return home, proj / LONG_SESSION.name, tmp_path / "replay-home"


def _setup_xdg(tmp_path: Path):
    """As `_setup`, but with XDG_* folders instead of CTXLAMP_HOME, so the data and runtime folders are apart.

    Returns (service env, data folder, runtime folder, transcript path, replay home).
    """
    xdg = {k: tmp_path / k.lower() for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")}
    for folder in xdg.values():
        folder.mkdir(mode=0o700)
    _, dst, replay_home = _setup(tmp_path, tmp_path / "unused")
    env = {k: v for k, v in service_env(tmp_path / "unused", tmp_path / "claude").items() if k != "CTXLAMP_HOME"}
    env.update({k: str(v) for k, v in xdg.items()})
    return env, xdg["XDG_DATA_HOME"] / "ctxlamp", xdg["XDG_RUNTIME_DIR"] / "ctxlamp", dst, replay_home


# ---- locked by another writer -------------------------------------------------------------------------
def _hold_exclusive(db: Path, seconds: float) -> subprocess.Popen:
    """Another program holding the database in BEGIN EXCLUSIVE for `seconds`."""
    code = ("import sqlite3,sys,time\n"
            "c=sqlite3.connect(sys.argv[1],timeout=30,isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "print('locked',flush=True)\n"
            "time.sleep(float(sys.argv[2]))\n"
            "c.execute('COMMIT')\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def locked_database(tmp_path: Path, hold_s: float) -> None:
    home, dst, replay_home = _setup(tmp_path)
    append_lines(LINES[:BEFORE], dst)
    with Service(service_env(home, tmp_path / "claude"), home) as svc:
        growth = Growth(svc, dst, replay_home)
        growth.pos = BEFORE
        end = growth.caught_up()
        assert _db(svc)["ok"] is True
        holder = _hold_exclusive(home / "ctxlamp.db", hold_s)
        t0 = time.monotonic()
        try:
            steps = max(3, int(hold_s // 2))
            growth.grow_to(DURING, steps=steps)
            if holder.poll() is None:
                db = wait_for(lambda: (lambda d: d if not d["ok"] else None)(_db(svc)), timeout=hold_s,
                              what="SERVICE.db to say the database is locked")
                assert "locked" in (db["error"] or "").lower(), db
        finally:
            holder.wait(timeout=hold_s + 30)
        assert time.monotonic() - t0 >= hold_s * 0.9
        _told_once(svc, ("locked",), log=home / "service.log")
        _held_back_writes_arrive(svc, end["session_id"], growth, home / "ctxlamp.db")


def test_a_database_locked_by_another_writer_does_not_stop_measurement(tmp_path):
    locked_database(tmp_path, LOCK_HOLD_S)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_database_locked_for_30_seconds_does_not_stop_measurement(tmp_path):
    locked_database(tmp_path, 30.0)


# ---- disk full ---------------------------------------------------------------------------------------------
def test_a_full_disk_does_not_stop_measurement_and_the_data_comes_back(tmp_path):
    why = _can_mount(tmp_path)
    if why:
        pytest.skip(why)
    home = tmp_path / "home"
    home.mkdir()
    _mount("-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(home))
    try:
        home, dst, replay_home = _setup(tmp_path, home)
        append_lines(LINES[:BEFORE], dst)
        with Service(service_env(home, tmp_path / "claude"), home) as svc:
            growth = Growth(svc, dst, replay_home)
            growth.pos = BEFORE
            end = growth.caught_up()
            assert _db(svc)["ok"] is True
            filler = home / "filler"
            # every free byte taken, as a runaway log would; unbuffered, so closing has nothing left to write
            with open(filler, "wb", buffering=0) as fh:
                try:
                    while True:
                        fh.write(b"\0" * (1 << 16))
                except OSError:
                    pass
            growth.grow_to(DURING, steps=3)
            db = wait_for(lambda: (lambda d: d if not d["ok"] else None)(_db(svc)), timeout=10,
                          what="SERVICE.db to say the disk is full")
            assert "full" in (db["error"] or "").lower() or "writes are waiting" in (db["error"] or ""), db
            _told_once(svc, ("full",))
            filler.unlink()
            _held_back_writes_arrive(svc, end["session_id"], growth, home / "ctxlamp.db")
    finally:
        _umount(home)


# ---- read-only data folder ------------------------------------------------------------------------------------
def test_a_read_only_data_folder_does_not_stop_measurement_and_the_data_comes_back(tmp_path):
    """The data folder (database, log, checkpoints) read-only from the start, as after a remount on I/O errors.

    The runtime folder (api.json) stays writable: XDG_* point them apart. The
    database exists from an earlier run. Then the mount turns writable again.
    """
    why = _can_mount(tmp_path)
    if why:
        pytest.skip(why)
    env, data, runtime, dst, replay_home = _setup_xdg(tmp_path)
    append_lines(LINES[:BEFORE], dst)
    with Service(env, runtime):  # an earlier, healthy run creates the database
        pass
    assert (data / "ctxlamp.db").exists()
    _mount("--bind", str(data), str(data))
    try:
        _mount("-o", "remount,bind,ro", str(data))
        with Service(env, runtime) as svc:
            growth = Growth(svc, dst, replay_home)
            growth.pos = BEFORE
            end = growth.caught_up()
            growth.grow_to(DURING, steps=3)
            db = _db(svc)
            assert db["ok"] is False and db["error"], db
            _told_once(svc, ("read-only", "readonly", "cannot be opened"))
            _mount("-o", "remount,bind,rw", str(data))
            _held_back_writes_arrive(svc, end["session_id"], growth, data / "ctxlamp.db")
    finally:
        _umount(data)


# ---- the data folder deleted -------------------------------------------------------------------------------------
def _rm_rf(folder: Path, tries: int = 50) -> None:
    """`rm -rf folder`, run again when it fails as it does for a user: the service, still idle-working (its
    report summary, the kept copies of transcripts, a checkpoint), wrote a file into a folder between the
    listing and the removal ("Directory not empty"), or renamed one away first."""
    for _ in range(tries - 1):
        try:
            shutil.rmtree(folder)
            return
        except OSError:
            time.sleep(0.05)
    shutil.rmtree(folder)


def test_the_data_folder_deleted_while_running_does_not_stop_measurement_and_history_is_rebuilt(tmp_path):
    """`rm -rf` of the data folder under a running service (a cleanup script, a user freeing space).

    Measurement goes on; what the database held is gone with the folder, but
    the service must notice and write again into a new file at the same place
    (not into the unlinked one, where everything would vanish at exit).
    """
    env, data, runtime, dst, replay_home = _setup_xdg(tmp_path)
    append_lines(LINES[:BEFORE], dst)
    with Service(env, runtime) as svc:
        growth = Growth(svc, dst, replay_home)
        growth.pos = BEFORE
        end = growth.caught_up()
        status, saved = svc.api.request("POST", "/api/v1/handoffs", body={
            "task": "before the rm", "body": "kept", "project": "/home/user/demo-project"})
        assert status == 200, saved
        _rm_rf(data)
        growth.grow_to(DURING, steps=3)
        _held_back_writes_arrive(svc, end["session_id"], growth, data / "ctxlamp.db")
        # what the database held before the folder went is back too
        tokens = [h["token"] for h in svc.api.get("/api/v1/handoffs?project=/home/user/demo-project")["handoffs"]]
        assert saved["token"] in tokens
        assert len([ln for ln in svc.stderr().splitlines() if "was deleted while in use" in ln]) == 1
    assert (data / "ctxlamp.db").exists() and integrity(data / "ctxlamp.db") == "ok"
    assert oct((data / "ctxlamp.db").stat().st_mode & 0o777) == "0o600"
    assert oct(data.stat().st_mode & 0o777) == "0o700"
