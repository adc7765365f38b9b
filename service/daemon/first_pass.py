"""The service's first pass over the history: the report's scan and the history's replay, one read per file.

A new user's Overview and report are complete only when every transcript was read. The history
scan used to replay each old transcript on one thread, and the report's scan cache was filled
afterwards by reading every transcript again. Here both readers run in the report's workers
(service/report/forked.py), from one read of each file: the report's meters and spend
(`service/report/scan.py`'s `scan_chunks`) and, for an old main transcript, the engine and the
turn records the history keeps. The service's
thread only writes what the workers send back: the report's per-file cache, the segment
profiles, the turn records and each file's scan state.

Workers are never forked from the service's process: it runs threads (the API, the live loop, the
scheduler) and a child forked while one of them holds a lock waits for it forever. Where the system
can fork, one fresh interpreter (a fork server, service/report/spawned.py) imports the readers
once and forks the workers (on a first start it is started ahead, while the service builds itself:
service/daemon/ahead.py); elsewhere each worker is a fresh interpreter. Either way a worker counts
tokens with the encoder a fork server built before it forked them, else with the Python counter
(decisions 490, 493). Below
`forked.SPAWN_MIN_BYTES` of unread history one process is as fast, and the service's own thread
reads it (the same functions), unless the fork server was started ahead: its start is then paid
already, and from `forked.POOL_MIN_BYTES` its workers read beside the service's loop, which reads
the recent sessions meanwhile (decision 457).
"""
from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.engine_setup.engines import new_engine
from service.history.sink import TurnSink
from service.ingest.transcript_file import Skipped, check
from service.report import scan
from service.report.restart import Replay

# What a worker needs besides the job: set once per worker by `init_worker`.
_replay_with: tuple[Any, Any, bool] | None = None   # (prices, engine config, store prompts)

log = logging.getLogger("ctxlamp.history")

def init_worker(remembered: dict[str, int], max_line: int, prices: Any, engine_cfg: Any, store_prompts: bool,
                shared: bool = False) -> None:
    """What each worker needs (a fork server runs it once, before it forks them; `shared`: they share the
    encoder it builds, else each counts with the Python counter, `preload`)."""
    global _replay_with
    scan.init_worker(remembered, max_line)
    _replay_with = (prices, engine_cfg, store_prompts)
    _build_counter(shared)  # nothing more when a fork server started ahead built the encoder: it counts


@dataclass
class HistoryRead:
    """What the history keeps of one old main transcript (`Persistence.record_history` writes it)."""
    stat: tuple[int, int, float]                    # (inode, size, mtime) before the read
    session: dict[str, Any]                         # session id, project, model, updated_at
    profiles: list[dict] = field(default_factory=list)
    turns: list[dict] = field(default_factory=list)


class _HistoryReplay:
    """The engine and the turn sink, fed the lines the report's scan splits (service/report/restart.py's Replay)."""

    def __init__(self, path: str, prices: Any, engine_cfg: Any, store_prompts: bool) -> None:
        from types import SimpleNamespace

        engine = new_engine(path, prices, engine_cfg, full_events=False, call_rows=False)
        self.turns: list[dict] = []
        # one write per closed turn (no time-based rewrites), collected here and written by the service
        sink = TurnSink(self.turns.extend, store_prompts=store_prompts, prices=prices, clock=lambda: 0.0)
        who = SimpleNamespace(path=path, engine=engine, session_id=os.path.basename(path)[:-6])
        self.sink, self.who = sink, who
        self.replay = Replay(path, prices, engine=engine, on_entry=lambda entry: sink(who, entry))

    def close(self, st: os.stat_result) -> HistoryRead:
        engine = self.replay.engine
        engine.finish("end")
        snap = [e for e in engine.drain_events() if e["event"] == "end"][-1]["status"]  # the engine as it ends
        self.sink.finish(self.who)
        session = {"session_id": snap["session_id"], "project": snap.get("project"), "model": snap.get("model"),
                   "updated_at": snap.get("updated_at")}
        return HistoryRead((st.st_ino, st.st_size, st.st_mtime), session, list(engine.profiles), self.turns)


Item = tuple[str, "dict | str | None", dict[str, int], "HistoryRead | None"]


def read_one(job: tuple[scan.TranscriptFile, bool]) -> Item:
    """(path, report scan result or why skipped, new sizes, history read or None) of one transcript.

    `job` is (file, wanted by the history): an old main transcript the history has not read as it is now,
    whose lines also feed the engine and the turn records as the report's scan splits them.
    """
    tf, wanted = job
    if not wanted:
        path, result, new_sizes, _ = scan.scan_one(tf)
        if isinstance(result, dict):
            scan.settle(result, scan.lazy_counter)  # counted where it was read, not on the service's thread
        return path, result, new_sizes, None
    assert _replay_with is not None, "init_worker first"
    prices, engine_cfg, store_prompts = _replay_with
    sizes = scan.worker_sizes()
    try:
        st = check(tf.path)
        history = _HistoryReplay(tf.path, prices, engine_cfg, store_prompts)
        result = scan.scan_chunks(scan.file_chunks(tf.path), tf, sizes, defer_tokens=True, replay=history.replay)
        scan.settle(result, scan.lazy_counter)  # its engine counted the same edits: the counter remembers them
        return tf.path, result, sizes.new, history.close(st)
    except Skipped as exc:
        return tf.path, None if exc.gone else exc.reason, {}, None
    except OSError:
        return tf.path, None, {}, None


def preload(forks: int = 0) -> None:
    """What the readers count with, built before their jobs come (service/report/spawned.py's `--preload`). A
    fork server (`forks` > 1) over a history of the size where the cold report builds one for its workers
    builds tiktoken's encoder: the workers it forks share it copy-on-write and count at its pace from their
    first text (decision 493). Otherwise the Python counter whole: a lone worker's encoder would be its own
    76 MB and 0.2 s, and a small history is counted before an encoder would be built."""
    _build_counter(forks > 1 and _history_reaches(scan.SHARED_ENCODER_MIN_BYTES))


def _build_counter(shared: bool) -> None:
    """tiktoken's encoder, for workers that share it; else the Python counter whole (`tokenizer.warm`, which
    leaves an encoder already built in charge)."""
    from service.engine_setup import tokenizer

    if shared:
        tokenizer.load_o200k()
    else:
        tokenizer.warm()


def _history_reaches(size: int) -> bool:
    """Whether the transcripts the pass will find (the report's `discover`) hold at least `size` bytes (on the
    core a starting service leaves idle, until they do)."""
    from service.client.paths import claude_projects

    total = 0
    for tf in scan.discover(claude_projects()):
        try:
            total += os.stat(tf.path).st_size
        except OSError:
            continue
        if total >= size:
            return True
    return False


@dataclass
class Plan:
    """The first pass's jobs: (file, with the history's replay) for every transcript one reader still needs."""
    jobs: list[tuple[scan.TranscriptFile, bool]]
    fps: dict[str, list[int]]
    bytes: int


def plan(files: list[scan.TranscriptFile], cache: scan.ScanCache, history: set[str]) -> Plan:
    """Which files to read: those the report's cache lacks (or holds for other bytes), and the old main
    transcripts in `history` (those the history's scan state does not hold as they are now)."""
    jobs: list[tuple[scan.TranscriptFile, bool, int]] = []
    fps: dict[str, list[int]] = {}
    for tf in files:
        fp = scan.fingerprint(tf.path)
        if fp is None:
            continue
        wanted = tf.path in history
        if wanted or cache.get(tf.path, fp) is None:
            fps[tf.path] = fp
            jobs.append((tf, wanted, fp[1]))
    jobs.sort(key=lambda j: -j[2])  # biggest first: the workers finish together
    return Plan([(tf, wanted) for tf, wanted, _ in jobs], fps, sum(j[2] for j in jobs))


Recorded = tuple[str, "HistoryRead | None", "str | None"]  # (path, what the history keeps, or why it was skipped)
BATCH_FILES = 64   # the history's files written together (one transaction, one statement per table)...
BATCH_S = 0.25     # ...or fewer, once the first of them waited this long


def run(plan_: Plan, cache: scan.ScanCache, *, max_line: int, prices: Any, engine_cfg: Any, store_prompts: bool,
        on_history: Callable[[list[Recorded]], None],
        should_stop: Callable[[], bool] = lambda: False, workers: int | None = None,
        method: str | None = None, batch_files: int = BATCH_FILES, batch_s: float = BATCH_S,
        server: Any = None) -> bool:
    """Read the planned files; each result goes into `cache` (the report's) and, for the history's files,
    to `on_history([(path, read, why skipped), ...])`, in batches of up to `batch_files` files or `batch_s`
    seconds (writing each file on its own cost the service's thread more than the workers' reading).
    Every file read is handed on before returning, also when `should_stop` stopped it first (then False).
    `server`: a fork server started ahead (`prestart`); used when the plan needs one, else dismissed."""
    from service.report import forked

    if not plan_.jobs:  # every file read already: no reader, and no counter built for one (0.15-0.2 s)
        if server is not None:
            forked.dismiss(server)
        return True
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if method is None:  # `method` given: a test of one way
        # never forked from the service's own process, which runs threads: a fresh interpreter forks them
        # where the system can fork, else each worker is a fresh interpreter
        method = {"serial": "serial", "fork": "fork-server"}.get(forked.start_method(), "spawn")
        least = forked.POOL_MIN_BYTES if server is not None else forked.min_bytes(forked.POOL_MIN_BYTES, method)
        if workers < 2 or len(plan_.jobs) < 2 or plan_.bytes < least:
            method = "serial"
    if server is not None and method != "fork-server":
        forked.dismiss(server)
        server = None
    # an encoder shared by forked workers pays from the size where the cold report builds one for its own
    shared = method == "fork-server" and plan_.bytes >= scan.SHARED_ENCODER_MIN_BYTES
    init = functools.partial(init_worker, cache.sizes, max_line, prices, engine_cfg, store_prompts, shared)

    history_paths = {tf.path for tf, wanted in plan_.jobs if wanted}
    batch: list[Recorded] = []
    since = 0.0

    def hand_on() -> None:
        if batch:
            on_history(batch[:])
            batch.clear()

    def collect(item: Item) -> None:
        nonlocal since
        path, result, new_sizes, read = item
        if isinstance(result, dict):
            cache.put(path, plan_.fps[path], result)
            if result.get("malformed"):  # named where a user looks for why a count is off
                log.warning("%s: %d lines are not JSON objects; skipped", path, result["malformed"])
        if new_sizes:
            cache.sizes.update(new_sizes)
            cache.dirty = True
        if path in history_paths:
            if not batch:
                since = time.monotonic()
            batch.append((path, read, result if isinstance(result, str) else None))
            if len(batch) >= batch_files or time.monotonic() - since >= batch_s:
                hand_on()

    try:
        with scan.collector_paused(), forked.pool(read_one, plan_.jobs, workers, init, method=method,
                                                  server=server) as results:
            for item in results:
                collect(item)
                if should_stop():
                    return False
        return True
    finally:
        hand_on()

