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
        if i == 0:  # Claude Code's own count: the headline adds the compaction request it did not write
            entries.append(cost_state(entries))
        path = claude / "projects" / project.replace("/", "-") / f"{session_id(i)}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))
        paths.append(path)
    return paths


def cost_state(entries: list[dict]) -> dict:
    """The cost-state Claude Code writes at the end of a session: its calls' tokens per model, plus each
    compaction's request (the prompt read from the cache, the summary written as output)."""
    calls: dict[str, tuple[str, list[int]]] = {}  # one call, several entries: its largest revision counts
    compactions: list[tuple[str, int, int]] = []
    model = None
    for e in entries:
        msg = e.get("message") or {}
        u = msg.get("usage") if e.get("type") == "assistant" else None
        if u:
            model = msg["model"]
            split = u.get("cache_creation") or {}
            tokens = [u["input_tokens"], split.get("ephemeral_5m_input_tokens", u["cache_creation_input_tokens"]),
                      split.get("ephemeral_1h_input_tokens", 0), u["cache_read_input_tokens"], u["output_tokens"]]
            if msg["id"] not in calls or sum(tokens) >= sum(calls[msg["id"]][1]):
                calls[msg["id"]] = (model, tokens)
        elif e.get("subtype") == "compact_boundary" and model:
            meta = e["compactMetadata"]
            compactions.append((model, meta["preTokens"], meta["postTokens"]))
    usage: dict[str, list[int]] = {}
    for m, tokens in calls.values():
        usage[m] = [a + b for a, b in zip(usage.get(m, [0] * 5), tokens)]
    for m, read, summary in compactions:
        usage[m][3] += read
        usage[m][4] += summary
    last = entries[-1]
    return {"type": "cost-state", "sessionId": last["sessionId"], "timestamp": last["timestamp"],
            "totalCostUSD": 0.0, "modelUsage": {m: {
                "inputTokens": u[0], "cacheCreationEphemeral5mInputTokens": u[1],
                "cacheCreationEphemeral1hInputTokens": u[2], "cacheCreationInputTokens": u[1] + u[2],
                "cacheReadInputTokens": u[3], "outputTokens": u[4]} for m, u in usage.items()}}


# the demo user's budgets (Settings) and what Claude Code's status line reported of the plan windows:
# (minutes before T_END, five-hour %, weekly %), the five-hour window resetting at 14:00
BUDGETS = {"budgets": {"daily_usd": 8.0, "monthly_usd": 150.0, "notice_pct": 80.0}}
PLAN_READINGS = [(80, 20.0, 31.0), (55, 31.0, 32.0), (30, 42.0, 33.0), (5, 53.0, 34.0)]


def plan_limits() -> dict:
    """LIMITS as the service computes them from those readings (pace and run-out included)."""
    from service.statusline import reading
    from service.limits.book import Book

    book = Book()
    five_resets = (T_END.replace(hour=14, minute=0)).timestamp()
    week_resets = (T_END + timedelta(days=3)).timestamp()
    for minutes, five, week in PLAN_READINGS:
        body = {"session_id": session_id(0), "rate_limits": {
            "five_hour": {"used_percentage": five, "resets_at": five_resets},
            "seven_day": {"used_percentage": week, "resets_at": week_resets}}}
        book.record(session_id(0), reading.parse(body), now=T_END.timestamp() - minutes * 60)
    return book.limits()


def measure(path: Path, excluded: set[str]) -> tuple[dict, dict, list[dict]]:
    """Status, series and segment profiles of one transcript, as the service computes them."""
    from service.engine import LineSplitter
    from service.engine_setup.engines import load_prices, new_engine

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
            profiles += [{**p, "project": status.get("project")} for p in prof]  # as the history's API adds it
            # what the service's database holds: a live session's open segment is not archived yet
            archived += [p for p in prof if i >= 3 or p["end_reason"] != "end"]
        from service.api import channels
        from service.report import cached

        until = T_END.isoformat()  # the demo's "now": no day after it
        since = (T_END - timedelta(days=15)).isoformat()
        channel_docs = {name: channels.channel(name, since=since, until=until, bucket="day")
                    for name in ("edit", "pinch", "retrieval")}
        from service.config import DEFAULTS
        from service.api.overview import overview

        overviews = {str(days): overview(days, archived, snaps, today=T_END.date()) for days in (1, 7, 30)}
        from service.config import merge
        from service.report import budgets

        config = merge(DEFAULTS, BUDGETS)
        month = cached.report(T_END.date().replace(day=1).isoformat(), T_END.date().isoformat())
        budget_block = budgets.view(config, month["spend"]["billed"]["by_day"], T_END.date(), "UTC")

    profiles.sort(key=lambda p: p["started_at"], reverse=True)
    status = {"sessions": snaps, "followed": snaps[0]["session_id"],
              "service": {"version": "demo", "started_at": snaps[0]["updated_at"],
                          "scan": {"state": "idle", "done": len(paths), "total": len(paths)},
                          "db": {"ok": True, "error": None}, "observer": "inotify", "observer_reason": None},
              "limits": plan_limits(), "budgets": budget_block}
    out = {"status.json": status, "series.json": series, "segments.json": {"segments": profiles},
           "channels.json": channel_docs, "config.json": config, "overview.json": overviews}
    for name, obj in out.items():
        (out_dir / name).write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out_dir / name}")


if __name__ == "__main__":
    main(sys.argv[1:])
