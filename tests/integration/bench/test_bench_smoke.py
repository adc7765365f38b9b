"""CI smoke for the benchmarks: a small corpus, the replay bench and the totals recount.

The full bench (peers downloaded, 50 and 500 MB) is `make bench`, not CI.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import all_transcripts, ROOT

PY = sys.executable


def _corpus(out: Path, mb: float = 2, *extra: str) -> Path:
    subprocess.run([PY, str(ROOT / "bench" / "corpus.py"), "--mb", str(mb), "--out", str(out), *extra],
                   check=True, capture_output=True, timeout=60)
    return out / ".claude" / "projects"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bench-corpus")
    _corpus(root)
    return root


@pytest.mark.timeout(60)
def test_replay_bench_prints_a_positive_throughput(corpus):
    proc = subprocess.run([PY, str(ROOT / "bench" / "replay.py"), "--corpus", str(corpus), "--repeat", "1"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    m = re.fullmatch(r"replay_mb_per_s=([0-9.]+)", lines[-1])
    assert m, proc.stdout
    assert float(m.group(1)) > 0


def test_corpus_is_deterministic_sized_and_renamed(corpus, tmp_path):
    files = sorted(p.relative_to(corpus) for p in corpus.rglob("*.jsonl"))
    again = _corpus(tmp_path / "again").parents[1]
    assert files == sorted(p.relative_to(again) for p in again.rglob("*.jsonl"))
    for rel in files:
        assert (corpus / rel).read_bytes() == (again / rel).read_bytes()
    total = sum((corpus / rel).stat().st_size for rel in files)
    assert total >= 2 * (1 << 20)
    # fresh ids: no session id of a fixture survives into the corpus
    originals = {p.stem for p in all_transcripts()}
    body = b"".join((corpus / rel).read_bytes() for rel in files)
    assert not any(sid.encode() in body for sid in originals)
    # ids renamed consistently: a session file still holds its own session's entries
    for rel in files:
        if "subagents" not in rel.parts and re.fullmatch(r"[0-9a-f-]{36}", rel.stem):
            sids = {json.loads(line).get("sessionId") for line in (corpus / rel).read_text().splitlines() if line}
            assert sids - {None} == {rel.stem}


def test_corpus_file_limit(tmp_path):
    projects = _corpus(tmp_path, 1000, "--files", "7")
    assert len(list(projects.rglob("*.jsonl"))) == 7


@pytest.mark.timeout(60)
def test_independent_recount_matches_report(tmp_path):
    """bench/compare_totals.py's own reader, with ctxlamp's dedup rule, gives the report's USD per day.

    This is what makes its explanation of the differences with ccusage trustworthy.
    """
    sys.path.insert(0, str(ROOT))
    from bench.compare_totals import compare

    corpus = _corpus(tmp_path / "corpus", 10).parents[1]  # every fixture at least once
    env = {**os.environ, "CTXLAMP_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(corpus / ".claude"),
           "HOME": str(tmp_path)}
    proc = subprocess.run([PY, "-m", "service.cli", "report", "--json", "--no-service"], env=env, cwd=ROOT,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    res = compare(corpus / ".claude" / "projects", {"daily": []}, report)
    assert report["spend"]["total_usd"] > 0
    assert res["recount_matches_report"]
    no_dedup = next(r for r in res["rules"] if r["rule"] == "no dedup")
    assert no_dedup["usd"] > res["rules"][0]["usd"]  # the fixtures do repeat lines of one response


def _rows_strategy():
    from hypothesis import strategies as st

    row = st.fixed_dictionaries({
        "mid": st.sampled_from([None, "m1", "m2", "m3"]), "rid": st.sampled_from([None, "r1", "r2"]),
        "ts": st.just("2026-01-01T00:00:00Z"), "model": st.just("claude-sonnet-4-5"), "side": st.booleans(),
        "input": st.integers(0, 50), "output": st.integers(0, 50), "cache_creation": st.integers(0, 50),
        "cache_read": st.integers(0, 50), "w1h": st.just(0)})
    return st.lists(st.lists(row, max_size=8), max_size=4)


def test_dedup_rules_keep_one_record_per_key():
    """The counting rules the totals comparison tries: one record per key, keyless lines always count,
    keep-largest keeps the biggest revision."""
    from hypothesis import given, settings

    sys.path.insert(0, str(ROOT))
    from bench.compare_totals import TOKENS, _mid_and_rid, _mid_or_rid, dedup

    @settings(max_examples=200, deadline=None)
    @given(_rows_strategy())
    def check(files):
        flat = [r for rows in files for r in rows]
        for key_of in (_mid_or_rid, _mid_and_rid):
            keyed = {key_of(r) for r in flat} - {None}
            keyless = sum(key_of(r) is None for r in flat)
            for keep in ("first", "last", "largest"):
                kept = dedup(files, key_of, keep)
                assert len(kept) == len(keyed) + keyless
                assert {key_of(r) for r in kept} - {None} == keyed
            for r in dedup(files, key_of, "largest"):
                k = key_of(r)
                if k is not None:
                    assert sum(r[t] for t in TOKENS) == max(sum(x[t] for t in TOKENS) for x in flat if key_of(x) == k)

    check()


@pytest.mark.timeout(60)
def test_pooled_scan_of_a_corpus_equals_the_serial_scan(tmp_path, monkeypatch):
    """The bench's cold report runs the scan pool in chunks of several files: same results as one process."""
    monkeypatch.setenv("CTXLAMP_HOME", str(tmp_path / "home"))
    sys.path.insert(0, str(ROOT))
    from service.report import scan

    projects = _corpus(tmp_path / "corpus", 1000, "--files", "40")
    files = scan.discover(projects)
    assert len(files) == 40  # 2 workers x 8 chunks each: chunks of 2 files
    serial = scan.scan(files, scan.ScanCache(None), workers=1)
    pooled = scan.scan(files, scan.ScanCache(None), workers=2, pool_min_bytes=0)
    assert pooled == serial
    assert sum(len(r["calls"]) for r in serial.values()) > 0


def test_statusline_bench_runs_and_reports_figures():
    out = subprocess.run([sys.executable, "bench/statusline.py", "--runs", "5"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    p50 = float(re.search(r"wall  p50 ([\d.]+) ms", out.stdout).group(1))
    cpu = float(re.search(r"cpu   p50 ([\d.]+) ms", out.stdout).group(1))
    assert 0 < cpu <= p50 * 3 and "5h 30%" in out.stdout


def test_long_segment_bench_builds_one_segment_of_repeated_calls(tmp_path):
    """bench/long_segment.py's transcript is one segment (the compaction left out) of whole copies."""
    sys.path.insert(0, str(ROOT))
    from bench.long_segment import one_segment, replay_seconds

    _, once, segments_once, _ = replay_seconds(one_segment(1, tmp_path / "one.jsonl")["path"])
    _, thrice, segments, _ = replay_seconds(one_segment(3, tmp_path / "three.jsonl")["path"])
    assert once > 20 and thrice == 3 * once
    assert segments_once == segments == 1


def test_statusline_compare_reports_both_loads_and_the_installed_line():
    """`bench/statusline.py --compare` times the command `ctxlamp install` writes beside a bare interpreter."""
    out = subprocess.run([sys.executable, "bench/statusline.py", "--compare", "--runs", "2"], cwd=ROOT,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert "service/statusline/fast.py" in out.stdout and "-S -c pass" in out.stdout
    assert "0 busy processes" in out.stdout and "4 busy processes" in out.stdout
    ratios = re.search(r"statusline_p95_ratio=([\d.]+),([\d.]+)", out.stdout)
    assert ratios and all(float(r) > 0 for r in ratios.groups())
    assert "5h 30%" in out.stdout  # the line the service answered, not the fallback


@pytest.mark.timeout(60)
def test_long_turn_bench_makes_one_turn_of_all_its_calls(tmp_path):
    """bench/long_turn.py feeds one prompt's turn; the store then holds that one turn, with every call's
    read path and tokens."""
    sys.path.insert(0, str(ROOT))
    from bench.long_turn import feed_seconds, one_turn
    from service.store import Store

    feed_seconds(one_turn(50), tmp_path)
    store = Store(tmp_path / "ctxlamp.db")
    try:
        lineage = store.handoffs.save_handoff("t", "b", [], "/work", from_session="long-turn")["lineage_id"]
        hits, total = store.history.history_locate(lineage, "/work/f48.py")
        assert total == 1 and hits[0]["turn"] == 0
        page = store.history.history_page(lineage, 1)
        assert page["total"] == 1 and len(page["turns"][0]["paths_read"]) == 49
    finally:
        store.close()


@pytest.mark.timeout(120)
def test_service_report_bench_answers_from_a_running_service(tmp_path):
    """bench/service_report.py against a real `ctxlamp serve` over a small corpus."""
    _corpus(tmp_path, 1)
    out = subprocess.run([PY, str(ROOT / "bench" / "service_report.py"), "--corpus", str(tmp_path), "--runs", "1"],
                         capture_output=True, text=True, timeout=110, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(r"first \d+\.\d+ s \(service CPU \d+\.\d+ s\), again \d+\.\d+ s .*over \d+ segments", out.stdout)


@pytest.mark.timeout(120)
def test_advice_bench_judges_the_fixtures_and_prices_their_compactions():
    """bench/advice.py on the repo's 2.1.328 fixtures: the long session's reminded segment against hindsight,
    and each real compaction's request, predicted one call before, beside the fake API's log of it."""
    proc = subprocess.run([PY, str(ROOT / "bench" / "advice.py"), "--json",
                           str(ROOT / "tests" / "fixtures" / "claude-code-2.1.328")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["given"]
    totals = got["totals"]
    assert totals["with_reminder"] == 1 and totals["best_restart_usd"] > 0
    assert totals["best_restart_usd"] >= totals["reminder_restart_usd"] > 0
    assert totals["pays twice_capture"] == pytest.approx(totals["pays twice_usd"] / totals["best_any_usd"])
    by = {c["transcript"].split("/")[0]: c for c in got["compactions"]}
    # long-session: the compaction request logged 1,711 input, 31,725 written, 27 output tokens at Sonnet 4.5's
    # $3 / $3.75 / $15 per MTok; predicted from the call before (32,968 tokens, floor 32,611): all written,
    # and a summary of min(6 % of 32,968, 357) = 357 tokens as output
    assert by["long-session"]["real_usd"] == pytest.approx((1711 * 3 + 31725 * 3.75 + 27 * 15) * 1e-6)
    assert by["long-session"]["predicted_usd"] == pytest.approx((32968 * 3.75 + 357 * 15) * 1e-6)
    assert set(by) == {"long-session", "subagent-and-compact"}


@pytest.mark.timeout(300)
def test_advice_bench_judges_the_rule_as_a_policy_on_the_fixtures_and_the_demo():
    """bench/advice.py --policy: per corpus, following every notice against the best schedule in hindsight
    (the engine's own figures summed); never above it, and the capture is their ratio."""
    proc = subprocess.run([PY, str(ROOT / "bench" / "advice.py"), "--policy", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert set(got) == {"fixtures (2.1.328)", "demo", "all"}
    for t in got.values():
        assert t["best_usd"] >= t["best_restarts_only_usd"] >= 0 and t["best_usd"] >= t["followed_usd"]
        assert t["capture"] == (pytest.approx(t["followed_usd"] / t["best_usd"]) if t["best_usd"] > 0 else None)
    assert got["demo"]["restarts_followed"] > 0 and got["demo"]["followed_usd"] > 0
    assert got["all"]["best_usd"] == pytest.approx(got["demo"]["best_usd"] + got["fixtures (2.1.328)"]["best_usd"])

    # the rule's open choices tuned on the other scenarios, the long session held out
    proc = subprocess.run([PY, str(ROOT / "bench" / "advice.py"), "--json", "--people",
                           str(ROOT / "tests" / "fixtures" / "claude-code-2.1.328"), "--holdout", "long-session"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    tuned = json.loads(proc.stdout)
    scores = [r["train_capture"] or 0.0 for r in tuned["grid"]]
    assert (tuned["chosen"]["train_capture"] or 0.0) == max(scores)
    held = tuned["holdout"]
    assert held["person"] == "long-session" and held["best_usd"] >= held["followed_usd"]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_the_tree_peak_counts_a_child_started_from_another_thread():
    """The service starts its first pass's workers from its scan thread: their memory is the first pass's too."""
    import signal
    import time

    from bench.service_proc import read_proc_stat, tree_pss_mb, tree_rss_mb

    parent = subprocess.Popen([PY, "-c", (
        "import subprocess, sys, threading\n"
        "def start():\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'b = bytearray(64 << 20); import time; time.sleep(60)'])\n"
        "    print(child.pid, flush=True)\n"
        "    child.wait()\n"
        "threading.Thread(target=start).start()\n")], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while read_proc_stat(child)["rss_mb"] < 64 and time.monotonic() < deadline:  # its 64 MB touched
            time.sleep(0.05)
        assert tree_rss_mb(parent.pid) >= read_proc_stat(parent.pid)["rss_mb"] + 64
        assert tree_pss_mb(parent.pid) >= 64  # the child's bytes are its own: counted whole
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)
        parent.kill()
        parent.wait()


@pytest.mark.timeout(120)
def test_the_counting_bound_takes_out_the_counts_and_nothing_else(tmp_path):
    """bench/counting_bound.py's second command is the same report with counting taken out: its spend is the
    real report's, and what the counts decide (the restart figures, the edit channel) is not."""
    from bench.counting_bound import uncounted_cmd
    from bench.peers import base_env, ctxlamp_cmd

    _corpus(tmp_path, 1)
    reports = []
    for i, cmd in enumerate((ctxlamp_cmd(), uncounted_cmd())):
        home = tmp_path / f"home{i}"
        done = subprocess.run(cmd, env={**base_env(tmp_path), "CTXLAMP_HOME": str(home)}, capture_output=True,
                              timeout=100, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        reports.append(json.loads(done.stdout))
    counted, uncounted = reports
    assert uncounted["spend"] == counted["spend"]
    assert uncounted["restart_savings"]["segments"] == counted["restart_savings"]["segments"] > 0
    assert uncounted["restart_savings"] != counted["restart_savings"]
    assert uncounted["edit"] != counted["edit"]
    out = subprocess.run([PY, str(ROOT / "bench" / "counting_bound.py"), "--corpus", str(tmp_path), "--runs", "1",
                          "--no-ccusage"], capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(r"\| cold report, counting taken out \| \d+\.\d+ \|", out.stdout)
    assert re.search(r"exact counting: -?\d+% of the cold report's wall time", out.stdout)


def test_a_bench_times_bytecode_not_the_compiler(tmp_path):
    """A module edited since its last bytecode gets a current one before the timed runs (PYTHONDONTWRITEBYTECODE
    would otherwise recompile it in every run), and a checkout that does not compile stops the bench."""
    import importlib.util

    from bench.bytecode import compile_checkout

    module = tmp_path / "probe_pkg" / "module.py"
    module.parent.mkdir()
    module.write_text("ANSWER = 1\n")
    cached = Path(importlib.util.cache_from_source(str(module)))
    compile_checkout(tmp_path, ("probe_pkg",))
    assert cached.is_file()
    module.write_text("ANSWER = 2  # edited\n")
    os.utime(module, (cached.stat().st_mtime + 5,) * 2)
    compile_checkout(tmp_path, ("probe_pkg",))
    probe = "import sys; sys.path.insert(0, sys.argv[1]); import probe_pkg.module as m; print(m.ANSWER)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONVERBOSE": "1"}
    proc = subprocess.run([PY, "-c", probe, str(tmp_path)], capture_output=True, text=True, env=env, timeout=30)
    assert proc.stdout.strip() == "2"
    assert f"matches {module}" in proc.stderr  # read from the bytecode, not compiled again
    module.write_text("ANSWER = (\n")
    with pytest.raises(SystemExit, match="cannot compile"):
        compile_checkout(tmp_path, ("probe_pkg",))


@pytest.mark.timeout(120)
def test_restart_bench_times_a_start_after_the_first_pass(tmp_path):
    """bench/restart.py: a first start over a small corpus, then a timed restart of a real service, a report
    run alone after a session changed, and the first report run alone after the service."""
    _corpus(tmp_path, 1)
    out = subprocess.run([PY, str(ROOT / "bench" / "restart.py"), "--corpus", str(tmp_path), "--runs", "1"],
                         capture_output=True, text=True, timeout=110, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    for what in ("restart to idle", "report after a change", "first report alone after the service"):
        m = re.search(rf"this: {what} (\d+\.\d+) s, its CPU (\d+\.\d+) s, peak (\d+\.\d+) MB", out.stdout)
        assert m and all(float(x) > 0 for x in m.groups()), out.stdout


@pytest.mark.timeout(180)
def test_first_pass_bench_sets_the_service_beside_a_cold_report_and_its_bound(tmp_path):
    """bench/first_pass.py over a small corpus: this checkout's first pass, the same with the service's own
    counting taken out (`--bound`) and with the counts an earlier start kept (`--known-counts`), each against
    the cold report."""
    _corpus(tmp_path, 1)
    out = subprocess.run([PY, str(ROOT / "bench" / "first_pass.py"), "--corpus", str(tmp_path), "--runs", "1",
                          "--bound", "--known-counts"], capture_output=True, text=True, timeout=170, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("this", "this, the service counting nothing", "this, its recent sessions' counts known"):
        m = re.search(rf"^{re.escape(name)}: first pass to idle / cold report, per round: (\d+\.\d+)$", out.stdout,
                      re.MULTILINE)
        assert m and float(m.group(1)) > 0, out.stdout
    # the whole tree's CPU to idle (the fork server and workers read while they lived), beside the service's
    m = re.search(r"^ +this: first pass: idle_s \S+, cpu_s (\d+\.\d+), tree_cpu_s (\d+\.\d+),", out.stdout, re.MULTILINE)
    assert m and float(m.group(2)) > 0 and float(m.group(1)) > 0, out.stdout


@pytest.mark.timeout(120)
def test_report_phases_bench_times_each_counter_over_the_texts_the_replay_counts(corpus):
    """bench/report_phases.py: the cold report's phases, and the replay's texts counted by tiktoken and by the
    Python counter, which give the same counts (another counter is timed only where it is installed)."""
    out = subprocess.run([PY, str(ROOT / "bench" / "report_phases.py"), "--corpus", str(corpus)],
                         capture_output=True, text=True, timeout=110, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    m = re.search(r"by the Python counter: from a fresh state / warm \((\d+) counts differ\) \| CPU (\d+\.\d+)",
                  out.stdout)
    assert m and m.group(1) == "0" and float(m.group(2)) > 0, out.stdout
    assert re.search(r"restart replay of [1-9]\d* main transcripts", out.stdout), out.stdout
