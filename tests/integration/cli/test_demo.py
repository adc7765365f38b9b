"""The demo: its transcript walks the lamp through every colour, and the bundled data is real output."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from service.cli.demo_session import generate, play
from service.engine_setup.engines import load_prices, new_engine
from tests.support.corpus import ROOT


def test_demo_session_walks_white_green_amber_red_in_order():
    eng = new_engine("/tmp/demo.jsonl", load_prices(), full_events=False)
    for e in generate("/tmp/ctxlamp-demo-project"):
        eng.ingest(e)
    eng.finish()
    colours = [ev["lamp"] for ev in eng.drain_events() if ev["event"] == "call"]
    assert list(dict.fromkeys(colours)) == ["warming", "good", "warning", "critical"]  # first seen in this order
    assert colours[-1] == "critical"
    assert len(colours) == 120 and eng.reminders  # about a minute at 0.5 s a call, with reminders


def test_bundled_demo_data_is_what_make_demo_measures(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "resources/demo/make_demo.py"), str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("status.json", "series.json", "segments.json", "channels.json", "config.json"):
        fresh = json.loads((tmp_path / name).read_text())
        bundled = json.loads((ROOT / "resources/demo" / name).read_text())
        assert fresh == bundled, f"resources/demo/{name} is stale: run resources/demo/make_demo.py"


def test_the_demo_is_dated_as_it_is_written(tmp_path):
    """Each entry carries the time it was written, as Claude Code's do: a session played at 03:58 started at
    03:58, and the cache is warm while calls arrive (not "expired" because the entries were dated earlier)."""
    def at(e: dict) -> datetime:
        return datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))

    ticks = iter(datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone.utc) + timedelta(seconds=i // 3)
                 for i in range(100_000))  # three entries a second, as the clock reads while it plays
    project = tmp_path / "project"
    path = play(tmp_path / "claude", project, seconds_per_call=0, clock=lambda: next(ticks))
    written = [json.loads(line) for line in path.read_text().splitlines()]
    made = generate(str(project))
    assert len(written) == len(made)
    assert at(written[0]) == datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
    assert all(at(a) < at(b) for a, b in zip(written, written[1:]))  # the file's order is its time order
    assert at(written[-1]) - at(written[0]) < timedelta(seconds=len(made) // 3 + 1)  # the clock's, not generate's
    assert [{**w, "timestamp": None} for w in written] == [{**m, "timestamp": None} for m in made]
    results = [w["toolUseResult"] for w in written if isinstance(w.get("toolUseResult"), dict)]
    created = [r for r in results if r.get("type") == "create"]
    assert created and all(Path(c["filePath"]).read_text() == c["content"] for c in created)  # on disk, as written

    before = datetime.now(timezone.utc)
    path = play(tmp_path / "claude", project, seconds_per_call=0)
    lines = path.read_text().splitlines()
    first, last = at(json.loads(lines[0])), at(json.loads(lines[-1]))
    assert before - timedelta(milliseconds=1) <= first <= last <= datetime.now(timezone.utc) + timedelta(seconds=1)
