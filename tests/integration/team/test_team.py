"""The team view against a real PostgreSQL server (tests/support/pg_server.py): commands, row-level security,
the outbox through faults of either side, and team report == the sum of the members' local reports."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings

import pytest

from service.team import passfile
from tests.support.corpus import ROOT
from tests.support.pg_server import BINDIR, NO_PG, PgServer, free_port
from tests.support.procs import ctl
from tests.support.team_history import member_env, write_member

A, B = "alice@laptop", "bob@desk"


@pytest.fixture(scope="session")
def pg():
    if BINDIR is None:
        warnings.warn(NO_PG)
        print("\n" + NO_PG, file=sys.stderr)
        pytest.skip(NO_PG)
    server = PgServer(BINDIR)
    server.start()
    yield server
    server.cleanup()


def passfile_line(url: str) -> tuple[str, str, str, str]:
    """(host, port, database, user) of a member URL, as its password-file line is keyed."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname, str(parts.port), parts.path.lstrip("/"), parts.username


def spawn(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "service.cli", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class Team:
    """A fresh team database with members A and B, each with a local history of its own."""

    def __init__(self, pg: PgServer, tmp_path, name: str):
        self.pg = pg
        self.owner = pg.fresh_database(name)
        self.db = name
        pg.sql("GRANT CREATE ON SCHEMA public TO PUBLIC", database=name)  # as PostgreSQL 12-14 ship
        self.env = {A: member_env(tmp_path, 1), B: member_env(tmp_path, 2)}
        self.profiles = {}
        for seed, member in ((1, A), (2, B)):
            from pathlib import Path
            env = self.env[member]
            self.profiles[member] = write_member(Path(env["CTXLAMP_HOME"]), Path(env["CLAUDE_CONFIG_DIR"]), seed)
        r = ctl(self.env[A], "team", "init", "--url", self.owner)
        assert r.returncode == 0, r.stderr
        self.url = {m: self.add(m) for m in (A, B)}

    def add(self, member: str) -> str:
        """`team member add` run by the owner (A's machine); the member's password line handed to its machine."""
        r = ctl(self.env[A], "team", "member", "add", member, "--url", self.owner)
        assert r.returncode == 0, r.stderr
        url = r.stdout.strip().splitlines()[-1]
        password = self.password(member)
        assert password and password not in r.stdout + r.stderr and ":" not in url.split("@")[0].split("//")[1]
        if member != A:
            passfile.put(self.passfile(member), *passfile_line(url), password)
        return url

    def passfile(self, member: str):
        from pathlib import Path

        return Path(self.env[member]["CTXLAMP_HOME"]) / "pgpass"  # ctxlamp's config folder (CTXLAMP_HOME)

    def password(self, member: str) -> str | None:
        """The member's password as the owner's password file holds it."""
        from service.team.schema import role_name

        return passfile.lookup(self.passfile(A), "127.0.0.1", str(self.pg.port), self.db, role_name(member))

    def push(self, member: str, *, as_member: str | None = None, url: str | None = None):
        return ctl(self.env[member], "team", "push", "--url", url or self.url[member], "--member",
                   as_member or member)

    def report(self, *extra: str) -> dict:
        r = ctl(self.env[A], "team", "report", "--json", "--url", self.url[A], *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def local(self, member: str, *extra: str) -> dict:
        r = ctl(self.env[member], "report", "--json", "--no-service", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def rows(self, table: str = "day_figures") -> list[tuple]:
        return self.pg.sql(f"SELECT * FROM ctxlamp_team.{table} ORDER BY 1, 2, 3", database=self.db)

    def assert_equals_local(self, members=(A, B), *extra: str) -> dict:
        """team report == the sum of the members' local reports (and of their local databases' figures)."""
        team = self.report(*extra)
        by_model, by_day, total, billed, unwritten = {}, {}, 0.0, 0.0, 0.0
        for m in members:
            loc, got = self.local(m, *extra), team["members"][m]
            sp = loc["spend"]
            assert got["spend_usd"] == pytest.approx(sp["total_usd"], abs=1e-6)
            assert got["billed_usd"] == pytest.approx(sp["billed_usd"], abs=1e-5)  # issue 26: the headline
            billed += sp["billed_usd"]
            unwritten += sp["billed"]["unwritten_measured_usd"]
            assert got["main_usd"] == pytest.approx(sp["main_usd"], abs=1e-6)
            assert got["subagents_usd"] == pytest.approx(sp["subagents_usd"], abs=1e-6)
            assert got["calls"] == sp["calls"]
            assert got["pinch_saved_usd"] == pytest.approx(loc["pinch"]["saved_usd"], abs=1e-6)
            assert got["pinch_tokens_saved"] == loc["pinch"]["tokens_saved_total"]
            assert got["pinch_events"] == loc["pinch"]["events"]
            assert got["edit"]["str_replace_calls"] == loc["edit"]["str_replace_calls"]
            assert got["edit"]["str_replace_old_string_tokens"] == loc["edit"]["str_replace_old_string_tokens"]
            assert got["edit"]["str_replace_old_string_usd"] == pytest.approx(
                loc["edit"]["str_replace_old_string_usd"], abs=1e-6)
            for k in ("calls", "bytes_served", "bytes_saved"):
                assert got["retrieval"][k] == loc["retrieval"][k]
            if not extra:
                profiles = self.profiles[m]
                assert got["rent_usd"] == pytest.approx(sum(p["rent_usd"] for p in profiles), abs=1e-6)
                assert got["reminders"] == sum(1 for p in profiles if p["segment"] != 1)
                assert got["restarts_after_reminder"] == sum(1 for p in profiles if p["segment"] != 1)
                figures = [p["restart_savings"] for p in profiles]
                reminded = [f for f in figures if f["first_reminder_call"] is not None]
                assert got["restart_savings"] == pytest.approx({
                    "label": "estimated", "first_reminder_usd": sum(f["first_reminder_usd"] for f in reminded),
                    "best_single_usd": sum(f["best_usd"] for f in figures),
                    "missed_usd": sum(f["best_usd"] for f in figures if f not in reminded),
                    "segments_with_reminders": len(reminded)}, abs=1e-6)
            for k, v in sp["by_model"].items():
                by_model[k] = by_model.get(k, 0.0) + v
            for k, v in sp["by_day"].items():
                by_day[k] = by_day.get(k, 0.0) + v
            total += sp["total_usd"]
        assert team["total_usd"] == pytest.approx(total, abs=1e-6)
        assert team["billed_usd"] == pytest.approx(billed, abs=1e-5)
        assert team["unwritten_usd"] == pytest.approx(unwritten, abs=1e-5)
        assert unwritten > 0 or extra  # the compaction member A's cost-state counts (not in a one-day period)
        assert team["by_model"] == pytest.approx(by_model, abs=1e-6)
        assert team["by_day"] == pytest.approx(by_day, abs=1e-6)
        assert total > 0 and team["members"][members[0]]["pinch_saved_usd"] > 0
        assert team["members"][members[0]]["edit"]["str_replace_calls"] > 0
        assert team["members"][members[0]]["retrieval"]["calls"] > 0
        return team


@pytest.fixture
def team(pg, tmp_path, request):
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    return Team(pg, tmp_path, name)


def test_init_is_idempotent_and_member_add_prints_a_working_url(team):
    import os
    import stat
    from urllib.parse import quote

    r = ctl(team.env[A], "team", "init", "--url", team.owner)
    from service.team.migrations import steps

    newest = steps()[-1][0]  # the team schema's newest migration
    assert r.returncode == 0 and f"version {newest}" in r.stdout
    assert team.pg.sql("SELECT version FROM ctxlamp_team.schema_version", database=team.db) == [(newest,)]
    assert team.url[A].startswith("postgresql://ctxlamp_alice_laptop_") and "owner" not in team.url[A]
    assert stat.S_IMODE(os.stat(team.passfile(A)).st_mode) == 0o600
    old_password = team.password(A)
    with_password = team.url[A].replace("@", f":{quote(old_password, safe='')}@", 1)
    assert ctl(team.env[B], "team", "report", "--url", with_password).returncode == 0  # the old form still works
    again = team.add(A)  # a new password; the old one stops working
    assert again == team.url[A] and team.password(A) != old_password
    r = ctl(team.env[B], "team", "report", "--url", with_password)
    assert r.returncode == 4 and "password authentication failed" in r.stderr
    assert old_password not in r.stderr + r.stdout
    assert ctl(team.env[A], "team", "report", "--url", again).returncode == 0


def test_two_members_push_and_the_team_report_is_the_sum_of_their_local_reports(team):
    for m in (A, B):
        r = team.push(m)
        assert r.returncode == 0, r.stderr
        assert "all pushed" in r.stdout and len(r.stdout.strip().splitlines()) == 1
    team.assert_equals_local()
    team.assert_equals_local((A, B), "--since", "2026-11-02", "--until", "2026-11-02")
    text = ctl(team.env[A], "team", "report", "--url", team.url[B])
    assert text.returncode == 0 and A in text.stdout and B in text.stdout


def test_a_repeated_push_changes_nothing(team):
    assert team.push(A).returncode == 0
    before = team.pg.sql("SELECT xmin::text, * FROM ctxlamp_team.day_figures ORDER BY member, day, model, project",
                         database=team.db)
    again = team.push(A)
    assert again.returncode == 0 and " 0 rows sent" in again.stdout
    # the same rows sent again (an outbox lost): the upsert leaves every row as it was
    _outbox(team, A, forget_confirmations=True)
    third = team.push(A)
    assert third.returncode == 0 and " 0 rows sent" not in third.stdout
    after = team.pg.sql("SELECT xmin::text, * FROM ctxlamp_team.day_figures ORDER BY member, day, model, project",
                        database=team.db)
    assert after == before and len(after) > 0


def test_member_b_cannot_change_a_rows_with_sql(team):
    import psycopg2

    assert team.push(A).returncode == 0
    before = team.rows()
    conn = psycopg2.connect(team.url[B], passfile=str(team.passfile(B)))  # as psql finds it
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM ctxlamp_team.day_figures WHERE member = %s", (A,))
        assert cur.fetchone()[0] == len(before) > 0  # B reads the team's rows
        own = json.dumps([{"day": "2026-01-01", "model": "m", "project": "p", "main_usd": 1}])
        cur.execute("SELECT ctxlamp_team.push_day_figures(%s, %s::jsonb, '[]')", (B, own))  # its own rows: yes
        for sql in ("INSERT INTO ctxlamp_team.day_figures (member, day, model, project) "
                    "VALUES ('alice@laptop', '2026-01-01', 'm', 'p')",
                    "UPDATE ctxlamp_team.day_figures SET main_usd = 0 WHERE member = 'alice@laptop'",
                    "DELETE FROM ctxlamp_team.day_figures WHERE member = 'alice@laptop'",
                    "UPDATE ctxlamp_team.day_figures SET member = 'alice@laptop' WHERE member = 'bob@desk'",
                    "INSERT INTO ctxlamp_team.member (name, role) VALUES ('eve', 'eve')",
                    "UPDATE ctxlamp_team.settings SET value = 'x'",
                    f"SELECT ctxlamp_team.push_day_figures('alice@laptop', '{own}'::jsonb, '[]')",
                    "SELECT ctxlamp_team.push_day_figures('alice@laptop', '[]', "
                    "'[{\"day\": \"2026-01-01\", \"model\": \"m\", \"project\": \"p\"}]')"):
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(sql)
    conn.close()
    assert [r for r in team.rows() if r[0] == A] == [r for r in before if r[0] == A]


def test_push_as_a_with_b_url_is_refused_and_nothing_is_lost(team):
    assert team.push(A).returncode == 0
    before = team.rows()
    r = team.push(B, as_member=A)
    assert r.returncode == 4, r.stdout + r.stderr
    assert f"writes as member {B}, not as {A}" in r.stderr and "nothing lost" in r.stderr
    assert f"writes as '{B}'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert team.rows() == before
    ok = team.push(B)  # B's own figures still go
    assert ok.returncode == 0, ok.stderr
    assert [r for r in team.rows() if r[0] == A] == [r for r in before if r[0] == A]


def test_revised_figures_replace_the_older_ones(team):
    from pathlib import Path

    from tests.support.transcripts import call

    assert team.push(A).returncode == 0
    rows_before = len(team.rows())
    folder = next((Path(team.env[A]["CLAUDE_CONFIG_DIR"]) / "projects").iterdir())
    transcript = next(folder.glob("*.jsonl"))
    first = json.loads(transcript.read_text().splitlines()[0])
    late = call("msg_late", 30, inn=5000, cw5=0, cr=100_000, out=900, model="claude-sonnet-4-5")
    late["sessionId"], late["cwd"] = first["sessionId"], first["cwd"]
    with transcript.open("a") as fh:
        fh.write(json.dumps(late) + "\n")
    r = team.push(A)
    assert r.returncode == 0 and " 0 rows sent" not in r.stdout
    assert len(team.rows()) == rows_before  # the day's row was replaced, not added to
    team.assert_equals_local((A,))


def test_unreachable_at_start_then_pushed_when_it_is_back(team, tmp_path):
    nobody = f"postgresql://x:y@127.0.0.1:{free_port()}/team"
    r = team.push(A, url=nobody)
    assert r.returncode == 3 and "unreachable" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert team.push(A).returncode == 0  # learns the key; later pushes stage first
    team.pg.stop()
    try:
        for m in (A, B):  # A stages first (its key is known), B cannot even learn the key
            r = team.push(m)
            assert r.returncode == 3 and "nothing lost" in r.stderr, r.stderr
    finally:
        team.pg.start()
    for m in (A, B):
        assert team.push(m).returncode == 0
    team.assert_equals_local()


def _push_waiting_on_a_lock(team, member: str):
    """A push of `member` started and stuck inside its server transaction (the owner holds a table lock)."""
    import psycopg2

    hold = psycopg2.connect(team.owner)
    hold.cursor().execute("LOCK TABLE ctxlamp_team.day_figures IN ACCESS EXCLUSIVE MODE")
    proc = spawn(team.env[member], "team", "push", "--url", team.url[member], "--member", member)
    deadline = time.monotonic() + 60
    while True:
        waiting = team.pg.sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND query LIKE 'SELECT ctxlamp_team.push_day_figures%%'", database="postgres")
        if waiting[0][0]:
            return hold, proc
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the push never reached the server"
        time.sleep(0.05)


def _outbox(team, member: str, forget_confirmations: bool = False) -> list[tuple]:
    """The member's outbox rows; `forget_confirmations` makes every row pending again (an outbox lost)."""
    import sqlite3
    from pathlib import Path

    db = sqlite3.connect(Path(team.env[member]["CTXLAMP_HOME"]) / "ctxlamp.db")
    try:
        if forget_confirmations:
            db.execute("UPDATE team_outbox SET confirmed = NULL")
            db.commit()
        return db.execute("SELECT kind, key, digest, confirmed FROM team_outbox").fetchall()
    finally:
        db.close()


def test_the_pushing_process_killed_mid_push_loses_nothing(team):
    assert team.push(A).returncode == 0 and team.push(A).returncode == 0  # key known, all confirmed
    _outbox(team, A, forget_confirmations=True)  # as if these rows were new
    team.pg.sql("DELETE FROM ctxlamp_team.day_figures", database=team.db)  # and the server had none of them
    hold, proc = _push_waiting_on_a_lock(team, A)
    proc.kill()  # the member's machine dies mid-push
    proc.communicate()
    hold.close()
    assert not [r for r in team.rows() if r[0] == A]
    assert all(confirmed is None for *_, confirmed in _outbox(team, A))  # still pending, on disk
    r = team.push(A)
    assert r.returncode == 0 and " 0 rows sent" not in r.stdout, r.stderr
    assert all(digest == confirmed for _, _, digest, confirmed in _outbox(team, A))
    team.assert_equals_local((A,))


def test_server_killed_mid_push_and_restarted(team):
    assert team.push(B).returncode == 0  # B's key is known locally from now on
    hold, proc = _push_waiting_on_a_lock(team, A)
    try:
        team.pg.crash()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, out + err
        assert "nothing lost" in err
    finally:
        if proc.poll() is None:
            proc.kill()
        try:
            hold.close()
        except Exception:
            pass
        if team.pg.proc is None:
            team.pg.start()
    assert team.rows() and not [r for r in team.rows() if r[0] == A]  # the push's transaction never committed
    r = team.push(A)
    assert r.returncode == 0, r.stderr
    team.assert_equals_local()


def test_two_members_pushing_at_once(team):
    procs = [spawn(team.env[m], "team", "push", "--url", team.url[m], "--member", m) for m in (A, B)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, out + err
    team.assert_equals_local()


@pytest.mark.parametrize("mode", ["hash", "name", "none"])
def test_what_is_shared_never_holds_prompts_or_paths(team, mode):
    from pathlib import Path

    from service import config

    cfg_path = Path(team.env[A]["CTXLAMP_HOME"]) / "config.toml"
    config.save(cfg_path, config.merge(config.DEFAULTS, {"team": {"url": team.url[A], "member": A,
                                                                   "projects": mode}}))
    r = ctl(team.env[A], "team", "push")  # the [team] section, no flags
    assert r.returncode == 0, r.stderr
    dump = "\n".join(repr(row) for t in ("day_figures", "channel_day", "segment") for row in team.rows(t))
    assert "/" not in dump and "task " not in dump and "00000001-0000" not in dump
    projects = {row[3] for row in team.rows()}
    expected = {"hash": lambda p: len(p) == 16 and int(p, 16) >= 0, "name": lambda p: p in ("project0", "project1"),
                "none": lambda p: p == ""}[mode]
    assert projects and all(expected(p) for p in projects), projects
    assert config.load(cfg_path)["team"]["key"]  # the team's key, kept locally


def test_the_service_pushes_every_push_every_and_serves_the_team_view(team, qtbot, monkeypatch):
    from pathlib import Path

    from service import config
    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    env = team.env[A]
    home = Path(env["CTXLAMP_HOME"])
    config.save(home / "config.toml", config.merge(config.DEFAULTS, {"team": {
        "url": team.url[A], "member": A, "push_every": "1s"}}))
    with running_service(env, home) as (_proc, info):
        deadline = time.monotonic() + 90
        while not [r for r in team.rows() if r[0] == A]:
            assert time.monotonic() < deadline, "the service never pushed"
            time.sleep(0.2)
        client = ApiClient(info, timeout=30)
        deadline = time.monotonic() + 30
        view = client.get("/api/v1/team")
        while not (view.get("last_push") or {}).get("ok"):
            assert time.monotonic() < deadline, view
            time.sleep(0.2)
            view = client.get("/api/v1/team")
        # the window shows a Team tab only with a team, and reads it through the service's API
        from desktop.connection.datasource import ApiSource, DemoSource
        from desktop.window import MainWindow

        monkeypatch.setenv("CTXLAMP_HOME", str(home))
        win = MainWindow(ApiSource())
        qtbot.addWidget(win)
        assert win.team_tab is not None and win.tabs.tabText(win.tabs.indexOf(win.team_tab)) == "Team"
        win.tabs.setCurrentWidget(win.team_tab)
        shown = [win.team_tab.members.item(r, 0).text() for r in range(win.team_tab.members.rowCount())]
        assert A in shown and B in shown  # B is a member (no figures yet)
        from desktop.present import fmt
        from desktop.tabs.team import MEMBER_COLUMNS

        row = shown.index(A)
        estimate = win.team_tab.members.item(row, MEMBER_COLUMNS.index("restart savings (est.)")).text()
        assert estimate == fmt.usd(view["members"][A]["restart_savings"]["first_reminder_usd"]) != "–"
        assert "you are alice@laptop" in win.team_tab.head.text()
        assert win.team_tab.projects.rowCount() == 2  # two hashed projects
        demo = MainWindow(DemoSource())
        qtbot.addWidget(demo)
        assert demo.team_tab is None and "Team" not in [demo.tabs.tabText(i) for i in range(demo.tabs.count())]
        # `team push` while the service runs asks it (only the service writes the local database)
        r = ctl(env, "team", "push")
        assert r.returncode == 0 and "through the running service" in r.stdout and "all pushed" in r.stdout, r.stderr
        r = ctl(env, "team", "push", "--member", B)
        assert r.returncode == 4 and "through the running service" in r.stderr and f"writes as '{A}'" in r.stderr
    assert view["member"] == A and view["last_push"]["waiting"] == 0
    local = team.local(A)
    assert view["members"][A]["spend_usd"] == pytest.approx(local["spend"]["total_usd"], abs=1e-6)
    assert view["members"][A]["calls"] == local["spend"]["calls"]
    assert view["by_day"] == pytest.approx(local["spend"]["by_day"], abs=1e-6)


def test_the_local_store_also_runs_on_a_postgresql_database_url(pg):
    """`database.url = "postgresql://..."` (one user's store on a server): migrations, writes, reads, the outbox."""
    from service.store import Store

    url = pg.fresh_database("local_store")
    st = Store(url)
    try:
        assert st.health() == {"ok": True, "error": None}
        st.sessions.upsert_session("s1", project="/p", model="m")
        st.sessions.archive_profile({"session_id": "s1", "segment": 0, "rent_usd": 1.5, "path_totals": {"a.py": 3}})
        assert st.sessions.record_reminder("s1", 0, 1, 3, "2026-11-01T00:00:00Z") is True
        assert st.sessions.record_reminder("s1", 0, 1, 3, "2026-11-01T00:00:00Z") is False
        st.spend.add_spend("2026-11-01", "s1", "m", "/p", False, {"in": 3}, 0.5)
        st.spend.add_spend("2026-11-01", "s1", "m", "/p", False, {"in": 2}, 0.25)
        assert [p["rent_usd"] for p in st.sessions.segments()] == [1.5]
        assert st.spend.spend_rows()[0]["usd"] == 0.75 and st.spend.spend_rows()[0]["tokens"]["in"] == 5
        row = {"kind": "day", "key": "[1]", "payload": {"a": 1}, "digest": "d1"}
        assert st.team.team_outbox_write("me", put=[row])
        assert st.team.team_outbox_write("me", confirm=[["day", "[1]", "d1"]])
        assert st.team.team_outbox("me")[0]["confirmed"] == "d1"
        assert pg.sql("SELECT version FROM schema_version", database="local_store")[0][0] >= 2
    finally:
        st.close()


def test_real_transcripts_pushed_equal_the_local_report(team, tmp_path):
    """Transcripts written by the real Claude Code CLI (the project's fixtures: subagents, compactions), and
    the third-party real transcripts too when ../shared is there."""
    from tests.support.corpus import REAL_FIXTURES, copy_fixtures

    if not REAL_FIXTURES.is_dir():
        warnings.warn(f"{REAL_FIXTURES} is absent: only the project's own fixtures are pushed")
    claude = copy_fixtures(tmp_path / "real-claude", real=REAL_FIXTURES.is_dir())
    team.env[A]["CLAUDE_CONFIG_DIR"] = str(claude)
    for _attempt in range(2):  # the second push must change nothing
        r = team.push(A)
        assert r.returncode == 0, r.stderr
    assert " 0 rows sent" in r.stdout
    team.assert_equals_local((A,))
