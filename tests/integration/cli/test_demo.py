"""The demo: its transcript walks the lamp through every colour, and the bundled data is real output."""
from __future__ import annotations

import json
import subprocess
import sys

from service.cli.demo_session import generate
from service.measure.engines import load_prices, new_engine
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
