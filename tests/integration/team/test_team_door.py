"""Issue 25, the team's doors, tried as a hostile member would on a real PostgreSQL (tests/pg_server.py) whose
schema `public` is open to everybody as PostgreSQL 12-14 ship it: the operator planted to hijack
`current_member()`, escape codes in another member's names, passwords in messages, the owner without
CREATEROLE, docs/team.md's set-up followed as written, and TLS for a server beyond this machine."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg2
import pytest

from service.team import passfile, schema, server
from service.team.migrations import steps
from tests.support.corpus import ROOT
from tests.support.pg_server import PgServer, free_port
from tests.support.team_history import member_env
from tests.support.pg_server import BINDIR, NO_PG
from tests.support.procs import ctl

A, B = "alice@laptop", "bob@desk"
ESCAPES = ("\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "\u202eevil", "\x1b]52;c;ZWNobyBoaQ==\x07")


@pytest.fixture(scope="module")
def pg():
    if BINDIR is None:
        pytest.skip(NO_PG)
    srv = PgServer(BINDIR)
    srv.start()
    yield srv
    srv.cleanup()


def open_public(pg: PgServer, database: str) -> None:
    """Schema `public` as PostgreSQL 12-14 ship it: owned by the superuser, everybody may create in it."""
    pg.sql(f"ALTER SCHEMA public OWNER TO {pg.superuser}", database=database)
    pg.sql("GRANT CREATE ON SCHEMA public TO PUBLIC", database=database)


def team_db(pg: PgServer, name: str, tmp_path: Path, version: int | None = None) -> tuple[str, dict[str, str], Path]:
    """A team database (the newest schema, or only the first `version` migrations) with members A and B:
    (owner URL, member URLs without passwords, the password file)."""
    owner = pg.fresh_database(name)
    open_public(pg, name)
    pgpass = tmp_path / f"{name}.pgpass"
    if version is None:
        schema.init(owner)
    else:
        from models.migrations import migrate

        db = schema._owner_db(server.connect(owner))
        try:
            migrate(db, steps()[:version])
        finally:
            db.close()
    urls = {m: schema.add_member(owner, m, pgpass) for m in (A, B)}
    return owner, urls, pgpass


@contextmanager
def member_conn(url: str, pgpass: Path) -> Iterator:
    """A member's own session (autocommit), with a client of its choosing: psycopg2 as psql would (URL, file)."""
    conn = psycopg2.connect(url, passfile=str(pgpass))
    conn.autocommit = True
    try:
        yield conn
    finally:
        conn.close()


def write_own(cur, member: str, rows: list[dict], table: str = "day_figures") -> None:
    """A member's own rows, written as ctxlamp writes them: through the team's writer (migrations/0006)."""
    cur.execute(f"SELECT ctxlamp_team.push_{table}(%s, %s::jsonb, '[]')", (member, json.dumps(rows)))


def hijack(url: str, pgpass: Path, victim: str) -> dict:
    """The attack of issue 25: A plants `=` (text, name) in `public`, puts `public` first on its path and writes
    as the victim. What A's session got."""
    victim_role = schema.role_name(victim)
    got: dict = {}
    with member_conn(url, pgpass) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE FUNCTION public.hijack(text, name) RETURNS boolean LANGUAGE sql IMMUTABLE "
                    f"AS $$ SELECT $1 OPERATOR(pg_catalog.=) '{victim_role}' $$")
        cur.execute("CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = name, FUNCTION = public.hijack)")
        cur.execute("SET search_path = public, pg_catalog")
        cur.execute("SELECT ctxlamp_team.current_member()")
        got["current_member"] = cur.fetchone()[0]
        try:
            cur.execute("UPDATE ctxlamp_team.day_figures SET main_usd = 9999 WHERE member = %s", (victim,))
            got["updated"] = cur.rowcount
        except psycopg2.Error as exc:  # schema 6 on: members hold no UPDATE at all
            got["updated"] = 0
            got["update_refused"] = str(exc)
        try:
            cur.execute("INSERT INTO ctxlamp_team.day_figures (member, day, model, project) "
                        "VALUES (%s, '2026-01-02', 'm', 'p')", (victim,))
            got["inserted"] = cur.rowcount
        except psycopg2.Error as exc:
            got["inserted"] = 0
            got["refused"] = str(exc)
    return got


def test_the_planted_operator_no_longer_hijacks_current_member(pg, tmp_path):
    victims_row = ("INSERT INTO ctxlamp_team.day_figures (member, day, model, project, main_usd) "
                   "VALUES (%s, '2026-11-01', 'm', 'p', 1)")
    # the old schema (migration 0001 alone): the attack works, so this test's attack is a real one
    _owner, urls, pgpass = team_db(pg, "door_hijack_old", tmp_path, version=1)
    with member_conn(urls[B], pgpass) as conn:
        conn.cursor().execute(victims_row, (B,))
    got = hijack(urls[A], pgpass, B)
    assert got == {"current_member": B, "updated": 1, "inserted": 1}
    # the new schema, `public` still open to everybody (an administrator opened it again after `team init`)
    owner, urls, pgpass = team_db(pg, "door_hijack_new", tmp_path)
    pg.sql("GRANT CREATE ON SCHEMA public TO PUBLIC", database="door_hijack_new")
    with member_conn(urls[B], pgpass) as conn:
        write_own(conn.cursor(), B, [{"day": "2026-11-01", "model": "m", "project": "p", "main_usd": 1}])
    got = hijack(urls[A], pgpass, B)
    assert got["current_member"] == A and got["updated"] == 0 and got["inserted"] == 0
    assert "permission denied" in got["refused"]
    assert pg.sql("SELECT member, main_usd FROM ctxlamp_team.day_figures", database="door_hijack_new") == [(B, 1.0)]
    # and what `team init` left: nobody may plant anything in `public`, nor connect without a member role
    schema.init(owner)
    for plant in ("CREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'", "CREATE SCHEMA planted",
                  "CREATE TEMPORARY TABLE planted (x int)"):
        with member_conn(urls[B], pgpass) as conn, conn.cursor() as cur, pytest.raises(psycopg2.Error) as refused:
            cur.execute(plant)
        assert refused.value.pgcode == "42501", plant
    pg.sql("CREATE ROLE door_stranger LOGIN PASSWORD 'stranger-pw'", database="postgres")
    with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
        psycopg2.connect(pg.url("door_hijack_new", user="door_stranger", password="stranger-pw"))


def test_a_member_name_holding_escape_codes_never_reaches_the_terminal_raw(pg, tmp_path, qtbot, monkeypatch):
    # rows B wrote before the printable-name CHECK existed (0001), then the schema migrated (0002)
    owner, urls, pgpass = team_db(pg, "door_escapes", tmp_path, version=1)
    with member_conn(urls[B], pgpass) as conn, conn.cursor() as cur:
        for i, name in enumerate(ESCAPES):
            cur.execute("INSERT INTO ctxlamp_team.day_figures (member, day, model, project, main_usd, calls) "
                        "VALUES (%s, %s, %s, %s, 1, 1)", (B, f"2026-11-0{i + 1}", "model" + name, "project" + name))
    pg.sql("INSERT INTO ctxlamp_team.member (name, role) VALUES (%s, 'nobody')", ("carol\x1b[2J\x1b]0;x\x07",),
           database="door_escapes")
    assert schema.init(owner) == steps()[-1][0]  # migrated to the newest
    env = member_env(tmp_path, 1)
    env["PGPASSFILE"] = str(pgpass)
    text = ctl(env, "team", "report", "--url", urls[A])
    assert text.returncode == 0, text.stderr
    controls = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")
    assert not controls.search(text.stdout) and "model]0;pwned" in text.stdout and "project[2J" in text.stdout
    assert "carol[2J]0;x" in text.stdout
    as_json = ctl(env, "team", "report", "--json", "--url", urls[A])
    assert as_json.returncode == 0 and as_json.stdout.isascii()
    doc = json.loads(as_json.stdout)
    assert {"model" + n for n in ESCAPES} <= set(doc["by_model"])  # the data kept, only escaped for the terminal
    # the Team tab: table cells without control characters, the rich-text headline escaped
    from desktop.tabs.team import TeamTab
    from service.team.report import team_report

    tab = TeamTab(source=None)
    qtbot.addWidget(tab)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    doc = team_report(urls[A])
    doc["member"] = "<img src=x>"
    doc["last_push"] = {"ok": False, "at": "now", "message": "<b>bold</b>\x1b[2J"}
    tab.show_team(doc)
    cells = [tab.members.item(r, 0).text() for r in range(tab.members.rowCount())]
    cells += [tab.projects.item(r, 0).text() for r in range(tab.projects.rowCount())]
    assert "carol[2J]0;x" in cells and any(c.startswith("project") for c in cells)
    assert not any(controls.search(c) for c in cells)
    assert "&lt;img src=x&gt;" in tab.head.text() and "&lt;b&gt;bold&lt;/b&gt;[2J" in tab.head.text()
    # from now on the server refuses such names, and over-long ones
    with member_conn(urls[B], pgpass) as conn, conn.cursor() as cur:
        for bad in ("m\x1b[2J", "m\u202e", "m\n", "x" * 201):
            with pytest.raises(psycopg2.errors.CheckViolation):
                write_own(cur, B, [{"day": "2026-12-01", "model": bad, "project": "p"}])
        write_own(cur, B, [{"day": "2026-12-01", "model": "é" * 200, "project": "p"}])  # printable, 200: taken
    r = ctl(env, "team", "member", "add", "mallory\x1b]0;x\x07", "--url", owner, "--passfile", str(pgpass))
    assert r.returncode == 1 and "printable" in r.stderr and "\x1b" not in r.stderr + r.stdout


def _no_password(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text, text
        assert secret.split("%")[0] not in text, text


def test_a_password_in_a_url_never_comes_back(pg, tmp_path, qtbot, monkeypatch):
    from service import config
    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    env = member_env(tmp_path, 1)
    unparsable = f"postgresql://alice:s3cr%t@127.0.0.1:{pg.port}/team"
    unreachable = f"postgresql://alice:s3cr3t-unreached@127.0.0.1:{free_port()}/team"
    for url, code in ((unparsable, 1), (unreachable, 3)):
        for args in (("report",), ("report", "--json"), ("push",), ("init",), ("member", "add", "x")):
            r = ctl(env, "team", *args, "--url", url)
            assert r.returncode == code, (args, r.stdout, r.stderr)
            assert r.stderr.strip(), args
            _no_password(url.split(":")[2].split("@")[0], r.stdout, r.stderr)
    # the service: its scheduled push, its log, GET /api/v1/team and the Team tab
    home = Path(env["CTXLAMP_HOME"])
    config.save(home / "config.toml", config.merge(config.DEFAULTS, {"team": {
        "url": unparsable, "member": A, "push_every": "1s"}}))
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            status, body = client.exchange("GET", "/api/v1/team")
            log = (home / "service.log").read_text() if (home / "service.log").exists() else ""
            if "team push" in log:
                break
            assert time.monotonic() < deadline, (status, body, log)
            time.sleep(0.2)
        assert status == 503 and "cannot be read" in json.dumps(body)
        from desktop.connection.datasource import ApiSource
        from desktop.tabs.team import TeamTab

        monkeypatch.setenv("CTXLAMP_HOME", str(home))
        tab = TeamTab(ApiSource())
        qtbot.addWidget(tab)
        tab.reload()
        assert "Could not load the team view" in tab.head.text()
    logs = "\n".join(p.read_text() for p in home.glob("service.log*"))
    assert "team push" in logs
    _no_password("s3cr%t", json.dumps(body), logs, tab.head.text())


def test_the_settings_show_database_urls_masked(qtbot):
    from PySide6.QtWidgets import QLineEdit

    from desktop.present import settings as sm
    from desktop.tabs.settings import make_control

    for key in ("team.url", "database.url"):
        control = make_control(next(f for f in sm.FIELDS if f.key == key))
        qtbot.addWidget(control)
        control.set_value("postgresql://alice:s3cret@db.example/team")
        line = control.inner.line
        assert line.echoMode() == QLineEdit.EchoMode.Password and line.displayText() != line.text()
        assert control.value() == "postgresql://alice:s3cret@db.example/team"
        control.inner.show_button.setChecked(True)
        assert line.echoMode() == QLineEdit.EchoMode.Normal


def test_an_owner_without_createrole_is_told_what_it_misses(pg, tmp_path):
    pg.sql("CREATE ROLE door_plain LOGIN PASSWORD 'plain-pw'", database="postgres")
    pg.sql("DROP DATABASE IF EXISTS door_plain WITH (FORCE)", database="postgres")
    pg.sql("CREATE DATABASE door_plain OWNER door_plain", database="postgres")
    owner = pg.url("door_plain", user="door_plain", password="plain-pw")
    env = member_env(tmp_path, 1)
    r = ctl(env, "team", "init", "--url", owner)
    assert r.returncode == 4 and "CREATEROLE" in r.stderr and "ALTER ROLE door_plain CREATEROLE;" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "plain-pw" not in r.stderr
    for name in (A, "carol@door"):  # a role that exists (other tests made it) and one that does not
        r = ctl(env, "team", "member", "add", name, "--url", owner)
        assert r.returncode == 4 and "ALTER ROLE door_plain CREATEROLE;" in r.stderr, r.stderr
    pg.sql("ALTER ROLE door_plain CREATEROLE", database="postgres")  # what the message said
    assert ctl(env, "team", "init", "--url", owner).returncode == 0
    r = ctl(env, "team", "member", "add", "carol@door", "--url", owner)
    assert r.returncode == 0, r.stderr


def test_init_names_the_line_when_it_cannot_close_public(pg, tmp_path):
    """PostgreSQL 12-14: `public` belongs to the superuser, so a database owner cannot take CREATE back."""
    pg.sql("DROP ROLE IF EXISTS door_old_owner", database="postgres")
    pg.sql("CREATE ROLE door_old_owner LOGIN CREATEROLE PASSWORD 'old-pw'", database="postgres")
    pg.sql("DROP DATABASE IF EXISTS door_old WITH (FORCE)", database="postgres")
    pg.sql("CREATE DATABASE door_old OWNER door_old_owner", database="postgres")
    open_public(pg, "door_old")
    owner = pg.url("door_old", user="door_old_owner", password="old-pw")
    env = member_env(tmp_path, 1)
    r = ctl(env, "team", "init", "--url", owner)
    assert r.returncode == 4 and f"version {steps()[-1][0]}" in r.stderr, r.stderr  # migrated (the policies hold), then told
    line = re.search(r"run: (REVOKE CREATE ON SCHEMA public FROM PUBLIC;)", r.stderr)
    assert line, r.stderr
    assert "CONNECT" not in r.stderr  # the owner of the database could take that back itself
    assert pg.sql("SELECT has_database_privilege('public', 'door_old', 'CONNECT')", database="door_old") == [(False,)]
    pg.sql(line.group(1), database="door_old")
    r = ctl(env, "team", "init", "--url", owner)
    assert r.returncode == 0, r.stderr


def _blocks(markdown: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", markdown, re.DOTALL)


def test_the_docs_set_up_works_as_written(tmp_path):
    """docs/team.md's SQL through psql as a superuser, its shell lines through bash, on a server whose `public`
    is open as 12-14 ship it; only the password and the server's address are put in."""
    if BINDIR is None:
        pytest.skip(NO_PG)
    psql = BINDIR / "psql" if (BINDIR / "psql").exists() else shutil.which("psql")
    if not psql:
        pytest.skip("no psql")
    docs = (ROOT / "docs" / "team.md").read_text()
    setup = docs.split("## Setting up the server and the roles", 1)[1].split("\n## ", 1)[0]
    assert not re.search(r"postgres(ql)?://[^\s@/]*:[^\s@/]*@", docs), "a URL with a password in the docs"
    sql, sh = _blocks(setup, "sql")[0], _blocks(setup, "sh")[0]
    srv = PgServer(BINDIR, superuser="postgres")
    srv.start()
    try:
        srv.sql("ALTER SCHEMA public OWNER TO postgres", database="template1")  # as 12-14 ship
        srv.sql("GRANT CREATE ON SCHEMA public TO PUBLIC", database="template1")
        password = "owner-pw-from-the-docs"
        address = f"127.0.0.1:{srv.port}"

        def fill(text: str) -> str:
            return text.replace("db.example:5432", address).replace("...", password)

        admin_env = dict(os.environ, PGPASSWORD=srv.url().split(":")[2].split("@")[0])
        out = subprocess.run([str(psql), "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(srv.port),
                              "-U", "postgres", "-d", "postgres"], input=fill(sql), text=True,
                             capture_output=True, env=admin_env, timeout=60, check=False)
        assert out.returncode == 0, out.stderr
        bindir = tmp_path / "bin"
        bindir.mkdir()
        shim = bindir / "ctxlamp"
        shim.write_text(f"#!/bin/sh\ncd {ROOT} && exec {sys.executable} -m service.cli \"$@\"\n")
        shim.chmod(0o755)
        owner_env = member_env(tmp_path, 1)
        Path(owner_env["HOME"]).mkdir(parents=True, exist_ok=True)
        owner_env["PATH"] = f"{bindir}:{owner_env['PATH']}"
        owner_env.pop("PGPASSFILE", None)
        out = subprocess.run(["bash", "-e", "-c", fill(sh)], input=password + "\n", text=True,
                             capture_output=True, env=owner_env, timeout=180, check=False)
        assert out.returncode == 0, out.stdout + out.stderr
        assert password not in out.stdout + out.stderr
        url = out.stdout.strip().splitlines()[-1]
        assert url.startswith("postgresql://ctxlamp_alice_laptop_") and address in url
        owners = Path(owner_env["HOME"]) / ".pgpass"
        assert stat.S_IMODE(owners.stat().st_mode) == 0o600 and f":ctxlamp_owner:{password}" in owners.read_text()
        kept = Path(owner_env["CTXLAMP_HOME"]) / "pgpass"
        assert str(kept) in out.stdout and stat.S_IMODE(kept.stat().st_mode) == 0o600
        # the member: its URL in [team] url, its line of the password file in its own config folder
        member = member_env(tmp_path, 2)
        member.pop("PGPASSFILE", None)
        role = schema.role_name(A)
        (Path(member["CTXLAMP_HOME"]) / "pgpass").write_text(
            "".join(line + "\n" for line in kept.read_text().splitlines() if f":{role}:" in line))
        os.chmod(Path(member["CTXLAMP_HOME"]) / "pgpass", 0o600)
        r = ctl(member, "team", "report", "--json", "--url", url)
        assert r.returncode == 0, r.stderr
        assert A in json.loads(r.stdout)["members"]
        assert srv.sql("SELECT has_schema_privilege('public', 'public', 'CREATE')",
                       database="ctxlamp_team") == [(False,)]
    finally:
        srv.cleanup()


# ---------- TLS ----------

def test_a_remote_host_without_sslmode_gets_verify_full(monkeypatch, tmp_path):
    from psycopg2 import extensions

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crt
    for name in ("PGSSLMODE", "PGSSLROOTCERT", "PGHOST", "PGHOSTADDR"):
        monkeypatch.delenv(name, raising=False)
    params = server.connection_params
    for local in ("postgresql://m@127.0.0.1:5/t", "postgresql://m@localhost/t", "postgresql://m@[::1]/t",
                  "postgresql:///t?host=/run/postgresql", "postgresql://m@127.0.0.2,localhost/t"):
        assert "sslmode" not in params(local), local
    assert params("postgresql://m@db.example/t?sslmode=disable").get("sslmode") is None  # as written
    assert params("postgresql://m@db.example/t?sslrootcert=/ca.pem")["sslmode"] == "verify-full"
    assert "sslrootcert" not in params("postgresql://m@db.example/t?sslrootcert=/ca.pem")
    assert "sslmode" in params("postgresql://m@127.0.0.1,db.example/t")  # one host beyond this machine is enough
    if extensions.libpq_version() >= server.SYSTEM_CAS_LIBPQ:
        got = params("postgresql://m@db.example/t")
        assert (got["sslmode"], got["sslrootcert"]) == ("verify-full", "system")
    monkeypatch.setattr(extensions, "libpq_version", lambda: 150000)
    with pytest.raises(server.TeamError, match=re.escape("sslmode=verify-full&sslrootcert=/path/to/ca.pem")):
        params("postgresql://m:pw@db.example/t")
    (tmp_path / ".postgresql").mkdir()
    (tmp_path / ".postgresql" / "root.crt").write_text("")
    assert params("postgresql://m@db.example/t")["sslmode"] == "verify-full"


def _this_machines_address() -> str | None:
    """A non-loopback address of this machine (a server beyond 'this machine' as libpq sees it), if any."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


def _certificates(folder: Path, address: str) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate it signed for `address`: (ca.pem, server.crt, server.key)."""
    def run(*args: str) -> None:
        out = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0, out.stderr

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=ctxlamp test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
        f"/CN={address}")
    (folder / "ext.cnf").write_text(f"subjectAltName=IP:{address}\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf")
    return folder / "ca.pem", folder / "server.crt", folder / "server.key"


def test_a_remote_server_is_reached_with_a_checked_certificate_only(tmp_path):
    if BINDIR is None:
        pytest.skip(NO_PG)
    address = _this_machines_address()
    if address is None or shutil.which("openssl") is None:
        pytest.skip("no non-loopback address or no openssl on this machine")
    srv = PgServer(BINDIR)
    try:
        srv.start(listen=f"127.0.0.1,{address}")  # no TLS yet
        owner = srv.fresh_database("door_tls")
        schema.init(owner)
        pgpass = tmp_path / "pgpass"
        local_url = schema.add_member(owner, A, pgpass)
        remote_url = local_url.replace("127.0.0.1", address)
        role, port = schema.role_name(A), str(srv.port)
        passfile.put(pgpass, address, port, "door_tls", role, passfile.lookup(pgpass, "127.0.0.1", port, "door_tls",
                                                                              role))
        with (srv.data / "pg_hba.conf").open("a") as hba:
            hba.write(f"hostssl all all {address}/32 scram-sha-256\n")
        env = member_env(tmp_path, 1)
        env["PGPASSFILE"] = str(pgpass)
        env["HOME"] = str(tmp_path / "home-without-root-crt")
        assert ctl(env, "team", "report", "--url", local_url).returncode == 0  # loopback: as before, no TLS
        r = ctl(env, "team", "report", "--url", remote_url)  # the server offers no TLS: no plain-text fall back
        assert r.returncode == 3 and "SSL" in r.stderr, r.stderr
        tls = srv.base / "tls"  # where the server's user may read
        tls.mkdir()
        ca, crt, key = _certificates(tls, address)
        key.chmod(0o600)
        if srv.user:
            for f in (tls, crt, key):
                os.chown(f, srv.user.pw_uid, srv.user.pw_gid)
        srv.stop()
        srv.start(listen=f"127.0.0.1,{address}", settings=("ssl=on", f"ssl_cert_file={crt}", f"ssl_key_file={key}"))
        r = ctl(env, "team", "report", "--url", remote_url)  # a certificate no CA of the system signed
        assert r.returncode in (3, 4) and "certificate" in r.stderr, r.stderr
        r = ctl(env, "team", "report", "--json", "--url", f"{remote_url}?sslrootcert={ca}")
        assert r.returncode == 0, r.stderr
        assert A in json.loads(r.stdout)["members"]
    finally:
        srv.cleanup()


# ---------- the pieces, without a server ----------

def test_redact_takes_every_form_of_a_password():
    from service.redact import RedactingFormatter, redact

    url = "postgresql://alice:s3cr%t@db.example:5432/team"
    libpq = 'invalid dsn: invalid percent-encoded token: "s3cr%t"'
    assert "s3cr" not in redact(libpq, url) and redact(libpq, url).endswith('"***"')
    assert redact(f"could not parse {url}") == "could not parse postgresql://alice:***@db.example:5432/team"
    assert redact("host=h password='a b' user=u") == "host=h password=*** user=u"
    assert redact("postgresql://u@h/db?sslmode=require&password=pw1") == "postgresql://u@h/db?sslmode=require&password=***"
    encoded = "postgresql://bob:p%40ss%2Fw@h/db"
    assert "p@ss/w" not in redact("auth failed for p@ss/w", encoded)  # decoded, as a driver may print it
    assert redact("postgresql://m@h/db is fine") == "postgresql://m@h/db is fine"  # no password: untouched
    import logging

    record = logging.LogRecord("ctxlamp.team", logging.WARNING, __file__, 1, "team push: %s", (url,), None)
    assert "s3cr" not in RedactingFormatter("%(message)s").format(record)


@pytest.mark.parametrize("wrap", ["{url}", "bad url: {url}!", 'token: "{pw}"', "{pw}\n{url}"])
def test_redact_property_no_password_survives(wrap):
    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    from service.redact import redact

    @settings(max_examples=300, deadline=None)
    @given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
    def check(pw: str) -> None:
        assume("*" not in pw)  # the mask itself is made of it
        url = f"postgresql://alice:{pw}@db.example:5432/team"
        assert pw not in redact(wrap.format(url=url, pw=pw), url)

    check()


def test_the_password_file_is_libpqs_format_and_stays_private(tmp_path):
    import os
    import stat

    path = tmp_path / "cfg" / "pgpass"
    passfile.put(path, "::1", "5432", "team", "ctxlamp_a", "first")
    passfile.put(path, "db.example", "*", "team", "ctxlamp_b", "b:pw\\x")
    passfile.put(path, "::1", "5432", "team", "ctxlamp_a", "second")  # replaces its line
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert lines == ["db.example:*:team:ctxlamp_b:b\\:pw\\\\x", "\\:\\:1:5432:team:ctxlamp_a:second"]
    assert passfile.lookup(path, "::1", "5432", "team", "ctxlamp_a") == "second"
    assert passfile.lookup(path, "db.example", "6543", "team", "ctxlamp_b") == "b:pw\\x"
    assert passfile.lookup(path, "db.example", "6543", "other", "ctxlamp_b") is None


def test_member_urls_carry_no_password_and_names_are_cleaned():
    from service.team.figures import shared_name

    url = schema.member_url("postgresql://owner:pw@[::1]:5433/team?sslmode=verify-full&password=pw", "ctxlamp_a_1")
    assert url == "postgresql://ctxlamp_a_1@[::1]:5433/team?sslmode=verify-full"
    assert shared_name("claude\x1b[2J-opus\u202e") == "claude[2J-opus" and len(shared_name("x" * 500)) == 200
    with pytest.raises(server.TeamError, match="printable"):
        schema.check_member_name("eve\x1b]0;x\x07")
    assert schema.check_member_name("  zoë@laptop ") == "zoë@laptop"
