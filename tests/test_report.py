"""`ctxlamp report` end to end: the real CLI over temp copies of the shared fixtures."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, children_of, no_children_left

CTXLAMP = ROOT / ".venv" / "bin" / "ctxlamp"
# Counted independently (see tests/test_channels_fixtures.py): over all fixture transcripts
ALL_CALLS = 425          # distinct message ids, 12 files
ALL_EDITS_OK = 57
ALL_GREP, ALL_GLOB = 13, 17
DAY_2_1_328 = "2026-11-29"  # the 2.1.328 fixtures were written that day: 2+2+65+15+3 calls, 8 edits, 2 compactions


def copy_fixtures(dest: Path) -> Path:
    """A CLAUDE_CONFIG_DIR holding every fixture transcript in Claude Code's layout."""
    projects = dest / "projects"
    projects.mkdir(parents=True)
    for run in (FIXTURES / "claude-code-2.1.328").iterdir():
        shutil.copytree(run / "projects", projects, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "real" / "iansherr-claude-code-log", projects, dirs_exist_ok=True)
    for folder, project in (("d-kimuson-claude-code-viewer", "sample-project"),
                            ("chiphuyen-sniffly", "-Users-chip-dev-ai-music")):
        (projects / project).mkdir()
        for f in (FIXTURES / "real" / folder).glob("*.jsonl"):
            shutil.copy(f, projects / project / f.name)
    return dest


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
    assert s["edit"]["str_replace_misses"] == {"not_found": 3, "ambiguous": 4, "total": 7}
    assert s["retrieval"]["tools"]["Grep"]["calls"] == ALL_GREP
    assert s["retrieval"]["tools"]["Glob"]["calls"] == ALL_GLOB
    # two compactions: 170399 -> 2883 and 60634 -> 2872
    assert s["pinch"]["events"] == 2
    assert s["pinch"]["tokens_saved_total"] == (170399 - 2883) + (60634 - 2872)
    assert s["spend"]["subagents_usd"] > 0
    assert s["data_quality"]["unpriced_models"] == []
    by_session = {r["session_id"]: r for r in s["data_quality"]["cost_state_sessions"]}
    # the /clear sessions have no compaction and no subagent: our price equals Claude Code's own to the cent
    for sid in ("a5420407-aa5d-48b8-989d-91cdaadddc96", "0799481d-2f4a-40f9-a837-d4cf1008277d"):
        assert by_session[sid]["ours_usd"] == pytest.approx(by_session[sid]["claude_code_usd"], abs=1e-6)


def test_since_until_filter(env):
    day = report_json(env, "--since", DAY_2_1_328, "--until", DAY_2_1_328)
    assert day["spend"]["calls"] == 2 + 2 + 65 + 15 + 3
    assert list(day["spend"]["by_day"]) == [DAY_2_1_328]
    assert day["edit"]["str_replace_calls"] == 6 + 2 and day["pinch"]["events"] == 2
    before = report_json(env, "--until", "2026-11-28")
    assert before["spend"]["calls"] == ALL_CALLS - day["spend"]["calls"]
    assert before["pinch"]["events"] == 0
    assert report_json(env, "--since", "2030-01-01")["spend"]["total_usd"] == 0.0
    bad = report(env, "--since", "2026-11-30", "--until", "2026-11-01", check=False)
    assert bad.returncode == 2


def test_csv_parses_and_matches_json(env):
    rows = list(csv.DictReader(io.StringIO(report(env, "--csv").stdout)))
    by_metric = {r["metric"]: r for r in rows}
    s = report_json(env)
    assert int(by_metric["edit.str_replace_calls"]["value"]) == s["edit"]["str_replace_calls"]
    assert by_metric["retrieval.tools.Grep.bytes_saved"]["label"] == "estimated"
    assert float(by_metric["spend.total_usd"]["value"]) == pytest.approx(s["spend"]["total_usd"])


def test_text_output(env):
    out = report(env).stdout
    assert "Retrieval (estimated)" in out and "Edits (measured)" in out


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
    target = next((live / "projects" / "-home-user-demo-project").glob("0799481d*.jsonl"))
    extra = [
        {"type": "assistant", "sessionId": "0799481d-2f4a-40f9-a837-d4cf1008277d", "cwd": "/x", "timestamp": "2026-11-29T20:00:00Z",
         "message": {"id": "msg_new", "model": "claude-sonnet-4-5", "content": [
             {"type": "tool_use", "id": "tu_new", "name": "Glob", "input": {"pattern": "*"}}],
             "usage": {"input_tokens": 1, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}},
        {"type": "user", "sessionId": "0799481d-2f4a-40f9-a837-d4cf1008277d", "cwd": "/x", "timestamp": "2026-11-29T20:00:01Z",
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
    import signal

    from service.report import scan
    from service.cli import main

    for k in ("CLAUDE_CONFIG_DIR", "HOME", "CTXLAMP_HOME"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setattr(scan, "POOL_MIN_BYTES", 0)  # workers even for the small fixtures
    scan_one = scan._scan_one

    def killed_on_the_biggest(tf):
        if tf.session_hint.startswith("agent-") or os.path.getsize(tf.path) < 100_000:
            return scan_one(tf)
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(scan, "_scan_one", killed_on_the_biggest)
    before = children_of(os.getpid())
    assert main(["report", "--json", "--no-service"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ctxlamp report: the scan failed: a worker process ended early (killed by signal 9)")
    assert no_children_left(before)
