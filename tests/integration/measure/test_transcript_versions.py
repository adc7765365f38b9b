"""Older and newer transcript shapes (1.0.x, 2.0.x, 2.1.x), made by tests/support/transcripts.versioned_story.

The same session written as each generation of Claude Code wrote it: usage without the cache_creation
breakdown (1.0) or with server_tool_use, speed and iterations (2.1); one response over several lines
whose output_tokens grow (1.0) or repeat (2.0, after a thinking line); a never-updated streaming
placeholder (1.0); errors bare (1.0, 2.0) or in <tool_use_error> (2.1); MultiEdit (1.0); the subagent
inline as sidechain entries (1.0), in a flat agent-<id>.jsonl (2.0) or in <session>/subagents/ with its
meta.json (2.1); entry types that came and went (summary, queue-operation, permission-mode,
last-prompt, system entries with and without subtype). Expected figures are the story's own facts.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests.support.corpus import ROOT
from tests.support.transcripts import VERSIONS, priced_by_hand, versioned_story, write_story

GENERATIONS = sorted(VERSIONS)


def test_report_over_all_three_generations_prices_main_and_subagent_spend(tmp_path):
    projects = tmp_path / "claude" / "projects"
    stories = {gen: versioned_story(gen, sid=f"{n}2222222-3333-4444-5555-666666666666", cwd=f"/home/u/g{n}")
               for n, gen in enumerate(GENERATIONS)}
    for n, (gen, story) in enumerate(stories.items()):
        write_story(projects, gen, story, project=f"-home-u-g{n}")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CTXLAMP_HOME": str(tmp_path / "home"),
           "HOME": str(tmp_path / "user")}
    for k in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB"):
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-m", "service.cli", "report", "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    facts = {gen: st["facts"] for gen, st in stories.items()}
    assert s["spend"]["calls"] == sum(len(f["main_calls"]) + len(f["sub_calls"]) for f in facts.values())
    total = math.fsum(priced_by_hand(VERSIONS[g]["model"], f["main_calls"] + f["sub_calls"]) for g, f in facts.items())
    sub = math.fsum(priced_by_hand(VERSIONS[g]["model"], f["sub_calls"]) for g, f in facts.items())
    assert s["spend"]["total_usd"] == pytest.approx(total, abs=1e-4)
    assert s["spend"]["subagents_usd"] == pytest.approx(sub, abs=1e-4)
    assert s["edit"]["str_replace_misses"] == {"not_found": 3, "ambiguous": 3, "total": 6}
    assert s["data_quality"]["unpriced_models"] == []
