"""`ctxlamp report` end to end: the real CLI over temp copies of the project's fixtures.

Expected figures are not the report's own output: counts come from the scenarios that made the fixtures
(tests/support/expected.py EXPECTED, counted from their steps), spend from the fake API's own
request log (api.jsonl) priced by hand at the published per-million rates below, compaction savings
from the compact_boundary entries' compactMetadata.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import sqlite3
import subprocess
from datetime import date, timedelta
from pathlib import Path

import pytest

from tests.support.corpus import CC, DAY, EARLIER, ROOT, SHIFTED, copy_fixtures, needs_real_fixtures, scenario_sessions
from tests.support.expected import EXPECTED, REAL_EXPECTED
from tests.support.procs import children_of, no_children_left

CTXLAMP = ROOT / ".venv" / "bin" / "ctxlamp"
# USD per million tokens (input, output, cache read, 5-minute write, 1-hour write), Anthropic's price page.
RATES = {"claude-sonnet-4-5": (3, 15, 0.3, 3.75, 6), "claude-opus-4-5": (5, 25, 0.5, 6.25, 10)}
# Column sums of EXPECTED (edits ok, not found, ambiguous, Grep, Glob, calls)
ALL_EDITS_OK = sum(v[0] for v in EXPECTED.values())                    # 9
ALL_GREP, ALL_GLOB = (sum(v[5] for v in EXPECTED.values()), sum(v[6] for v in EXPECTED.values()))  # 21, 2
ALL_CALLS = sum(v[7] for v in EXPECTED.values())                       # 103


def api_log(name: str) -> list[dict]:
    return [json.loads(line) for line in (CC / name / "api.jsonl").read_text().splitlines()]


def priced_by_hand(line: dict) -> float:
    i, o, r, w5, w1h = RATES[line["model"]]
    u = line["usage"]
    return (i * u["input_tokens"] + o * u["output_tokens"] + r * u["cache_read_input_tokens"]
            + w5 * u["cache_creation"]["ephemeral_5m_input_tokens"]
            + w1h * u["cache_creation"]["ephemeral_1h_input_tokens"]) / 1e6


def answered(name: str) -> list[dict]:
    """The fake API's answers that became calls (not the compaction summary: see test_channels_fixtures)."""
    return [line for line in api_log(name) if line["kind"] != "compaction"]


def compactions() -> list[dict]:
    out = []
    for run in sorted(CC.iterdir()):
        for path in (run / "projects").glob("*/*.jsonl"):
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
                    out.append(entry["compactMetadata"])
    return out


@pytest.fixture(scope="module")
def claude_dir(tmp_path_factory) -> Path:
    return copy_fixtures(tmp_path_factory.mktemp("claude"))


@pytest.fixture
def env(tmp_path, claude_dir):
    e = dict(os.environ)
    e.update(CLAUDE_CONFIG_DIR=str(claude_dir), CTXLAMP_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "user"))
    for k in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB"):
        e.pop(k, None)
    return e


def report(env, *args, check=True) -> subprocess.CompletedProcess:
    if not CTXLAMP.exists():
        subprocess.run([str(ROOT / ".venv" / "bin" / "pip"), "install", "-e", str(ROOT), "--no-deps", "-q"], check=True)
    return subprocess.run([str(CTXLAMP), "report", *args], env=env, capture_output=True, text=True, timeout=120,
                          check=check)


def report_json(env, *args) -> dict:
    return json.loads(report(env, "--json", *args).stdout)


def test_json_keys_are_present_and_typed(env):
    r = report(env, "--json")
    assert r.stderr == ""  # no progress chatter on a short scan to a pipe
    s = json.loads(r.stdout)
    ints = ["edit.str_replace_calls", "edit.str_replace_old_string_tokens", "edit.str_replace_misses.not_found",
            "edit.str_replace_misses.ambiguous", "edit.anchored_calls", "edit.anchored_ops",
            "edit.anchored_avoided_output_tokens", "edit.anchored_conflicts", "pinch.events",
            "pinch.tokens_saved_total", "pinch.tokens_saved_median"]
    for key in ints:
        v = s
        for part in key.split("."):
            v = v[part]
        assert type(v) is int, key
    assert isinstance(s["pinch"]["saved_usd"], float)
    assert isinstance(s["spend"]["total_usd"], float) and isinstance(s["spend"]["subagents_usd"], float)
    assert all(isinstance(v, float) for v in s["spend"]["by_model"].values())
    for tool in s["retrieval"]["tools"].values():
        assert all(type(tool[k]) is int for k in ("calls", "bytes_served", "bytes_saved"))
    assert isinstance(s["data_quality"]["unpriced_models"], list)
    assert isinstance(s["data_quality"]["cost_state_diff_pct"], float)
    assert (s["edit"]["label"], s["pinch"]["label"], s["retrieval"]["label"], s["spend"]["label"]) == \
        ("measured", "measured", "estimated", "measured")
    assert s["edit"]["sources"] and s["pinch"]["sources"] and s["retrieval"]["sources"] and s["spend"]["source"]


def test_totals_over_all_fixtures(env):
    s = report_json(env)
    assert s["spend"]["calls"] == ALL_CALLS
    assert s["edit"]["str_replace_calls"] == ALL_EDITS_OK
    assert s["edit"]["str_replace_misses"] == {"not_found": 1, "ambiguous": 1, "total": 2}
    assert s["retrieval"]["tools"]["Grep"]["calls"] == ALL_GREP
    assert s["retrieval"]["tools"]["Glob"]["calls"] == ALL_GLOB
    metas = compactions()
    assert len(metas) == 2  # subagent-and-compact and long-session each run /compact once
    assert s["pinch"]["events"] == 2
    assert s["pinch"]["tokens_saved_total"] == sum(m["preTokens"] - m["postTokens"] for m in metas)
    assert s["data_quality"]["unpriced_models"] == []


def test_spend_is_the_fake_apis_usage_priced_by_hand(env):
    s = report_json(env)
    lines = [line for run in sorted(CC.iterdir()) for line in answered(run.name)]
    assert len(lines) == ALL_CALLS
    assert s["spend"]["total_usd"] == pytest.approx(math.fsum(map(priced_by_hand, lines)), abs=1e-4)
    sub = [line for line in lines if line["match"] == "SUBTASK-SURVEY"]  # the subagent's own conversation
    assert len(sub) == EXPECTED["subagent-and-compact:subagent"][7]
    assert s["spend"]["subagents_usd"] == pytest.approx(math.fsum(map(priced_by_hand, sub)), abs=1e-4)
    by_model = {m: math.fsum(priced_by_hand(x) for x in lines if x["model"] == m) for m in RATES}
    assert s["spend"]["by_model"] == pytest.approx(by_model, abs=1e-4)


def test_our_cost_equals_claude_codes_own_where_it_prices_the_same(env):
    by_session = {r["session_id"]: r for r in report_json(env)["data_quality"]["cost_state_sessions"]}
    # the /clear sessions have no compaction and no subagent: our price equals Claude Code's own to the cent
    for path in scenario_sessions("clear"):
        row = by_session[path.stem]
        assert row["ours_usd"] == pytest.approx(row["claude_code_usd"], abs=1e-6)


def test_since_until_filter(env):
    day = report_json(env, "--since", DAY, "--until", DAY)
    shifted_calls = sum(v[7] for k, v in EXPECTED.items() if k.startswith(SHIFTED + ":"))
    assert day["spend"]["calls"] == ALL_CALLS - shifted_calls
    assert list(day["spend"]["by_day"]) == [DAY]
    assert day["pinch"]["events"] == 2 and day["edit"]["str_replace_calls"] == ALL_EDITS_OK
    before = report_json(env, "--until", (date.fromisoformat(DAY) - timedelta(days=1)).isoformat())
    assert before["spend"]["calls"] == shifted_calls == 4
    assert list(before["spend"]["by_day"]) == [EARLIER]
    assert before["pinch"]["events"] == 0
    assert report_json(env, "--since", "2099-01-01")["spend"]["total_usd"] == 0.0
    bad = report(env, "--since", "2026-11-30", "--until", "2026-11-01", check=False)
    assert bad.returncode == 2


@needs_real_fixtures
def test_totals_with_the_third_party_transcripts_added(tmp_path):
    """Old shapes (1.0.17 to 2.1.114) beside ours: each count is ours plus what REAL_EXPECTED lists."""
    e = {**os.environ, "CLAUDE_CONFIG_DIR": str(copy_fixtures(tmp_path / "claude", real=True)),
         "CTXLAMP_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    for k in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB"):
        e.pop(k, None)
    s = report_json(e)
    assert s["spend"]["calls"] == ALL_CALLS + sum(v[7] for v in REAL_EXPECTED.values())
    assert s["edit"]["str_replace_calls"] == ALL_EDITS_OK + sum(v[0] for v in REAL_EXPECTED.values())
    assert s["edit"]["str_replace_misses"] == {"not_found": 3, "ambiguous": 4, "total": 7}
    assert s["retrieval"]["tools"]["Grep"]["calls"] == ALL_GREP + sum(v[5] for v in REAL_EXPECTED.values())
    assert s["retrieval"]["tools"]["Glob"]["calls"] == ALL_GLOB + sum(v[6] for v in REAL_EXPECTED.values())
    assert s["pinch"]["events"] == 2 and s["data_quality"]["unpriced_models"] == []


def test_csv_parses_and_matches_json(env):
    rows = list(csv.DictReader(io.StringIO(report(env, "--csv").stdout)))
    by_metric = {r["metric"]: r for r in rows}
    s = report_json(env)
    assert int(by_metric["edit.str_replace_calls"]["value"]) == s["edit"]["str_replace_calls"]
    assert by_metric["retrieval.tools.Grep.bytes_saved"]["label"] == "estimated"
    assert float(by_metric["spend.total_usd"]["value"]) == pytest.approx(s["spend"]["total_usd"])


def test_text_output(env):
    out = report(env).stdout
    assert "Search (estimated)" in out and "Edits (measured)" in out and "Trimming (measured)" in out


def test_warm_run_reuses_the_cache_and_sees_appended_lines(env, tmp_path, claude_dir):
    first = report_json(env)
    cache = Path(env["CTXLAMP_HOME"]) / "cache"
    assert (cache / "report-scan.json").exists() and (cache / "report-last.json").exists()
    assert report_json(env) == first
    # a live session grows: one more Glob call is seen on the next run
    live = tmp_path / "claude-live"
    shutil.copytree(claude_dir, live)
    env2 = {**env, "CLAUDE_CONFIG_DIR": str(live)}
    base = report_json(env2)
    sid = scenario_sessions("model-switch")[0].stem
    target = next((live / "projects").glob(f"*/{sid}.jsonl"))
    extra = [
        {"type": "assistant", "sessionId": sid, "cwd": "/x", "timestamp": f"{DAY}T23:00:00Z",
         "message": {"id": "msg_new", "model": "claude-sonnet-4-5", "content": [
             {"type": "tool_use", "id": "tu_new", "name": "Glob", "input": {"pattern": "*"}}],
             "usage": {"input_tokens": 1, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}},
        {"type": "user", "sessionId": sid, "cwd": "/x", "timestamp": f"{DAY}T23:00:01Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_new", "content": "a.py"}]},
         "toolUseResult": {"filenames": ["a.py"], "numFiles": 1}},
    ]
    with open(target, "a") as fh:
        fh.write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in extra))
    grown = report_json(env2)
    assert grown["spend"]["calls"] == base["spend"]["calls"] + 1
    assert grown["retrieval"]["tools"]["Glob"]["calls"] == base["retrieval"]["tools"]["Glob"]["calls"] + 1


def test_ledgers_and_external_sources(env, tmp_path):
    home = Path(env["CTXLAMP_HOME"])
    (home / "ledgers").mkdir(parents=True)
    (home / "ledgers" / "tool.jsonl").write_text(
        json.dumps({"kind": "pinch", "ts": "2026-11-29T10:00:00Z", "original_tokens": 1000, "final_tokens": 400}) + "\n"
        + "{broken\n" + json.dumps({"kind": "nope", "ts": "2026-11-29T10:00:00Z"}) + "\n")
    lean = tmp_path / "lean"
    lean.mkdir()
    (lean / "edit_metering.json").write_text(json.dumps({"anchored_calls": 3, "anchored_ops": 7,
                                                         "anchored_avoided_output_tokens": 900}))
    db = tmp_path / "usage.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE usage (tool TEXT, repo_id TEXT, calls INT, bytes_served INT, bytes_saved INT)")
    con.execute("INSERT INTO usage VALUES ('cl_search', 'r', 4, 2000, 30000)")
    con.commit()
    con.close()
    router = tmp_path / "router.db"
    con = sqlite3.connect(router)
    con.execute("CREATE TABLE route_decisions (ts TEXT, pinch_original_tokens INT, pinch_final_tokens INT)")
    con.execute("INSERT INTO route_decisions VALUES ('2026-11-29T11:00:00Z', 5000, 3000)")
    con.execute("INSERT INTO route_decisions VALUES ('2026-11-29T11:01:00Z', NULL, NULL)")
    con.commit()
    con.close()
    env = {**env, "LEAN_CTX_DATA_DIR": str(lean), "CTXLAMP_USAGE_DB": str(db), "CTXLAMP_ROUTER_DB": str(router)}
    s = report_json(env)
    assert s["data_quality"]["malformed_lines"]["ledgers"] == 2 and s["data_quality"]["ledger_files"] == 1
    assert (s["edit"]["anchored_calls"], s["edit"]["anchored_ops"], s["edit"]["anchored_avoided_output_tokens"]) == (3, 7, 900)
    assert s["retrieval"]["tools"]["cl_search"] == {"calls": 4, "bytes_served": 2000, "bytes_saved": 30000,
                                                    "sources": ["usage-db"]}
    # 2 compactions + 1 ledger pinch (600) + 1 router pinch (2000)
    assert s["pinch"]["events"] == 4
    assert s["pinch"]["by_kind"]["ledger"]["tokens_saved"] == 600
    assert s["pinch"]["by_kind"]["router"]["tokens_saved"] == 2000
    assert s["sources"]["lean_ctx"] and s["sources"]["usage_db"] and s["sources"]["router_db"]
    # lean-ctx grows: the next report books only the delta on top (all-time counters are snapshotted)
    (lean / "edit_metering.json").write_text(json.dumps({"anchored_calls": 5, "anchored_ops": 9,
                                                         "anchored_avoided_output_tokens": 1000}))
    s2 = report_json(env)
    assert (s2["edit"]["anchored_calls"], s2["edit"]["anchored_avoided_output_tokens"]) == (5, 1000)
    snaps = json.loads((Path(env["CTXLAMP_HOME"]) / "cache" / "ledger-snapshots.json").read_text())
    assert [len(v) for k, v in snaps.items() if k.startswith("lean-ctx")] == [2]


def test_empty_history(tmp_path):
    e = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "none"), "CTXLAMP_HOME": str(tmp_path / "h"),
         "HOME": str(tmp_path / "u")}
    s = report_json(e)
    assert s["spend"]["total_usd"] == 0.0 and s["pinch"]["events"] == 0 and s["retrieval"]["tools"] == {}
    assert s["data_quality"]["cost_state_diff_pct"] is None


def test_in_process_compute_matches_the_cli(env, monkeypatch):
    """What the service will call (one process, no pool) gives the CLI's figures."""
    from service.report.build import compute
    for k in ("CLAUDE_CONFIG_DIR", "HOME"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setenv("CTXLAMP_HOME", env["CTXLAMP_HOME"] + "-inproc")
    for k in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB"):
        monkeypatch.delenv(k, raising=False)
    cli = report_json(env)
    mine = json.loads(json.dumps(compute(workers=1)))
    assert mine["sources"].pop("ledgers") != cli["sources"].pop("ledgers")  # its own home
    assert mine == cli


def test_a_scan_worker_that_dies_is_a_clear_error_and_leaves_no_process(env, monkeypatch, capsys):
    """The OOM killer, say: the report says what happened and exits 1, instead of hanging or a traceback."""
    from service.cli import main
    from service.report import forked, scan

    for k in ("CLAUDE_CONFIG_DIR", "HOME", "CTXLAMP_HOME"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setattr(forked, "POOL_MIN_BYTES", 0)  # workers even for the small fixtures
    monkeypatch.setattr(forked, "SPAWN_MIN_BYTES", 0)  # spawned ones too (no fork)
    from tests.support import worker_probe  # module-level, so spawned workers (no fork) can run it too

    worker_probe.importable_in_workers(monkeypatch)
    monkeypatch.setattr(scan, "scan_one", worker_probe.killed_on_the_biggest)
    before = children_of(os.getpid())
    assert main(["report", "--json", "--no-service"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ctxlamp report: the scan failed: a worker process ended early (killed by signal 9)")
    assert no_children_left(before)
