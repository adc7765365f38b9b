"""Make the demo data that `ctxlamp screenshot --demo` and the window's demo mode show.

    .venv/bin/python resources/demo/make_demo.py

Every figure is measured, not simulated: demo sessions of our own making
(service/cli/demo_session.py) are written into a temporary Claude folder over two weeks,
then the real engine replays them (status, series, segment profiles) and the
real channel code buckets them (edits, pinch, retrieval), the service's overview
sums them (spend per day, model and project; rent). The JSON shapes are
those of docs/api.md.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

T_END = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
# (project, seed, calls, compact_at, days before T_END): the first three are the live sessions
SESSIONS = [("/home/dev/ctxlamp", 11, 150, 72, 0), ("/home/dev/webshop", 5, 40, None, 0),
            ("/home/dev/notes", 3, 4, None, 0)] + [
    ("/home/dev/ctxlamp" if i % 2 else "/home/dev/webshop", 100 + i, 45 + 9 * i, 30 if i % 3 == 0 else None,
     14 - 2 * i) for i in range(7)]


# older sessions used other models: one the price table lacks (priced by its family: an estimate)
MODELS = {4: "claude-opus-4-8", 6: "claude-haiku-4-5", 7: "claude-opus-4-8", 9: "claude-haiku-5-6"}


def session_id(i: int) -> str:
    return f"{i:08x}-demo-4000-8000-{i:012x}"


def write_sessions(claude: Path) -> list[Path]:
    from service.cli.demo_session import generate

    paths = []
    for i, (project, seed, calls, compact_at, days) in enumerate(SESSIONS):
        start = T_END - timedelta(days=days, hours=3 if i < 3 else 0, minutes=40 * i)
        entries = generate(project, seed=seed, calls=calls, start=start, session=session_id(i), compact_at=compact_at,
                           **({"model": MODELS[i]} if i in MODELS else {}))
        path = claude / "projects" / project.replace("/", "-") / f"{session_id(i)}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))
        paths.append(path)
    return paths


def measure(path: Path, excluded: set[str]) -> tuple[dict, dict, list[dict]]:
    """Status, series and segment profiles of one transcript, as the service computes them."""
    from service.engine import LineSplitter
    from service.measure.engines import load_prices, new_engine

    shown = f"~/.claude/projects/{path.parent.name}/{path.name}"  # not the temp folder: the output stays stable
    eng = new_engine(shown, load_prices(), full_events=False)
    eng.set_excluded(excluded)
    for line in LineSplitter().feed(path.read_bytes()):
        eng.feed_line(line)
    status = eng.snapshot()
    series = {"session_id": status["session_id"], "calls": eng.live_series(), "resets": eng.resets,
              "rewinds": eng.rewinds, "reminders": eng.reminders, "skeleton": status["skeleton"],
              "paths": eng.path_rows()}
    eng.finish("end")
    return status, series, eng.profiles


def main(argv: list[str] | None = None) -> None:
    out_dir = Path(argv[0]) if argv else HERE
    with tempfile.TemporaryDirectory() as tmp:
        claude = Path(tmp) / "claude"
        os.environ["CLAUDE_CONFIG_DIR"] = str(claude)
        os.environ["CTXLAMP_HOME"] = str(Path(tmp) / "home")
        paths = write_sessions(claude)
        snaps, series, profiles, archived = [], {}, [], []
        for i, path in enumerate(paths):
            # the demo user unticked the test logs of the first session (the Files tab shows it)
            excluded = {f"{SESSIONS[0][0]}/tests/test_report.py"} if i == 0 else set()
            status, ser, prof = measure(path, excluded)
            if i < 3:
                snaps.append(status)
                series[status["session_id"]] = ser
            profiles += prof
            # what the service's database holds: a live session's open segment is not archived yet
            archived += [p for p in prof if i >= 3 or p["end_reason"] != "end"]
        from service.report import answers as reports

        until = (T_END + timedelta(days=1)).isoformat()
        since = (T_END - timedelta(days=15)).isoformat()
        channels = {name: reports.channel(name, since=since, until=until, bucket="day")
                    for name in ("edit", "pinch", "retrieval")}
        from service.config import DEFAULTS
        from service.report.overview import overview

        overviews = {str(days): overview(days, archived, snaps, today=T_END.date()) for days in (1, 7, 30)}

    profiles.sort(key=lambda p: p["started_at"], reverse=True)
    status = {"sessions": snaps, "followed": snaps[0]["session_id"],
              "service": {"version": "demo", "started_at": snaps[0]["updated_at"],
                          "scan": {"state": "idle", "done": len(paths), "total": len(paths)},
                          "db": {"ok": True, "error": None}, "observer": "inotify", "observer_reason": None}}
    out = {"status.json": status, "series.json": series, "segments.json": {"segments": profiles},
           "channels.json": channels, "config.json": DEFAULTS, "overview.json": overviews}
    for name, obj in out.items():
        (out_dir / name).write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out_dir / name}")


if __name__ == "__main__":
    main(sys.argv[1:])
