"""A real PostgreSQL server for the team tests: started from the installed binaries, as an unprivileged user.

PostgreSQL refuses to run as root (CI runs as root), so as root the server runs
as the system user `ctxlamp-pg` (created when missing; `nobody` when it cannot
be), on a temp folder owned by it, on a free loopback port, with its Unix
socket in that folder. Password authentication over TCP, like a real team
server. `crash()` is an immediate shutdown (no checkpoint: recovery at start).
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SUPERUSER = "ctxlamp_owner"
PASSWORD = "owner-secret-for-tests"
PG_USER = "ctxlamp-pg"


def find_bindir() -> Path | None:
    """Where initdb and postgres are: pg_config --bindir, Debian's /usr/lib/postgresql/*/bin, then PATH."""
    candidates = []
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            candidates.append(out.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).resolve().parent))
    for c in candidates:
        if (Path(c) / "initdb").is_file() and (Path(c) / "postgres").is_file():
            return Path(c)
    return None


def _server_user() -> pwd.struct_passwd | None:
    """None when not root (the server runs as we do)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
                       capture_output=True)
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        return pwd.getpwnam("nobody")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, bindir: Path, superuser: str = SUPERUSER):
        self.bindir = bindir
        self.superuser = superuser
        self.user = _server_user()
        self.base = Path(tempfile.mkdtemp(prefix="ctxlamp-pg-"))
        self.data = self.base / "data"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        os.chmod(self.base, 0o755)
        if self.user:
            os.chown(self.base, self.user.pw_uid, self.user.pw_gid)
        pwfile = self.base / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.user:
            os.chown(pwfile, self.user.pw_uid, self.user.pw_gid)
        self._run([str(bindir / "initdb"), "-D", str(self.data), "-U", superuser, f"--pwfile={pwfile}",
                   "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"])
        pwfile.unlink()

    def _as_user(self) -> dict:
        if not self.user:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def _run(self, cmd: list[str]) -> None:
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(self.base)}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=self.base, timeout=120,
                             **self._as_user())
        if out.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {out.stderr or out.stdout}")

    def start(self, timeout: float = 30.0, listen: str = "127.0.0.1", settings: tuple[str, ...] = ()) -> None:
        """Start (again) on the same port; `listen` is listen_addresses, `settings` more `name=value` options."""
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(self.base)}
        log = open(self.base / "server.log", "ab")
        self.proc = subprocess.Popen(
            [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.base),
             "-c", f"listen_addresses={listen}", "-c", "fsync=off", "-c", "max_connections=120",
             "-c", "shared_buffers=32MB", *(arg for s in settings for arg in ("-c", s))],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.base, **self._as_user())
        log.close()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        import psycopg2

        end = time.monotonic() + timeout
        while True:
            try:
                psycopg2.connect(self.url("postgres")).close()
                return
            except psycopg2.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError("postgres did not start: " + (self.base / "server.log").read_text()[-2000:]) from None
                time.sleep(0.1)

    def url(self, database: str = "team", user: str | None = None, password: str = PASSWORD) -> str:
        return f"postgresql://{user or self.superuser}:{password}@127.0.0.1:{self.port}/{database}"

    def crash(self) -> None:
        """An immediate shutdown (SIGQUIT: what `pg_ctl stop -m immediate` sends), as a crash."""
        self._stop(signal.SIGQUIT)

    def stop(self) -> None:
        self._stop(signal.SIGINT)  # fast shutdown

    def _stop(self, sig) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def sql(self, statement: str, params=(), database: str = "team", autocommit: bool = True):
        import psycopg2

        conn = psycopg2.connect(self.url(database))
        conn.autocommit = autocommit
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def fresh_database(self, name: str) -> str:
        """A new empty database; its owner's URL."""
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', database="postgres")
        self.sql(f'CREATE DATABASE "{name}"', database="postgres")
        return self.url(name)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


BINDIR = find_bindir()
NO_PG = ("NO POSTGRESQL SERVER BINARIES FOUND (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH): "
         "the team tests did NOT run; install the `postgresql` package (.ci/run does)")


def module_server() -> Iterator[PgServer]:
    """A throwaway PostgreSQL server for one test module, as a fixture's body: skips, saying why,
    where the server binaries are missing."""
    import pytest

    if BINDIR is None:
        pytest.skip(NO_PG)
    srv = PgServer(BINDIR)
    srv.start()
    try:
        yield srv
    finally:
        srv.cleanup()
