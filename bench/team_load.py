"""Team load: 50 members x 90 days of synthetic figures pushed at once, then `ctxlamp team report`.

Each member gets its own role (`team member add`) and its own local outbox
(a SQLite store in a temp folder); its rows are the shapes a real push sends
(day x model x project spend rows, a channel row per day, segment profiles),
staged in the outbox and sent by service.team.push.send from one thread per
member, all at once. Prints push throughput (rows/s) and the time of
`ctxlamp team report --json` (the whole CLI, Python start included, median of
--runs) and of its queries alone, with the query plan of the by-day sum.

    python bench/team_load.py [--members 50] [--days 90] [--runs 5] [--url OWNER_URL]

Without --url a throwaway PostgreSQL server is started from the installed
binaries (tests/support/pg_server.py; as root it runs as an unprivileged user).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("claude-sonnet-4-5", "claude-opus-4-6", "claude-haiku-4-5")
PROJECTS = 4
SEGMENTS_PER_DAY = 3


def synthetic_rows(member_index: int, days: int) -> dict:
    """(kind, key) -> payload, like service.team.figures.local_rows makes them."""
    from service.team.figures import CHANNEL_FIELDS, SEGMENT_FIELDS, row_key

    rnd = random.Random(member_index)
    rows = {}
    start = date(2026, 9, 1)
    for d in range(days):
        day = (start + timedelta(days=d)).isoformat()
        for model in MODELS:
            for p in range(PROJECTS):
                project = f"{(p * 7919 + 17):016x}"
                calls = rnd.randint(0, 80)
                rows[("day", row_key(day, model, project))] = {
                    "day": day, "model": model, "project": project, "main_usd": round(rnd.random() * 3, 9),
                    "subagents_usd": round(rnd.random() * 0.5, 9), "estimated_usd": 0.0, "calls": calls,
                    "main_calls": calls // 2, "unpriced_calls": 0, "rent_usd": round(rnd.random(), 9),
                    "reminders": rnd.randint(0, 2), "restarts_after_reminder": rnd.randint(0, 1)}
        rows[("channel", row_key(day))] = {"day": day, **{c: (round(rnd.random(), 9) if c.endswith("_usd")
                                                                else rnd.randint(0, 500)) for c in CHANNEL_FIELDS}}
        for s in range(SEGMENTS_PER_DAY):
            session = f"{member_index:08x}{d:04x}{s:04x}"
            payload = {"session": session, "segment": 0, "day": day, "model": MODELS[s % 3],
                       "project": f"{(s * 7919 + 17):016x}", "reminders": 1}
            for f in SEGMENT_FIELDS:
                payload[f.lower()] = "compact" if f == "end_reason" else rnd.randint(1, 1000)
            rows[("segment", row_key(session, 0))] = payload
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--members", type=int, default=50)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--url", help="an owner URL of an empty database (default: a throwaway server)")
    args = ap.parse_args()

    from service.store import Store
    from service.team import outbox, push, schema
    from service.team.report import team_report
    from service.team.settings import TeamSettings

    server = None
    owner = args.url
    if not owner:
        from tests.support.pg_server import PgServer, find_bindir

        bindir = find_bindir()
        if bindir is None:
            print("no PostgreSQL binaries found (install `postgresql`) or pass --url", file=sys.stderr)
            return 2
        server = PgServer(bindir)
        server.start()
        owner = server.fresh_database("team_load")
    tmp = Path(tempfile.mkdtemp(prefix="ctxlamp-team-load-"))
    os.environ["PGPASSFILE"] = str(tmp / "pgpass")  # the members' passwords (team member add), not the user's own
    try:
        schema.init(owner)
        t0 = time.perf_counter()
        members = []
        for i in range(args.members):
            name = f"member{i:03d}@bench"
            members.append((i, name, schema.add_member(owner, name)))
        print(f"roles: {args.members} created in {time.perf_counter() - t0:.2f} s")

        staged = []
        for i, name, url in members:
            store = Store(tmp / f"{i}.db")
            rows = synthetic_rows(i, args.days)
            assert store.team.team_outbox_write(name, put=outbox.changes(rows, []))
            staged.append((TeamSettings(url, name), store, len(rows)))
        total_rows = sum(n for _, _, n in staged)

        errors: list[BaseException] = []
        barrier = threading.Barrier(len(staged))

        def one(settings, store):
            try:
                barrier.wait()
                sent, waiting = push.send(settings, store)
                assert waiting == 0 and sent > 0
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(s, st)) for s, st, _ in staged]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        push_s = time.perf_counter() - t0
        if errors:
            raise errors[0]
        print(f"push: {total_rows} rows from {len(staged)} members at once in {push_s:.2f} s "
              f"= {total_rows / push_s:,.0f} rows/s ({total_rows // len(staged)} rows per member)")

        again = [push.send(s, st) for s, st, _ in staged[:5]]
        assert all(sent == 0 for sent, _ in again)

        reader = members[0][2]
        query_s = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            doc = team_report(reader)
            query_s.append(time.perf_counter() - t0)
        assert len(doc["members"]) == args.members and len(doc["by_day"]) == args.days
        env = dict(os.environ, CTXLAMP_HOME=str(tmp / "home"))
        cli_s = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "service.cli", "team", "report", "--json", "--url", reader],
                           cwd=ROOT, env=env, check=True, capture_output=True)
            cli_s.append(time.perf_counter() - t0)
        print(f"team report queries: median {statistics.median(query_s) * 1000:.0f} ms over {args.runs} runs "
              f"({args.members} members, {args.days} days)")
        print(f"`ctxlamp team report --json` (whole command): median {statistics.median(cli_s):.2f} s, "
              f"max {max(cli_s):.2f} s")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
        import psycopg2

        conn = psycopg2.connect(reader)
        with conn, conn.cursor() as cur:
            for title, sql in (
                    ("all days, every grouping of the report", "SELECT GROUPING(member, day, model, project), "
                     "SUM(main_usd + subagents_usd), SUM(calls), SUM(rent_usd) FROM ctxlamp_team.day_figures "
                     "GROUP BY GROUPING SETS ((member), (day), (model), (project))"),
                    ("one week (--since/--until)", "SELECT day, SUM(main_usd + subagents_usd) FROM "
                     "ctxlamp_team.day_figures WHERE day BETWEEN '2026-10-01' AND '2026-10-07' GROUP BY day")):
                cur.execute("EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF) " + sql)
                print(f"plan, {title}:\n  " + "\n  ".join(r[0] for r in cur.fetchall()))
        conn.close()
        for _, store, _ in staged:
            store.close()
    finally:
        if server is not None:
            server.cleanup()
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
