"""The workers seam: forked children where fork is safe, fresh interpreters (spawn) where fork is
missing (Windows) or unsafe (macOS), in-process in a frozen build; every way gives the same figures."""
from __future__ import annotations

import os
import shutil

import pytest

from service.report import forked, scan
from tests.support import worker_probe as probe
from tests.support.corpus import CC, all_transcripts
from tests.support.procs import children_of, no_children_left


@pytest.fixture(autouse=True)
def probes_importable(monkeypatch):
    """The jobs here are the probes of tests/support, which spawned workers must be able to import."""
    from tests.support.worker_probe import importable_in_workers

    importable_in_workers(monkeypatch)


@pytest.mark.parametrize("platform, has_fork, frozen, method", [
    ("linux", True, False, "fork"),
    ("freebsd14", True, False, "fork"),
    ("darwin", True, False, "spawn"),    # fork after system frameworks load is unsafe
    ("win32", False, False, "spawn"),    # no fork
    ("linux", False, False, "spawn"),    # fork made unavailable
    ("win32", False, True, "serial"),    # a frozen build cannot start `python -m` workers
    ("darwin", True, True, "serial"),
])
def test_the_start_method_per_system(platform, has_fork, frozen, method):
    assert forked.start_method(platform, has_fork=has_fork, frozen=frozen) == method


def test_without_fork_a_pool_is_still_available(monkeypatch):
    monkeypatch.delattr(os, "fork", raising=False)
    assert forked.available() and not forked.can_fork() and forked.start_method() == "spawn"


@pytest.mark.parametrize("method", ["spawn", "serial", "fork", "fork-server"])
def test_every_job_is_done_once(method):
    if method in ("fork", "fork-server") and not forked.can_fork():
        pytest.skip("no fork here")
    before = children_of(os.getpid())
    jobs = list(range(60))
    with forked.pool(probe.square_with_pid, jobs, 3, method=method) as results:
        got = list(results)
    assert sorted((n, sq) for n, sq, _ in got) == [(n, n * n) for n in jobs]
    pids = {pid for _, _, pid in got}
    if method == "serial":
        assert pids == {os.getpid()}
    else:
        assert os.getpid() not in pids and 1 <= len(pids) <= 3
    assert no_children_left(before)


def test_spawned_init_runs_in_each_child_and_prints_do_not_break_results():
    with forked.pool(probe.marks, range(10), 2, init=probe.mark_ready, method="spawn") as results:
        assert all(seen == ["ready"] for seen in results)
    assert probe._marks == []
    with forked.pool(probe.noisy, range(20), 2, method="spawn") as results:
        assert sorted(results) == list(range(20))


def _gone(pids: set[int], timeout: float = 5.0) -> bool:
    """Whether these processes (a fork server's workers: not this process's children) have all ended."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(os.path.exists(f"/proc/{pid}") and "(Z)" not in _state(pid) for pid in pids):
            return True
        time.sleep(0.02)
    return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return "(" + fh.read().rsplit(")", 1)[1].split()[0] + ")"
    except OSError:
        return "(Z)"


fork_only = pytest.mark.skipif(not forked.can_fork(), reason="the fork server forks its workers: no fork here")


@fork_only
def test_a_fork_server_runs_init_once_before_it_forks_its_workers():
    """The workers are forked from one fresh interpreter after its init: they share what it built (the
    encoder, for the service's first pass) and none of them is this process."""
    with forked.pool(probe.marks_and_pid, range(40), 2, init=probe.mark_ready_in_pid, method="fork-server") as results:
        got = list(results)
    assert all(seen == [f"ready in {parent}"] for seen, _, parent in got), "init ran once, in the server"
    pids = {pid for _, pid, _ in got}
    parents = {parent for _, _, parent in got}
    assert len(parents) == 1 and os.getpid() not in pids | parents and 1 <= len(pids) <= 2
    assert probe._marks == []
    assert _gone(pids | parents)


@fork_only
@pytest.mark.parametrize("func, message", [
    (probe.fail_on_seven, "ValueError: job seven is bad"),
    (probe.die_on_three, "ended early"),
])
def test_a_failed_fork_server_worker_is_an_error_and_leaves_no_process(func, message):
    before = children_of(os.getpid())
    with pytest.raises(forked.WorkerFailed, match=message), \
            forked.pool(func, list(range(50)), 2, method="fork-server") as results:
        list(results)
    assert no_children_left(before)


@fork_only
def test_leaving_early_stops_the_fork_server_and_its_workers():
    before = children_of(os.getpid())
    with forked.pool(probe.first_quick_then_slow, list(range(40)), 2, method="fork-server") as results:
        _, pid, parent = next(iter(results))
    assert no_children_left(before)
    assert _gone({pid, parent}), "the workers the server forked end with it"


def test_spawned_big_results_come_back_whole():
    with forked.SpawnedMap(bytes, [3_000_000, 5, 1_000_000], 2) as results:
        assert sorted(len(r) for r in results) == [5, 1_000_000, 3_000_000]


@pytest.mark.parametrize("func, workers, message", [
    (probe.fail_on_seven, 2, "ValueError: job seven is bad"),
    (probe.die_on_three, 1, "ended early.*signal 9"),
])
def test_a_failed_spawned_child_is_an_error_and_leaves_no_process(func, workers, message):
    before = children_of(os.getpid())
    with pytest.raises(forked.WorkerFailed, match=message), forked.SpawnedMap(func, list(range(50)), workers) as results:
        list(results)
    assert no_children_left(before)


def test_leaving_early_stops_the_spawned_children():
    before = children_of(os.getpid())
    with forked.SpawnedMap(probe.slow, list(range(400)), 2) as results:
        for _ in results:
            break
    assert no_children_left(before)


def test_a_function_that_cannot_pickle_is_refused_before_any_child_starts():
    before = children_of(os.getpid())
    with pytest.raises(Exception, match="pickle|Can't"):
        forked.SpawnedMap(lambda n: n, [1, 2], 2)
    assert children_of(os.getpid()) == before


def _fixture_files(tmp_path):
    projects = tmp_path / "projects"
    for run in CC.iterdir():
        shutil.copytree(run / "projects", projects, dirs_exist_ok=True)
    return scan.discover(projects)


def test_spawned_report_workers_give_the_same_figures(tmp_path, monkeypatch):
    files = _fixture_files(tmp_path)
    serial = scan.scan(files, scan.ScanCache(None), workers=1)
    monkeypatch.setattr(forked, "start_method", lambda *a, **k: "spawn")
    spawned = scan.scan(files, scan.ScanCache(None), workers=2, pool_min_bytes=0)
    assert spawned == serial and len(serial) == len(files) == len(all_transcripts())


def test_a_spawned_report_worker_imports_only_what_scanning_needs(tmp_path):
    files = _fixture_files(tmp_path)[:1]
    with forked.SpawnedMap(probe.scan_and_list_modules, files, 1) as results:
        ((_, result, _, segments), modules), = list(results)
    assert result is not None and segments is None  # no replay asked: the engine is not imported
    loaded = set(modules)
    assert "service.report.scan" in loaded
    unused = {"PySide6", "peewee", "tiktoken", "watchdog", "psycopg2", "apscheduler", "mcp", "pytest",
              "service.cli", "service.daemon", "service.store", "service.api", "service.engine_setup.tokenizer",
              "service.engine.session",
              "models", "multiprocessing", "concurrent.futures"}
    assert not {m for m in loaded if m in unused or m.split(".")[0] in unused - {"service"}}


def test_spawned_workers_start_only_for_a_longer_scan():
    fork_min = forked.POOL_MIN_BYTES
    assert forked.min_bytes(fork_min, "fork") == fork_min
    assert forked.min_bytes(fork_min, "spawn") == max(fork_min, forked.SPAWN_MIN_BYTES) > fork_min
    assert forked.min_bytes(fork_min, "serial") > 1 << 60


@pytest.mark.parametrize("method", ["serial", "fork", "spawn"])
def test_the_scan_replays_the_main_transcripts_as_the_report_alone_would(tmp_path, monkeypatch, method):
    """The restart figures replayed from the scan's own read equal a replay of each file on its own."""
    from service.engine_setup.engines import load_prices
    from service.report import restart

    if method == "fork" and not forked.can_fork():
        pytest.skip("no fork here")
    files = _fixture_files(tmp_path)
    mains = [tf.path for tf in files if not tf.subagent]
    prices = load_prices()
    alone = {path: _replayed_alone(path, prices)[0] for path in mains}
    assert sum(len(segs) for segs in alone.values()) > len(mains)  # compactions and clears: several per file
    replayed: dict = {}
    plain = scan.scan(files, scan.ScanCache(None), workers=1)
    if method != "serial":
        monkeypatch.setattr(forked, "start_method", lambda *a, **k: method)
    got = scan.scan(files, scan.ScanCache(None), workers=1 if method == "serial" else 2, pool_min_bytes=0,
                    replay=(prices, frozenset(mains)), replayed=replayed)
    assert got == plain  # the scan's own results do not change
    assert replayed == alone
    # through the report's cache: the same segments as replaying every file again
    assert restart.replayed_segments(mains, prices, None, scan.fingerprint, replayed=replayed) == \
        restart.replayed_segments(mains, prices, None, scan.fingerprint)


@pytest.mark.skipif(not forked.can_fork(), reason="no fork here")
def test_workers_sharing_one_encoder_count_every_text_themselves(tmp_path, monkeypatch):
    """Over a bigger history the parent builds tiktoken's encoder before the fork: the workers then count their
    results' texts (edits of files they do not replay, placeholder outputs), the parent none; same figures."""
    from service.engine_setup.engines import load_prices

    files = _fixture_files(tmp_path)
    mains = sorted(tf.path for tf in files if not tf.subagent)
    plain = scan.scan(files, scan.ScanCache(None), workers=1)
    monkeypatch.setattr(forked, "start_method", lambda *a, **k: "fork")
    left: list[int] = []  # texts each result still held when the parent settled it
    settle = scan.settle

    def parent_settles(result, count):
        left.append(sum(len(e["data"].get("old_strings") or ()) for e in result["events"])
                    + len(result.get("placeholder_texts") or ()))
        settle(result, count)

    monkeypatch.setattr(scan, "settle", parent_settles)
    for shared in (False, True):
        monkeypatch.setattr(scan, "SHARED_ENCODER_MIN_BYTES", 0 if shared else 1 << 60)
        left.clear()
        got = scan.scan(files, scan.ScanCache(None), workers=2, pool_min_bytes=0,
                        replay=(load_prices(), frozenset(mains[:1])), replayed={})
        assert got == plain and len(left) == len(files)
        assert (sum(left) == 0) == shared, "the parent counts only what workers without the encoder left"


@pytest.mark.skipif(not forked.can_fork(), reason="no fork here")
def test_a_replay_without_a_scan_shares_the_encoder_from_the_same_size(tmp_path, monkeypatch):
    """A report run alone after the service filled the scan cache replays its main transcripts without scanning
    them: from the size it is given (the report gives the scan's own), its workers share tiktoken's encoder,
    built by the parent before the fork (decision 510); the same segments either way."""
    from service.engine_setup import tokenizer
    from service.engine_setup.engines import load_prices
    from service.report import restart

    mains = sorted(tf.path for tf in _fixture_files(tmp_path) if not tf.subagent)
    prices = load_prices()
    want = restart.replayed_segments(mains, prices, None, scan.fingerprint, workers=1)
    monkeypatch.setattr(forked, "POOL_MIN_BYTES", 0)
    size = sum(os.path.getsize(path) for path in mains)
    for shared in (False, True):
        monkeypatch.setattr(tokenizer, "_encoding", None)
        got = restart.replayed_segments(mains, prices, None, scan.fingerprint, workers=2,
                                        share_from=size if shared else size + 1)
        assert got == want
        assert (tokenizer._encoding is not None) == shared, "built before the workers fork, only from that size"


def _replayed_alone(path, prices, max_line=None, chunk_size=1 << 20):
    """What `ctxlamp replay` gives for a file's segments (the engine's own reader), as the report keeps them."""
    from service.engine_setup.engines import replay_file
    from service.report import restart

    end = [e for e in replay_file(path, prices, full_events=False, max_line=max_line, chunk_size=chunk_size)
           if e["event"] == "end"][-1]
    return [{k: p.get(k) for k in restart.KEPT} for p in end["segments"]], end["skipped_lines"]


def test_the_reports_reader_feeds_the_engine_what_replay_feeds_it(tmp_path):
    """Blank lines, lines the parser skips by their opening bytes, over-long and broken lines and an
    unfinished last line, in chunks that cut lines anywhere: the same segments and skipped lines."""
    from service.engine_setup.engines import load_prices
    from service.report import restart, scan
    from tests.support.corpus import scenario_session

    src = scenario_session("subagent-and-compact").read_bytes().splitlines(keepends=True)
    noise = [b"\n", b"   \n", b'{"type":"attachment","uuid":"x-1","parentUuid":null}\n',
             b'  {"type": "progress", "data": 1}\n', b"{broken\n", b"x" * 5000 + b"\n",
             b'{"type":"assistant","message":{"usage":\n']
    lines = [line for i, line in enumerate(src) for line in ([line, noise[i % len(noise)]] if i % 3 else [line])]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines) + b'{"type":"user","unfinished')
    prices = load_prices()
    want = _replayed_alone(str(path), prices, max_line=4096, chunk_size=1000)
    data = path.read_bytes()
    tf = scan.TranscriptFile(str(path), "p", False, "s")
    scan.init_worker({}, 4096)
    try:
        alone = scan.scan_chunks([data], tf, scan.SizeMemo())
        for size in (1, 777, 1 << 20):
            replay = restart.Replay(str(path), prices)
            scanned = scan.scan_chunks((data[i:i + size] for i in range(0, len(data), size)), tf, scan.SizeMemo(),
                                       replay=replay)
            assert (replay.segments(), replay.engine.skipped_lines) == want
            assert scanned == alone, "the lines the replay decoded give the scan what its own decoding gives"
    finally:
        scan.init_worker({})
    assert want[1] >= 3 and len(want[0]) >= 2 and alone["malformed"] >= 1
