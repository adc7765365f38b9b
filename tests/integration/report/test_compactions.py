"""Claude Code's own compactions in `ctxlamp report` (issue 47): manual, auto and idle counted apart.

The transcript is the pinned CLI's own (tests/fixtures/claude-code-2.1.332, its /compact included) with two
idle compactions appended in the shape Claude Code 2.1.332 writes them, built from that file's own boundary
and summary lines: the boundary (trigger auto), the summary, the "Compacted while idle" informational line;
and a summary prepared while the user was away (`precomputed: true`, its own note). Expected prices come
from the boundaries' compactMetadata at the published rates, not from the report.
"""
from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support.corpus import CLI_CORPORA, ROOT

CTXLAMP = ROOT / ".venv" / "bin" / "ctxlamp"
CORPUS = CLI_CORPORA["2.1.332"]
# USD per million tokens of claude-sonnet-4-5 (output, cache read, 5-minute write): Anthropic's price page,
# and its rates for a prompt above 200k tokens
RATES, LONG = (15, 0.3, 3.75), (22.5, 0.6, 7.5)


def by_hand(meta: dict, written: bool) -> float:
    out, read, write5 = LONG if meta["preTokens"] > 200_000 else RATES
    return (meta["preTokens"] * (write5 if written else read) + meta["postTokens"] * out) / 1e6


def later(stamp: str, minutes: float) -> str:
    t = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(minutes=minutes)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def idle_compaction(lines: list[dict], n: int, *, precomputed: bool) -> list[dict]:
    """Boundary, summary and note of an idle compaction after `lines`, from the file's own /compact lines."""
    boundary = next(e for e in lines if e.get("subtype") == "compact_boundary")
    summary = next(e for e in lines if e.get("isCompactSummary"))
    last = next(e for e in reversed(lines) if "timestamp" in e and "uuid" in e)  # the last entry of the chain
    at = later(last["timestamp"], 54)  # 0.9 of a 1-hour cache after the last activity
    b = json.loads(json.dumps(boundary))
    b.update(uuid=f"00000000-0000-4000-8000-00000000{n:04d}", logicalParentUuid=last["uuid"], timestamp=at)
    b["compactMetadata"].update(trigger="auto", preTokens=212_000 + n, postTokens=9_000 + n)
    if precomputed:
        b["compactMetadata"]["precomputed"] = True
    s = json.loads(json.dumps(summary))
    s.update(uuid=f"00000000-0000-4000-8001-00000000{n:04d}", parentUuid=b["uuid"], timestamp=later(at, 0.01))
    common = {k: boundary[k] for k in ("cwd", "sessionId", "version", "gitBranch", "slug", "userType", "entrypoint")
              if k in boundary}
    note = {"parentUuid": s["uuid"], "isSidechain": False, "type": "system", "subtype": "informational",
            "content": ("Compacted using a summary written while you were away" if precomputed
                        else "Compacted while idle to save the cost of re-reading 212k tokens when you return"),
            "isMeta": False, "timestamp": later(at, 0.02), "uuid": f"00000000-0000-4000-8002-00000000{n:04d}",
            "level": "info", **common}
    return [b, s, note]


@pytest.fixture
def claude_dir(tmp_path) -> Path:
    projects = tmp_path / "claude" / "projects"
    for run in ("long-session", "subagent-and-compact"):
        for path in (CORPUS / run / "projects").glob("*/*.jsonl"):
            target = projects / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    (path,) = (projects.glob("*/9008d10a-*.jsonl"))  # the long session
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    added = idle_compaction(lines, 1, precomputed=False)
    added += idle_compaction(lines + added, 2, precomputed=True)
    with path.open("a") as fh:
        fh.write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in added))
    return tmp_path / "claude"


def boundaries(claude_dir: Path) -> list[dict]:
    return [e["compactMetadata"] for p in sorted(claude_dir.glob("projects/*/*.jsonl"))
            for e in map(json.loads, p.read_text().splitlines()) if e.get("subtype") == "compact_boundary"]


def report(claude_dir: Path, tmp_path: Path, *args: str) -> str:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_dir), CTXLAMP_HOME=str(tmp_path / "home"),
               HOME=str(tmp_path / "user"))
    return subprocess.run([str(CTXLAMP), "report", *args], env=env, capture_output=True, text=True, timeout=120,
                          check=True).stdout


def test_idle_compactions_are_counted_apart_from_manual_ones_and_priced_by_the_compaction_estimate(claude_dir,
                                                                                                  tmp_path):
    metas = boundaries(claude_dir)
    real = [m for m in metas if not (m["preTokens"] > 200_000)]
    assert real and all(m["trigger"] == "manual" for m in real)  # the pinned CLI's own /compact
    doc = json.loads(report(claude_dir, tmp_path, "--json"))
    block = doc["compactions"]
    assert block["by_trigger"] == {"manual": len(real), "auto": 0, "idle": 2}
    assert block["label"] == "estimated"
    low, high = sum(by_hand(m, False) for m in metas), sum(by_hand(m, True) for m in metas)
    assert block["cost_range_usd"] == {"low": pytest.approx(low, abs=1e-5), "high": pytest.approx(high, abs=1e-5)}
    assert block["cost_usd"] == pytest.approx((low + high) / 2, abs=1e-5)
    text = report(claude_dir, tmp_path)
    assert f"{len(real) + 2} compactions: {len(real)} by you, 2 while you were idle" in text
