"""Issue 39, the team server tried again as a hostile member would, on a real PostgreSQL (tests/support/pg_server.py):
far-off days and money that is not a number in a member's own rows, a member holding the team's tables, a
password rotated by an owner that is not a superuser, odd names in the rows a push sends, invisible look-alike
names, and project labels other members can guess."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import time
import unicodedata
from pathlib import Path

import psycopg2
import pytest

from service import config
from service.team import bounds, passfile, schema, server
from service.team.migrations import steps
from service.client.textsafe import printable
from tests.integration.team import test_team_door as door
from tests.integration.team.test_team_door import member_conn, open_public, write_own
from tests.support.pg_server import PgServer
from tests.support.procs import ctl
from tests.support.team_history import MODELS, cost_state, member_env, write_member
from tests.support.transcripts import call, compact, prompt

A, B = "alice@laptop", "bob@desk"


pg = door.pg  # a server of this module's own, started as the door tests start theirs


def team_at(pg: PgServer, name: str, tmp_path: Path, version: int | None = None) -> tuple[str, dict[str, str], Path]:
    """A team database migrated to `version` (None: the newest) with members A and B: (owner URL, member URLs,
    the password file holding both members' lines)."""
    from models.migrations import migrate

    owner = pg.fresh_database(name)
    open_public(pg, name)
    pgpass = tmp_path / f"{name}.pgpass"
    db = schema._owner_db(server.connect(owner))
    try:
        migrate(db, steps() if version is None else steps()[:version])
    finally:
        db.close()
    urls = {m: schema.add_member(owner, m, pgpass) for m in (A, B)}
    return owner, urls, pgpass


def strict_json(text: str):
    """JSON as the standard has it: a bare NaN or Infinity is refused, as other readers refuse it."""
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def reader_env(tmp_path: Path, pgpass: Path, seed: int = 9) -> dict:
    env = member_env(tmp_path, seed)
    env["PGPASSFILE"] = str(pgpass)
    return env


# -- 10 and 11: days and money -------------------------------------------------------------------------------

HOSTILE_DAYS = ("5874897-01-01", "0044-03-15 BC", "4713-01-01 BC")
HOSTILE_MONEY = ("NaN", "Infinity", "-Infinity", "1e300")


def _hostile_rows(cur, member: str) -> int:
    """A member's own rows with days no reader holds and money that is not a number, written with plain SQL
    (what a schema before 0005 let it do); how many."""
    n = 0
    for i, day in enumerate(HOSTILE_DAYS):
        cur.execute("INSERT INTO ctxlamp_team.day_figures (member, day, model, project, main_usd, calls) "
                    "VALUES (%s, %s, %s, 'p', 1, 1)", (member, day, f"m{i}"))
        n += 1
    for i, usd in enumerate(HOSTILE_MONEY):
        cur.execute("INSERT INTO ctxlamp_team.day_figures (member, day, model, project, main_usd, rent_usd, calls) "
                    "VALUES (%s, '2026-11-02', %s, 'p', %s, 0, 1)", (member, f"money{i}", usd))
        n += 1
    cur.execute("INSERT INTO ctxlamp_team.channel_day (member, day, pinch_saved_usd, pinch_events) "
                "VALUES (%s, '2026-11-02', 'NaN', 1)", (member,))
    return n + 1


def test_a_members_far_off_day_or_money_that_is_not_a_number_never_breaks_the_team_report(pg, tmp_path, qtbot):
    owner, urls, pgpass = team_at(pg, "hostile_reader", tmp_path, version=4)  # no bounds yet: the rows get in
    with member_conn(urls[A], pgpass) as conn, conn.cursor() as cur:
        bad = _hostile_rows(cur, A)
    with member_conn(urls[B], pgpass) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO ctxlamp_team.day_figures (member, day, model, project, main_usd, rent_usd, calls) "
                    "VALUES (%s, '2026-11-01', 'claude-sonnet-4-5', 'p', 2.5, 0.25, 3)", (B,))
    assert schema.init(owner) == steps()[-1][0]  # migrated: the older rows stay where they are
    env = reader_env(tmp_path, pgpass)
    as_json = ctl(env, "team", "report", "--json", "--url", urls[B])
    assert as_json.returncode == 0, as_json.stderr
    doc = strict_json(as_json.stdout)
    assert doc["total_usd"] == pytest.approx(2.5) and doc["rent_usd"] == pytest.approx(0.25)
    assert doc["members"][A]["spend_usd"] == 0 and doc["members"][A]["pinch_saved_usd"] == 0
    assert doc["skipped_rows"] == {A: bad}
    assert list(doc["by_day"]) == ["2026-11-01"]
    text = ctl(env, "team", "report", "--url", urls[B])
    assert text.returncode == 0, text.stderr
    assert "nan" not in text.stdout.lower() and "inf" not in text.stdout.lower()
    assert f"skipped {bad} rows of {A}" in text.stdout
    # a period: only its rows, and the far-off ones outside it are not counted against it
    week = strict_json(ctl(env, "team", "report", "--json", "--url", urls[B], "--since", "2026-11-01",
                           "--until", "2026-11-07").stdout)
    assert week["total_usd"] == pytest.approx(2.5) and week["skipped_rows"] == {A: len(HOSTILE_MONEY) + 1}
    # the Team tab says it too
    from desktop.tabs.team import TeamTab

    tab = TeamTab(source=None)
    qtbot.addWidget(tab)
    tab.show_team({**doc, "member": B, "last_push": None})
    assert f"{bad} rows left out" in tab.head.text()


def test_the_server_refuses_far_off_days_and_money_that_is_not_a_number(pg, tmp_path):
    _owner, urls, pgpass = team_at(pg, "hostile_checks", tmp_path)
    with member_conn(urls[A], pgpass) as conn, conn.cursor() as cur:
        for day in HOSTILE_DAYS + ("1969-12-31",):
            with pytest.raises(psycopg2.errors.CheckViolation):
                write_own(cur, A, [{"day": day, "model": "m", "project": "p"}])
        for usd in HOSTILE_MONEY + ("-1e300", "1000000001"):
            for column in ("main_usd", "rent_usd", "unwritten_usd", "restart_first_usd"):
                with pytest.raises(psycopg2.errors.CheckViolation):
                    cur.execute("SELECT ctxlamp_team.push_day_figures(%s, pg_catalog.jsonb_build_array("
                                "pg_catalog.jsonb_build_object('day', '2026-11-01', 'model', 'm', 'project', 'p', "
                                f"'{column}', %s::float8)), '[]')", (A, usd))
            with pytest.raises(psycopg2.errors.CheckViolation):
                cur.execute("SELECT ctxlamp_team.push_channel_day(%s, pg_catalog.jsonb_build_array("
                            "pg_catalog.jsonb_build_object('day', '2026-11-01', 'pinch_saved_usd', %s::float8)), '[]')",
                            (A, usd))
        for column in ("g", "duration_s", "bill_in_usd"):
            with pytest.raises(psycopg2.errors.CheckViolation):
                cur.execute("SELECT ctxlamp_team.push_segment(%s, pg_catalog.jsonb_build_array("
                            "pg_catalog.jsonb_build_object('session', 's', 'segment', 1, 'day', '2026-11-01', "
                            f"'model', 'm', 'project', 'p', '{column}', 'NaN'::float8)), '[]')", (A,))
        # the bounds themselves are taken
        write_own(cur, A, [{"day": bounds.DAY_FIRST.isoformat(), "model": "m", "project": "p",
                            "main_usd": bounds.MONEY_MAX, "restart_first_usd": -bounds.MONEY_MAX},
                           {"day": bounds.DAY_LAST.isoformat(), "model": "m", "project": "p", "main_usd": 0.5}])
    doc = _report_as(urls[B], pgpass)
    assert doc["total_usd"] == pytest.approx(bounds.MONEY_MAX + 0.5) and doc["skipped_rows"] == {}


def _report_as(url: str, pgpass: Path) -> dict:
    from service.team.report import team_report

    old = os.environ.get("PGPASSFILE")
    os.environ["PGPASSFILE"] = str(pgpass)
    try:
        return team_report(url)
    finally:
        if old is None:
            os.environ.pop("PGPASSFILE", None)
        else:
            os.environ["PGPASSFILE"] = old


# -- 12: a member holding the team's tables ---------------------------------------------------------------------

def test_a_member_cannot_hold_the_team_tables_and_reports_never_wait_without_end(pg, tmp_path):
    # the schema before the writers (0006): a member's grants let it take every table for itself
    _owner, old_urls, old_pass = team_at(pg, "hostile_lock_old", tmp_path, version=5)
    holder = psycopg2.connect(old_urls[A], passfile=str(old_pass))
    with holder.cursor() as cur:
        cur.execute("LOCK TABLE ctxlamp_team.day_figures IN ACCESS EXCLUSIVE MODE")  # and keeps it
    try:
        env = reader_env(tmp_path, old_pass)
        started = time.monotonic()
        r = ctl(env, "team", "report", "--url", old_urls[B], timeout=server.LOCK_TIMEOUT_S + 60)
        waited = time.monotonic() - started
        assert r.returncode == 3 and "busy" in r.stderr and "lock" in r.stderr, r.stdout + r.stderr
        assert server.LOCK_TIMEOUT_S - 1 <= waited < server.LOCK_TIMEOUT_S + 30
    finally:
        holder.close()
    # the newest schema: no member may take a lock that blocks another member's reads or writes
    _owner, urls, pgpass = team_at(pg, "hostile_lock_new", tmp_path)
    with member_conn(urls[A], pgpass) as conn, conn.cursor() as cur:
        for table in ("day_figures", "channel_day", "segment", "member", "settings"):
            for mode in ("ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE ROW EXCLUSIVE", "SHARE", "ROW EXCLUSIVE"):
                cur.execute("BEGIN")
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(f"LOCK TABLE ctxlamp_team.{table} IN {mode} MODE")
                cur.execute("ROLLBACK")
            for sql in (f"SELECT 1 FROM ctxlamp_team.{table} FOR UPDATE", f"TRUNCATE ctxlamp_team.{table}"):
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(sql)
        write_own(cur, A, [{"day": "2026-11-01", "model": "m", "project": "p", "main_usd": 1}])  # it still writes
    # and every session ctxlamp opens carries the timeouts
    os.environ["PGPASSFILE"] = str(pgpass)
    try:
        conn = server.connect(urls[B])
        with conn.cursor() as cur:
            cur.execute("SHOW lock_timeout")
            assert cur.fetchone()[0] == f"{server.LOCK_TIMEOUT_S}s"
            cur.execute("SHOW statement_timeout")
            assert cur.fetchone()[0] == f"{server.STATEMENT_TIMEOUT_S // 60}min"
        conn.close()
    finally:
        os.environ.pop("PGPASSFILE", None)


def test_an_existing_team_migrates_its_members_to_the_writers(pg, tmp_path):
    owner, urls, pgpass = team_at(pg, "hostile_migrate", tmp_path, version=5)
    assert schema.init(owner) == steps()[-1][0]
    with member_conn(urls[A], pgpass) as conn, conn.cursor() as cur:
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("INSERT INTO ctxlamp_team.day_figures (member, day, model, project) "
                        "VALUES (%s, '2026-11-01', 'm', 'p')", (A,))
        write_own(cur, A, [{"day": "2026-11-01", "model": "m", "project": "p", "main_usd": 1}])
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            write_own(cur, B, [{"day": "2026-11-01", "model": "m", "project": "p", "main_usd": 1}])
        cur.execute("SELECT ctxlamp_team.push_day_figures(%s, '[]', %s::jsonb)",
                    (A, json.dumps([{"day": "2026-11-01", "model": "m", "project": "p"}])))
        cur.execute("SELECT count(*) FROM ctxlamp_team.day_figures")
        assert cur.fetchone()[0] == 0


# -- 13: rotation by an owner with CREATEROLE only ----------------------------------------------------------

def _password_of(pgpass: Path, url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    found = passfile.lookup(pgpass, parts.hostname, str(parts.port), parts.path.lstrip("/"), parts.username)
    assert found
    return found


def test_a_createrole_owner_that_is_not_superuser_rotates_a_password(pg, tmp_path):
    pg.sql("DROP DATABASE IF EXISTS hostile_rotate WITH (FORCE)", database="postgres")
    pg.sql("DROP ROLE IF EXISTS rot_owner", database="postgres")
    pg.sql("CREATE ROLE rot_owner LOGIN CREATEROLE NOSUPERUSER PASSWORD 'rot-owner-pw'", database="postgres")
    pg.sql("CREATE DATABASE hostile_rotate OWNER rot_owner", database="postgres")
    owner = pg.url("hostile_rotate", user="rot_owner", password="rot-owner-pw")
    assert schema.init(owner) == steps()[-1][0]
    pgpass = tmp_path / "rotate.pgpass"
    url = schema.add_member(owner, "carol@box", pgpass)
    first = _password_of(pgpass, url)
    psycopg2.connect(url, password=first).close()
    again = schema.add_member(owner, "carol@box", pgpass)  # the rotation
    assert again == url
    second = _password_of(pgpass, url)
    assert second != first
    psycopg2.connect(url, password=second).close()
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(url, password=first)  # the old one stopped working, as docs/team.md says
    # a role of that name with more than a member may hold is refused, not handed a password
    role = schema.role_name("dave@box")
    pg.sql(f'CREATE ROLE "{role}" LOGIN CREATEDB PASSWORD \'theirs\'', database="postgres")
    with pytest.raises(server.Refused, match="privileges no member may hold"):
        schema.add_member(owner, "dave@box", pgpass)
    psycopg2.connect(pg.url("postgres", user=role, password="theirs")).close()  # left as it was


# -- 14: one odd name never stops a push --------------------------------------------------------------------

LONG_FOLDER = "p" * 250
ODD_MODEL = MODELS[0] + "\x1b]0;pwned\x07"


def _odd_history(env: dict) -> None:
    """One session in a folder whose name is 250 characters, its cost-state holding a model key with escape
    codes: the requests Claude Code billed and did not write are booked on that model and folder."""
    claude = Path(env["CLAUDE_CONFIG_DIR"])
    sid = "00000077-0000-4000-8000-000000000000"
    cwd = f"/home/odd/{LONG_FOLDER}"
    folder = claude / "projects" / "-home-odd-long"
    folder.mkdir(parents=True, exist_ok=True)
    entries = [prompt("task", 0)]
    entries += [call(f"msg_odd_{i}", 10 + 20 * i, inn=100, cw5=400, cr=20_000, out=40, model=MODELS[0])
                for i in range(4)]
    entries.append(compact(150, pre=30_000, post=5_000))
    entries.append(call("msg_odd_after", 160, inn=50, cw5=5_000, cr=0, out=30, model=MODELS[0]))
    state = cost_state(entries, extra=(MODELS[0], [0, 0, 0, 30_000, 5_000]))
    state["modelUsage"][ODD_MODEL] = dict(state["modelUsage"][MODELS[0]])  # the same tokens, on an odd key
    entries.append(state)
    for e in entries:
        e["sessionId"], e["cwd"] = sid, cwd
    # a day later, another session: a call whose usage no account could run up (10^16 input tokens)
    absurd = [prompt("absurd", 86_400), call("msg_absurd", 86_410, inn=10 ** 16, out=10, model=MODELS[0])]
    for e in absurd:
        e["sessionId"], e["cwd"] = sid.replace("0077", "0078"), "/home/odd/other"
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    (folder / f"{sid.replace('0077', '0078')}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in absurd))


def test_one_odd_name_never_stops_a_push(pg, tmp_path):
    _owner, urls, pgpass = team_at(pg, "hostile_names", tmp_path)
    env = member_env(tmp_path, 7)
    env["PGPASSFILE"] = str(pgpass)
    _odd_history(env)
    local = json.loads(ctl(env, "report", "--json", "--no-service").stdout)
    measured = local["spend"]["unwritten"]["measured"]["by_session"]
    assert any(ODD_MODEL in row["by_model"] for row in measured.values())  # the odd key is booked
    cfg_path = Path(env["CTXLAMP_HOME"]) / "config.toml"
    config.save(cfg_path, config.merge(config.DEFAULTS, {"team": {"url": urls[A], "member": A, "projects": "name"}}))
    r = ctl(env, "team", "push")
    assert r.returncode == 0, r.stderr
    assert "1 rows left out" in r.stdout  # the absurd day: said, and every other row sent
    rows = pg.sql("SELECT model, project, unwritten_usd, main_usd FROM ctxlamp_team.day_figures",
                  database="hostile_names")
    assert rows and all(len(p) <= 200 and "\x1b" not in m and "\x07" not in m for m, p, _, _ in rows)
    assert {p for _, p, _, _ in rows} == {printable(LONG_FOLDER, 200)}
    assert printable(ODD_MODEL) in {m for m, _, u, _ in rows if u > 0}  # the odd key's spend, under a clean name
    assert sum(u for *_, u, _ in rows) == pytest.approx(local["spend"]["billed"]["unwritten_measured_usd"], abs=1e-6)
    absurd_usd = max(local["spend"]["by_day"].values())
    assert absurd_usd > bounds.MONEY_MAX
    others = sum(v for v in local["spend"]["by_day"].values() if v != absurd_usd)
    assert sum(m for *_, m in rows) == pytest.approx(others, abs=1e-6) and others > 0


# -- 15: invisible and look-alike names ---------------------------------------------------------------------

LOOK_ALIKES = ("al\u180eice", "alice\U000e0041\U000e0042", "ali\u115fce", "alice\ufe0f", "al\u034fice",
               "a\u00adlice", "alice\U000e0100", "ali\u3164ce", "\U0001d173alice")


def test_invisible_and_look_alike_names_are_refused_by_the_server_and_the_terminal_filter(pg, tmp_path):
    _owner, urls, pgpass = team_at(pg, "hostile_invisible", tmp_path)
    with member_conn(urls[A], pgpass) as conn, conn.cursor() as cur:
        for name in LOOK_ALIKES:
            assert printable(name) == "alice", repr(name)
            with pytest.raises(psycopg2.errors.CheckViolation):
                write_own(cur, A, [{"day": "2026-11-01", "model": name, "project": "p"}])
        for name in ("claude-opus-4-6", "é" * 200, "日本語のプロジェクト", "emoji \U0001f600"):
            write_own(cur, A, [{"day": "2026-11-01", "model": name, "project": "p"}])
    with pytest.raises(server.TeamError, match="printable"):
        schema.check_member_name("mallory\U000e0041")


def test_the_server_and_the_terminal_filter_refuse_the_same_characters(pg, tmp_path):
    """Every code point: the server's name CHECK refuses exactly what service/client/textsafe.py strips (tab and newline
    aside: the filter turns them into a space, a name refuses them), and that holds every format character
    (Cf), control, separator and default-ignorable code point."""
    pg.sql("DROP DATABASE IF EXISTS hostile_codepoints WITH (FORCE)", database="postgres")
    pg.sql("CREATE DATABASE hostile_codepoints", database="postgres")
    from service.team.migrations import steps as all_steps

    check = dict(all_steps())[5].name_check("n", True)
    refused = {c for (c,) in pg.sql(
        f"SELECT i FROM pg_catalog.generate_series(1, 1114111) AS i WHERE (i < 55296 OR i > 57343) "
        f"AND NOT (SELECT {check} FROM (SELECT pg_catalog.chr(i) AS n) AS x)", database="hostile_codepoints")}
    stripped = {c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF and printable(chr(c), 5) != chr(c)}
    assert refused == stripped and {0x09, 0x0A, 0x180E, 0xE0041} <= refused
    invisible = {c for c in range(1, 0x110000)
                 if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp") or 0xE0000 <= c <= 0xE0FFF
                 or 0xFE00 <= c <= 0xFE0F}
    assert invisible <= refused


# -- 16: project labels other members cannot guess ----------------------------------------------------------

def test_private_project_labels_cannot_be_guessed_by_the_other_members(pg, tmp_path):
    _owner, urls, pgpass = team_at(pg, "hostile_private", tmp_path)
    env = member_env(tmp_path, 5)
    env["PGPASSFILE"] = str(pgpass)
    write_member(Path(env["CTXLAMP_HOME"]), Path(env["CLAUDE_CONFIG_DIR"]), 5, days=1, sessions=2)
    cfg_path = Path(env["CTXLAMP_HOME"]) / "config.toml"
    folders = ("/home/member5/project0", "/home/member5/project1")

    def push(mode: str) -> set[str]:
        config.save(cfg_path, config.merge(config.load(cfg_path), {"team": {"url": urls[A], "member": A,
                                                                            "projects": mode}}))
        r = ctl(env, "team", "push")
        assert r.returncode == 0, r.stderr
        return {p for (p,) in pg.sql("SELECT DISTINCT project FROM ctxlamp_team.day_figures WHERE project <> ''",
                                     database="hostile_private")}

    # what member B does: it reads the team's key and hashes the folders it guesses
    team_key = pg.sql("SELECT value FROM ctxlamp_team.settings WHERE name = 'project_key'",
                      database="hostile_private")[0][0]

    def guesses(labels: set[str]) -> set[str]:
        return {f for f in folders if hmac.new(team_key.encode(), f.encode(), hashlib.sha256).hexdigest()[:16]
                in labels}

    assert guesses(push("hash")) == set(folders)  # the team's key: every member recovers the folders
    private = push("private")
    assert len(private) == 2 and all(len(p) == 16 for p in private)
    assert guesses(private) == set()
    key_file = Path(env["CTXLAMP_HOME"]) / "team-project-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    own = key_file.read_text().strip()
    assert own != team_key and own not in json.dumps(pg.sql(
        "SELECT * FROM ctxlamp_team.settings", database="hostile_private"))
    assert {hmac.new(own.encode(), f.encode(), hashlib.sha256).hexdigest()[:16] for f in folders} == private
    assert push("private") == private  # the same key on the next push: the labels stay
    again = ctl(env, "team", "push")
    assert " 0 rows sent" in again.stdout, again.stdout + again.stderr


def test_the_private_key_is_never_read_through_a_link(tmp_path):
    from service.team import ownkey

    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("a" * 64 + "\n")
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / ownkey.FILE_NAME).symlink_to(elsewhere)
    with pytest.raises(OSError):
        ownkey.load_or_make(folder)
    (folder / ownkey.FILE_NAME).unlink()
    key = ownkey.load_or_make(folder)
    assert len(key) == 64 and ownkey.load_or_make(folder) == key and elsewhere.read_text() == "a" * 64 + "\n"
