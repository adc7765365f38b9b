"""Issue 38 end to end: `ctxlamp report` (the real CLI, JSON and text) over a session with a fast stretch
and US-only calls, made from the real CLI's model-switch transcript (tests/support/modifiers.py)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import modifiers as M

ROOT = Path(__file__).resolve().parents[3]
CTXLAMP = ROOT / ".venv" / "bin" / "ctxlamp"
OPUS55 = "claude-opus-5-5"
STANDARD = {"input": 4.0, "output": 20.0, "cache_read": 0.20, "cache_write_5m": 5.0}


def run_report(tmp_path: Path, *args: str) -> str:
    projects = tmp_path / "claude" / "projects"
    M.derive(projects, {"inference_geo": "us"}, models={M.FIRST: OPUS55, M.MIDDLE: OPUS55}, middle={"speed": "fast"})
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB")}
    env.update(CLAUDE_CONFIG_DIR=str(tmp_path / "claude"), CTXLAMP_HOME=str(tmp_path / "home"),
               HOME=str(tmp_path / "user"))
    return subprocess.run([str(CTXLAMP), "report", "--no-service", "--timezone", "UTC", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=True).stdout


def test_report_json_shows_the_fast_calls_apart_at_their_own_rates(tmp_path):
    spend = json.loads(run_report(tmp_path, "--json"))["spend"]
    middle = M.usd(STANDARD, M.MIDDLE_CALLS)  # calls 4-6 at standard: $0.1768128
    # US-only on every call (1.1x), fast on calls 4-6 (2x on top): by hand
    assert spend["by_model"] == {OPUS55: pytest.approx(1.1 * (M.usd(STANDARD) - middle), abs=1e-9),
                                 OPUS55 + "-fast": pytest.approx(2.2 * middle, abs=1e-9)}
    assert spend["total_usd"] == pytest.approx(1.1 * 0.1916798 + 2.2 * 0.1768128, abs=1e-9)


def test_the_text_report_says_fast(tmp_path):
    out = run_report(tmp_path)
    assert "Opus 5.5 (fast)" in out and "$0.39" in out  # 2.2 x $0.1768128, named as the window names it
