"""The service's first pass reads each transcript once, for the history and the report's cache together.

A new user's Overview and report wait for it (issue 40): the history's replay and the report's
scan used to read every file one after the other.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from service import config as config_mod
from service.client.paths import app_paths
from service.daemon import ahead, first_pass
from service.daemon.runtime import Service
from service.ingest.transcript_file import chunks
from service.engine_setup.engines import new_engine
from service.history.sink import MAX_UNSAVED
from service.report import forked, scan
from service.report.build import load_prices

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude-code-2.1.328"
_opened: list[str] | None = None  # paths the audit hook saw opened, while a test listens


def _audit(event: str, args: tuple) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def _history(ctx_home: Path) -> tuple[Path, list[Path]]:
    """Every fixture transcript (main and subagent files) under CLAUDE_CONFIG_DIR, three days old."""
    if not FIXTURES.is_dir():
        pytest.skip("the recorded fixtures are not in this checkout")
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    old = time.time() - 3 * 86400
    copied = []
    for src in sorted(FIXTURES.rglob("*.jsonl")):
        if src.name in ("api.jsonl", "results.jsonl") or "projects" not in src.parts:
            continue
        at = src.parts.index("projects")  # <scenario>/projects/<project>/...: one project per scenario
        dst = projects / (src.parts[at - 1] + src.parts[at + 1]) / Path(*src.parts[at + 2:])
        if dst.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        os.utime(dst, (old, old))
        copied.append(dst)
    return projects, copied


def _profiles(path: Path, prices) -> list[dict]:
    engine = new_engine(str(path), prices, full_events=False, call_rows=False)
    splitter = scan.LineSplitter()
    for chunk in chunks(path):
        for line in splitter.feed(chunk):
            engine.feed_line(line)
    engine.finish("end")
    return engine.profiles


def test_the_first_pass_reads_each_transcript_once_for_the_history_and_the_report(ctx_home):
    global _opened
    projects, copied = _history(ctx_home)
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    svc._build()
    try:
        live, old = svc.following.discover()
        assert not live and old, "three-day-old transcripts are history"
        todo = svc.jobs.plan_scan(old)
        _opened = []
        svc.jobs._scan(todo)
        opened, _opened = _opened, None
        assert svc.scan["state"] == "idle" and svc.scan["done"] == len(todo)
        reads = {str(p): opened.count(str(p)) for p in copied}
        # once for the history and the report; once more when the idle service keeps its copy (issue 49)
        assert reads == {str(p): 2 for p in copied}, "each transcript is read once, then copied"
        assert svc.keeper.block["files"] == len(copied)

        cache = scan.ScanCache(paths.data / "cache" / "report-scan.json")
        fresh = scan.scan(scan.discover(projects), scan.ScanCache(None), workers=1)
        assert {p: cache.get(p, scan.fingerprint(p)) for p in fresh} == fresh, "the report's cache, as a report fills it"

        for path in old:  # the history holds what a replay of each old transcript gives
            want = _profiles(path, svc.prices)
            got = svc.persist.store.sessions.segments(path.stem, 10_000)
            assert sorted(p["segment"] for p in got) == sorted(p["segment"] for p in want)
            assert svc.persist.history_current(svc.persist.history_states().get(str(path)), path.stat())
    finally:
        svc.persist.close()


def test_the_report_workers_give_what_one_process_gives(ctx_home):
    projects, copied = _history(ctx_home)
    prices = load_prices()
    files = scan.discover(projects)
    history = {str(p) for p in copied if "subagents" not in p.parts}

    def one_way(method: str, server=None):
        cache = scan.ScanCache(None)
        reads: dict[str, first_pass.HistoryRead | None] = {}
        assert first_pass.run(first_pass.plan(files, cache, history), cache, max_line=scan.DEFAULT_MAX_LINE,
                              prices=prices, engine_cfg=None, store_prompts=True, method=method, workers=2,
                              on_history=lambda batch: reads.update((path, read) for path, read, _ in batch),
                              server=server)
        return cache.files, reads

    serial, spawned = one_way("serial"), one_way("spawn")
    assert set(serial[1]) == history
    assert spawned == serial
    if hasattr(os, "fork"):
        assert one_way("fork-server") == serial
        started = ahead.start_fork_server(2)  # as a first start does, before the service builds itself
        assert started is not None
        assert one_way("fork-server", started) == serial
        assert started.wait(10) == 0


@pytest.mark.parametrize("method", ["serial", "spawn", pytest.param("fork-server", marks=pytest.mark.skipif(
    not hasattr(os, "fork"), reason="a fork server runs only where the system can fork"))])
def test_the_readers_count_their_results_texts_and_the_service_none(ctx_home, monkeypatch, method):
    """Edits' old_strings and placeholder outputs are counted where the file was read: in a worker, not on the
    service's thread beside its live sessions (it counted them all there, 0.3-0.7 s of a first pass)."""
    projects, copied = _history(ctx_home)
    files = scan.discover(projects)
    arrived: list[tuple[int, int]] = []  # per result as it reaches the service: (texts left to count, edits counted)
    real_pool = forked.pool

    def texts_left(result: dict) -> tuple[int, int]:
        edits = [ev["data"] for ev in result["events"] if "old_string_tokens" in ev["data"]]
        return (len(result.get("placeholder_texts") or ()) + sum(len(d.get("old_strings") or ()) for d in edits),
                sum(d["old_string_tokens"] is not None for d in edits))

    class Watched:
        def __init__(self, inner):
            self.inner = inner

        def __enter__(self):
            return (arrived.append(texts_left(item[1])) or item for item in self.inner.__enter__()
                    if isinstance(item[1], dict))

        def __exit__(self, *exc):
            return self.inner.__exit__(*exc)

    monkeypatch.setattr(forked, "pool", lambda *a, **k: Watched(real_pool(*a, **k)))
    cache = scan.ScanCache(None)
    history = {str(p) for p in copied if "subagents" not in p.parts}
    assert first_pass.run(first_pass.plan(files, cache, history), cache, max_line=scan.DEFAULT_MAX_LINE,
                          prices=load_prices(), engine_cfg=None, store_prompts=True, method=method, workers=2,
                          on_history=lambda batch: None)
    assert len(arrived) == len(files)
    assert sum(left for left, _ in arrived) == 0
    assert sum(counted for _, counted in arrived) > 0, "the fixtures' edits were counted"
    assert {p: cache.get(p, scan.fingerprint(p)) for p in cache.files} == scan.scan(files, scan.ScanCache(None), workers=1)


@pytest.mark.parametrize("forks, history_mb, encoder", [(2, 11, True), (2, 1, False), (0, 11, False)])
def test_a_fork_server_over_a_big_history_builds_the_encoder_its_workers_share(ctx_home, forks, history_mb, encoder):
    """Decision 493: forked workers count with one encoder built before they fork (0.2 s and 76 MB, shared);
    over a small history, or in a worker that is its own interpreter, the Python counter is built instead."""
    import subprocess

    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-p"
    projects.mkdir(parents=True)
    with open(projects / "a.jsonl", "wb") as f:  # sparse: only its size is read
        f.truncate(history_mb << 20)
    root = Path(__file__).resolve().parents[3]
    probe = ("from service.daemon import first_pass; from service.engine_setup import tokenizer as t; "
             f"first_pass.preload({forks}); "
             "print(t._encoding is not None, t._small is not None and t._small.ranks.table is not None)")
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": str(root)}).stdout.split()
    assert out == [str(encoder), str(not encoder)]


def test_the_pass_asks_a_fork_server_for_a_shared_encoder_from_the_cold_reports_size(ctx_home, monkeypatch):
    """The same size decides as for the cold report's own workers (scan.SHARED_ENCODER_MIN_BYTES): below it, the
    workers count a small history with the Python counter rather than wait for an encoder's build."""
    projects, copied = _history(ctx_home)
    files = scan.discover(projects)
    asked: list[tuple[str, int]] = []
    real_pool = forked.pool

    def watched(func, jobs, workers, init=None, **kw):
        asked.append((kw["method"], init.args[-1]))  # shared: the workers count with the server's encoder
        return real_pool(func, jobs, workers, init, method="serial")

    monkeypatch.setattr(forked, "pool", watched)

    def read(method: str) -> None:
        cache = scan.ScanCache(None)
        assert first_pass.run(first_pass.plan(files, cache, set()), cache, max_line=scan.DEFAULT_MAX_LINE,
                              prices=load_prices(), engine_cfg=None, store_prompts=True, method=method,
                              workers=2, on_history=lambda batch: None)

    read("fork-server")
    monkeypatch.setattr(scan, "SHARED_ENCODER_MIN_BYTES", 1)
    read("fork-server")
    read("spawn")
    assert asked == [("fork-server", False), ("fork-server", True), ("spawn", False)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a fork server is started only where the system can fork")
def test_a_fork_server_started_ahead_for_a_small_history_ends_unused(ctx_home):
    """Below the size where workers pay, the pass reads in the service's thread: the server started ahead
    must not linger (a process per start that waits forever)."""
    projects, copied = _history(ctx_home)
    started = ahead.start_fork_server(2)
    cache = scan.ScanCache(None)
    plan = first_pass.plan(scan.discover(projects), cache, {str(p) for p in copied})
    assert plan.bytes < forked.min_bytes(forked.POOL_MIN_BYTES, "fork-server")
    assert first_pass.run(plan, cache, max_line=scan.DEFAULT_MAX_LINE, prices=load_prices(), engine_cfg=None,
                          store_prompts=True, workers=2, on_history=lambda batch: None, server=started)
    assert started.wait(10) == 0 and len(cache.files) == len(plan.jobs)


@pytest.mark.skipif(forked.start_method() != "fork", reason="the service forks its workers from a fork server "
                                                             "only where the system can fork safely")
def test_a_first_start_starts_the_fork_server_ahead_and_a_later_one_does_not(ctx_home):
    """Only a start with no report cache yet (every transcript to read) pays an interpreter ahead of the pass;
    a service that stops before its pass ends it. `ctxlamp serve` starts it before the service's imports and
    hands it over; one handed to a start that is not a first start is ended."""
    projects, _ = _history(ctx_home)
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    svc.jobs.prestart_first_pass()
    server = svc.jobs._fork_server
    assert server is not None and server.poll() is None
    svc.jobs.dismiss_fork_server()
    assert server.wait(10) == 0 and svc.jobs._fork_server is None
    handed = ahead.on_first_start(paths.data)
    assert handed is not None
    svc.jobs.prestart_first_pass(handed)
    assert svc.jobs._fork_server is handed
    svc.jobs.dismiss_fork_server()
    assert handed.wait(10) == 0
    (paths.data / "cache").mkdir(parents=True, exist_ok=True)
    (paths.data / "cache" / "report-scan.json").write_text("{}")
    assert ahead.on_first_start(paths.data) is None
    svc.jobs.prestart_first_pass()
    assert svc.jobs._fork_server is None
    stray = ahead.start_fork_server(2)
    svc.jobs.prestart_first_pass(stray)
    assert svc.jobs._fork_server is None and stray.wait(10) == 0


def _written(store) -> dict[str, list[dict]]:
    """Every row the history's first pass writes, row ids included (the archiving's wall-clock stamp left out)."""
    out = {}
    for table, order in (("turn_record", "id"), ("session", "session_id"), ("segment_profile", "id"),
                         ("scan_state", "path")):
        cursor = store.db.execute_sql(f"SELECT * FROM {table} ORDER BY {order}")
        names = [d[0] for d in cursor.description]
        out[table] = [{k: v for k, v in zip(names, row) if k != "archived_at"} for row in cursor]
    return out


def _one_by_one(store, reads: list[tuple[str, first_pass.HistoryRead]]) -> None:
    """How the service wrote a history read before it wrote many at once: file after file, each write
    landing on its own, the archived segments read again for each file."""
    for path, read in reads:
        for at in range(0, len(read.turns), MAX_UNSAVED):
            store.history.add_turn_records(read.turns[at:at + MAX_UNSAVED])
        sid = read.session["session_id"]
        store.sessions.upsert_session(sid, transcript=path, project=read.session.get("project"),
                                      model=read.session.get("model"), seen_at=read.session.get("updated_at"))
        known = {p["segment"] for p in store.sessions.segments(sid, 10_000)}
        for profile in read.profiles:
            if profile["segment"] not in known:
                store.sessions.archive_profile(profile)
        inode, size, mtime = read.stat
        store.spend.set_scan_state(path, inode=inode, size=size, mtime=mtime, offset=size)


def test_the_history_written_in_batches_is_what_one_file_at_a_time_wrote(ctx_home, tmp_path):
    """The first pass writes many files' rows at once (one statement per table): the database ends as it did
    when each file was written on its own, also with a file skipped inside a batch, two files of one session,
    and a stop between two files (every file read by then is written, none twice)."""
    from service.daemon.persist import Persistence
    from service.store import Store

    projects, copied = _history(ctx_home)
    mains = sorted((p for p in copied if "subagents" not in p.parts), key=lambda p: p.stat().st_size)
    twin = projects / "another-project" / mains[-1].name  # the same session under a second project, shorter
    twin.parent.mkdir()
    lines = mains[-1].read_bytes().splitlines(keepends=True)
    twin.write_bytes(b"".join(lines[:len(lines) // 2]))
    os.utime(twin, (mains[-1].stat().st_mtime,) * 2)
    history = {str(p) for p in (*mains, twin)}
    prices = load_prices()

    def first_pass_into(store, *, fifo: Path | None = None, stop_after: int | None = None, batch_files: int = 3):
        files = scan.discover(projects)
        planned = first_pass.plan(files, scan.ScanCache(None), history)
        if fifo is not None:  # planned as a transcript, a FIFO by the time a worker reaches it
            fifo.unlink()
            os.mkfifo(fifo)
        handed: list[first_pass.Recorded] = []
        seen = [0]

        def stop() -> bool:
            seen[0] += 1
            return stop_after is not None and seen[0] >= stop_after

        persist = Persistence(store)

        def on_history(batch):
            handed.extend(batch)
            persist.record_history([(path, read) for path, read, _ in batch if read is not None])

        done = first_pass.run(planned, scan.ScanCache(None), max_line=scan.DEFAULT_MAX_LINE, prices=prices,
                              engine_cfg=None, store_prompts=True, on_history=on_history, should_stop=stop,
                              method="serial", workers=1, batch_files=batch_files)
        return done, handed, [tf.path for tf, _ in planned.jobs][:seen[0]]

    def reference(reads, name):
        store = Store(tmp_path / f"{name}.db")
        _one_by_one(store, reads)
        return store

    stores = []
    try:
        batched = Store(tmp_path / "batched.db")
        stores.append(batched)
        done, handed, read_paths = first_pass_into(batched)
        reads = [(path, read) for path, read, _ in handed if read is not None]
        assert done and {path for path, _ in reads} == history
        stores.append(reference(reads, "one-by-one"))
        assert _written(batched) == _written(stores[-1])
        assert len(_written(batched)["scan_state"]) == len(history)

        skipped_fifo = mains[len(mains) // 2]
        for stop_after in (None, 4):
            store = Store(tmp_path / f"stopped-{stop_after}.db")
            stores.append(store)
            if skipped_fifo.is_fifo():
                skipped_fifo.unlink()
                shutil.copyfile(twin, skipped_fifo)
            done, handed, read_paths = first_pass_into(store, fifo=skipped_fifo, stop_after=stop_after)
            assert done is (stop_after is None)
            assert [path for path, _, _ in handed] == [p for p in read_paths if p in history], \
                "every file read before the stop is handed on, once"
            why = {path: why for path, read, why in handed if read is None}
            assert why == {str(skipped_fifo): "not a regular file (a FIFO)"}
            kept = [(path, read) for path, read in reads if path in {p for p, r, _ in handed if r is not None}]
            stores.append(reference(kept, f"reference-{stop_after}"))
            assert _written(store) == _written(stores[-1])
            assert {row["path"] for row in _written(store)["scan_state"]} == {path for path, _ in kept}
    finally:
        for store in stores:
            store.close()




def test_the_live_sessions_take_the_advice_basis_the_first_pass_wrote_and_are_published_again(ctx_home):
    """A first start learns the priced moves' basis once the recent sessions are read, before the old sessions'
    segments are written (their writes wait for it): the live sessions kept the defaults, and the Session tab a
    move priced on them, until a live session archived a segment. Once the pass is idle, the basis is learnt
    from the History and the live sessions are published with it."""
    import queue as queue_mod

    from service.engine.advice import AdviceBasis
    from service.report.restart import advice_basis

    projects, copied = _history(ctx_home)
    mains = sorted((p for p in copied if "subagents" not in p.parts and not p.name.startswith("agent-")),
                   key=lambda p: p.stat().st_size)
    live = projects / "live-project" / mains[-1].name.replace(mains[-1].stem[:8], "0ddba11e")
    live.parent.mkdir()
    shutil.copyfile(mains[-1], live)  # written now: a recent session
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    try:
        svc._build()
        svc.ready.set()
        published: list[dict] = []
        client = svc.hub.subscribe()
        svc.following.learn_advice_basis()  # at the start, from an empty History: the defaults
        recent, old = svc.following.discover()
        assert recent == [live]
        svc.following.catch_up = {str(live): live}
        svc.scan = {"state": "catching_up", "done": 0, "total": 1}
        svc.jobs.caught_up.clear()
        while svc.following.catch_up or any(svc.following._reading_on.values()):
            with svc._live.lock:
                svc.following.catch_up_where(None, limit=1)
        assert svc.jobs.caught_up.is_set()
        assert svc.engine_cfg.advice.horizon_calls == AdviceBasis().horizon_calls
        svc.jobs._scan(svc.jobs.plan_scan(old))
        assert svc.scan["state"] == "idle"
        while not client.queue.empty():  # what was published before the basis was learnt again
            client.queue.get_nowait()
        while True:  # what the pass left for the loop
            try:
                kind, task, fut = svc.queue.get_nowait()
            except queue_mod.Empty:
                break
            if kind == "task":
                with svc._live.lock:
                    task()
        learnt, sources = advice_basis(svc.persist.restart_figures(10_000) or [])
        assert sources["horizon"] == "history", "the fixtures' old sessions give a horizon of their own"
        assert svc.engine_cfg.advice.horizon_calls == learnt.horizon_calls != AdviceBasis().horizon_calls
        sess = next(iter(svc.registry.sessions.values()))
        while not client.queue.empty():
            event, _, data = client.queue.get_nowait().decode().partition("\ndata: ")
            if event == "event: snapshot":
                published.append(json.loads(data))
        assert [snap["session_id"] for snap in published] == [sess.snapshot["session_id"]]
    finally:
        svc.persist.close()
