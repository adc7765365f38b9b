"""What the report's bounds cost (service/team/bounds.py): `team_report` with and without them, back to back.

50 members x 90 days x 12 (model, project) rows = 54,000 day rows and 4,500 channel rows filled on the server
(generate_series), then the report run alternately with the bounded predicates and with none; prints the
median of each.

    python bench/team_bounds.py [--runs 7]

A throwaway PostgreSQL server is started from the installed binaries (tests/support/pg_server.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from service.team import report, schema
    from tests.support.pg_server import BINDIR, NO_PG, PgServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if BINDIR is None:
        print(NO_PG, file=sys.stderr)
        return 1
    srv = PgServer(BINDIR)
    srv.start()
    try:
        owner = srv.fresh_database("bounds")
        schema.init(owner)
        srv.sql("INSERT INTO ctxlamp_team.member (name, role) SELECT 'm' || i, 'r' || i "
                "FROM generate_series(1, 50) AS i", database="bounds")
        srv.sql("INSERT INTO ctxlamp_team.day_figures (member, day, model, project, main_usd, subagents_usd, calls, "
                "rent_usd) SELECT 'm' || i, DATE '2026-08-01' + d, 'model' || mod(k, 3), 'p' || (k / 3), random(), "
                "random(), 5, random() FROM generate_series(1, 50) AS i, generate_series(0, 89) AS d, "
                "generate_series(0, 11) AS k", database="bounds")
        srv.sql("INSERT INTO ctxlamp_team.channel_day (member, day, pinch_saved_usd) SELECT 'm' || i, "
                "DATE '2026-08-01' + d, random() FROM generate_series(1, 50) AS i, generate_series(0, 89) AS d",
                database="bounds")
        srv.sql("VACUUM ANALYZE", database="bounds")
        bounded = (report.DAY_OK, report.CHANNEL_OK)
        took: dict[str, list[float]] = {"with the bounds": [], "without": []}
        for _ in range(args.runs):
            for mode in took:
                report.DAY_OK, report.CHANNEL_OK = bounded if mode == "with the bounds" else ("true", "true")
                started = time.perf_counter()
                report.team_report(owner)
                took[mode].append(time.perf_counter() - started)
        for mode, times in took.items():
            print(f"team_report {mode}: median {statistics.median(times) * 1000:.0f} ms over {args.runs} runs")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        srv.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
