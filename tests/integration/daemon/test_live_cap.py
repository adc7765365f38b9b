"""At a start, only the newest `[sessions] live_max` recent transcripts are live sessions.

A history copied or restored today has every transcript just written: all of them within
`live_hours`. The service started an engine for each before its first pass (hundreds, far over
its memory bound); a person has a handful of sessions going at once. The rest go to the history
and become live sessions when they grow, with the figures a replay from byte zero gives.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path

from tests.support.corpus import scenario_session
from tests.support.harness import replay, wait_for
from tests.support.service_proc import Svc, wait_for_snapshot

COMPACT = scenario_session("subagent-and-compact")  # 9 calls, a subagent, one /compact
REMINDERS = scenario_session("long-session")  # many files read: paths a user may untick


def _recent(claude: Path, count: int, data: bytes) -> list[str]:
    """`count` copies of COMPACT's transcript (`data` of it) under fresh ids, all written in the last
    minutes, oldest first, one project each (so no copy rotates another away)."""
    sids = []
    for n in range(count):
        sid = f"{n:08d}-aaaa-4bbb-8ccc-dddddddddddd"
        proj = claude / "projects" / f"-p{n}"
        proj.mkdir()
        dst = proj / f"{sid}.jsonl"
        dst.write_bytes(data.replace(COMPACT.stem.encode(), sid.encode()))
        os.utime(dst, (time.time() - 300 + n,) * 2)
        sids.append(sid)
    return sids


def _capped(home: Path, live_max: int) -> None:
    (home / "config.toml").write_text(f"[sessions]\nlive_max = {live_max}\n")


def _idle(s: Svc) -> dict:
    return wait_for(lambda: (lambda st: st if st["service"]["scan"]["state"] == "idle" else None)(
        s.get("/api/v1/status")), what="the first pass to end")


def test_only_the_newest_recent_transcripts_are_live_and_the_rest_end_in_the_history(svc, dirs):
    home, claude = dirs
    sids = _recent(claude, 5, COMPACT.read_bytes())
    _capped(home, 2)
    s = svc().start()
    status = _idle(s)
    assert sorted(x["session_id"] for x in status["sessions"]) == sids[-2:]
    assert status["service"]["scan"]["total"] == 3  # the three held back, read by the first pass
    for sid in sids[:3]:  # in the history as any old transcript: its segments, the open one ended at the read
        segs = s.get(f"/api/v1/segments?session={sid}")["segments"]
        assert sorted((p["segment"], p["end_reason"]) for p in segs) == [(0, "compact"), (1, "end")]
    for sid in sids[-2:]:  # the live ones' open segment is still open
        segs = s.get(f"/api/v1/segments?session={sid}")["segments"]
        assert [(p["segment"], p["end_reason"]) for p in segs] == [(0, "compact")]


def test_a_held_back_transcript_that_grows_is_live_with_the_figures_of_a_replay_from_byte_zero(svc, dirs):
    home, claude = dirs
    lines = COMPACT.read_bytes().splitlines(keepends=True)
    head, tail = b"".join(lines[:len(lines) // 2]), b"".join(lines[len(lines) // 2:])
    sids = _recent(claude, 3, head)
    _capped(home, 1)
    s = svc().start()
    assert [x["session_id"] for x in _idle(s)["sessions"]] == [sids[-1]]
    grown = claude / "projects" / "-p0" / f"{sids[0]}.jsonl"
    with open(grown, "ab") as out:  # the user goes back to the oldest session
        out.write(tail.replace(COMPACT.stem.encode(), sids[0].encode()))
    end, _, _ = replay(grown, home.parent / "replay-home")
    wait_for_snapshot(s, sids[0], end)
    status = s.get("/api/v1/status")
    assert status["followed"] == sids[0]
    assert sorted(x["session_id"] for x in status["sessions"]) == sorted([sids[0], sids[-1]])
    assert sids[1] not in {x["session_id"] for x in status["sessions"]}  # the one that did not grow stays history


def test_a_held_back_session_keeps_the_paths_its_user_unticked_across_restarts(svc, dirs):
    """The checkpoint keeps what it knew of a session held back at a start, as of one not read yet."""
    home, claude = dirs
    for name, src in (("-a", REMINDERS), ("-b", COMPACT)):
        (claude / "projects" / name).mkdir()
        (claude / "projects" / name / src.name).write_bytes(src.read_bytes())
    unticked = claude / "projects" / "-a" / REMINDERS.name

    def start(live_max: int) -> Svc:
        os.utime(unticked, (time.time() - 600,) * 2)  # the older of the two
        _capped(home, live_max)
        return svc().start()

    s = start(16)
    sid = REMINDERS.stem
    rows = s.get(f"/api/v1/sessions/{sid}/series")["paths"]
    biggest = max((r for r in rows if r["selected"]), key=lambda r: r["tokens"])
    status, excluded = s.request("POST", f"/api/v1/sessions/{sid}/selection", {"exclude": [biggest["path"]]})
    assert status == 200
    assert s.stop() == 0
    s = start(1)  # held back: not live, its checkpoint state kept by this run's checkpoints
    assert sid not in {x["session_id"] for x in _idle(s)["sessions"]}
    assert s.stop() == 0
    s = start(16)
    assert s.session(sid)["B_default"] == excluded["B_default"]


def engines(before: frozenset[int] = frozenset()) -> list:
    """The session engines alive, less those alive `before` (their ids), from the collector's list: the
    compiled engine's objects take no weak reference, so whether one was freed is asked this way for both
    builds."""
    import gc

    return [o for o in gc.get_objects() if type(o).__name__ == "SessionEngine" and id(o) not in before]


def test_a_session_rotated_away_lets_its_engine_go(ctx_home):
    """A project's session that a new file (`/clear`) rotates away is archived and its engine freed: a
    service that runs for weeks holds the engines of the sessions it follows, not of every one it saw."""
    import gc

    from service import config as config_mod
    from service.client.paths import app_paths
    from service.daemon.runtime import Service

    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    proj = projects / "-p"
    proj.mkdir()
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    svc._build()
    before = frozenset(map(id, engines()))
    try:
        first = proj / COMPACT.name
        first.write_bytes(COMPACT.read_bytes())
        svc.following.on_change(first, True)
        assert svc.registry.sessions[str(first)].engine in engines(before)
        second = proj / "11111111-aaaa-4bbb-8ccc-dddddddddddd.jsonl"
        second.write_bytes(COMPACT.read_bytes().replace(COMPACT.stem.encode(), second.stem.encode()))
        svc.following.on_change(second, True)
        assert list(svc.registry.sessions) == [str(second)]
        gc.collect()
        assert engines(before) == [svc.registry.sessions[str(second)].engine], "only the followed session's is held"
        segs = svc.persist.store.sessions.segments(COMPACT.stem, 100)
        assert sorted((p["segment"], p["end_reason"]) for p in segs) == [(0, "compact"), (1, "rotation")]
    finally:
        svc.persist.close()


def test_over_live_max_a_session_idle_past_live_hours_leaves_the_live_set_and_comes_back_when_it_grows(ctx_home):
    """A service that runs for weeks keeps the sessions a person has going: when a new one starts and more
    than `live_max` are live, one idle for longer than `live_hours` is archived as history and its engine
    freed; when it grows again it is live again, with the figures of a replay from byte zero."""
    import gc

    from service import config as config_mod
    from service.client.paths import app_paths
    from service.daemon.runtime import Service

    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    paths = app_paths()
    cfg = config_mod.merge(config_mod.load(paths.config_file), {"sessions": {"live_max": 1, "live_hours": 0.0003}})
    svc = Service(paths, cfg, projects=projects)
    svc._build()
    before = frozenset(map(id, engines()))
    lines = COMPACT.read_bytes().splitlines(keepends=True)
    try:
        (projects / "-a").mkdir()
        idle = projects / "-a" / COMPACT.name
        idle.write_bytes(b"".join(lines[:len(lines) // 2]))
        svc.following.on_change(idle, True)
        assert svc.registry.sessions[str(idle)].engine in engines(before)
        time.sleep(1.2)  # idle past live_hours (about a second here)
        (projects / "-b").mkdir()
        busy = projects / "-b" / "11111111-aaaa-4bbb-8ccc-dddddddddddd.jsonl"
        busy.write_bytes(COMPACT.read_bytes().replace(COMPACT.stem.encode(), busy.stem.encode()))
        svc.following.on_change(busy, True)
        assert list(svc.registry.sessions) == [str(busy)]
        assert svc.registry.followed_path == str(busy)
        gc.collect()
        assert engines(before) == [svc.registry.sessions[str(busy)].engine], "only the live session's is held"
        segs = svc.persist.store.sessions.segments(COMPACT.stem, 100)
        assert [p["end_reason"] for p in segs] == ["end"]  # as the history would have it after a restart

        with open(idle, "ab") as out:  # the user goes back to it
            out.write(b"".join(lines[len(lines) // 2:]))
        svc.following.on_change(idle, False)
        end, _, _ = replay(idle, ctx_home.parent / "replay-home")
        assert svc.registry.sessions[str(idle)].snapshot == end
        assert svc.registry.followed_path == str(idle)
    finally:
        svc.persist.close()


def test_a_session_that_left_idle_comes_back_with_the_paths_its_user_unticked(ctx_home):
    from service import config as config_mod
    from service.client.paths import app_paths
    from service.daemon import checkpoint
    from service.daemon.runtime import Service

    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    paths = app_paths()
    cfg = config_mod.merge(config_mod.load(paths.config_file), {"sessions": {"live_max": 1, "live_hours": 0.0003}})
    svc = Service(paths, cfg, projects=projects)
    svc._build()
    try:
        (projects / "-a").mkdir()
        idle = projects / "-a" / REMINDERS.name
        idle.write_bytes(REMINDERS.read_bytes())
        svc.following.on_change(idle, True)
        rows = svc.registry.sessions[str(idle)].series()["paths"]
        unticked = max((r for r in rows if r["selected"]), key=lambda r: r["tokens"])["path"]
        svc.following.set_selection(REMINDERS.stem, [unticked], [])
        time.sleep(1.2)  # idle past live_hours (about a second here)
        (projects / "-b").mkdir()
        busy = projects / "-b" / COMPACT.name
        busy.write_bytes(COMPACT.read_bytes())
        svc.following.on_change(busy, True)
        assert str(idle) not in svc.registry.sessions

        svc.jobs.checkpoint_now(force=True)  # what a restart would read
        doc, _ = checkpoint.load_latest(paths.checkpoints)
        assert doc["sessions"][REMINDERS.stem]["excluded"] == [unticked]
        svc.following.on_change(idle, False)  # it grows again
        assert svc.registry.sessions[str(idle)].excluded == {unticked}
    finally:
        svc.persist.close()


def _aged(projects: Path, files: list[tuple[Path, str, int]]) -> list[Path]:
    """Copies of (transcript, project folder, age in seconds), each written that long ago."""
    out = []
    for src, folder, age in files:
        dst = projects / folder / src.name
        dst.parent.mkdir(parents=True)
        dst.write_bytes(src.read_bytes())
        os.utime(dst, (time.time() - age,) * 2)
        out.append(dst)
    return out


@contextmanager
def _starting(projects: Path, monkeypatch, budget: int):
    """A service built over `projects` that reads `budget` bytes a turn of its loop, its recent sessions found
    and not read yet (the test turns its loop by hand)."""
    from service import config as config_mod
    from service.client.paths import app_paths
    from service.daemon import following
    from service.daemon.runtime import Service

    monkeypatch.setattr(following, "PUMP_BUDGET", budget)
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    svc._build()
    try:
        live, _ = svc.following.discover()
        svc.following.catch_up = {str(p): p for p in live}
        svc.scan = {"state": "catching_up", "done": 0, "total": len(live)}
        yield svc, live
    finally:
        svc.persist.close()


def _read_on(svc) -> bool:
    """The sessions still read in slices, one slice each; whether there were any."""
    sliced = False
    with svc.registry.lock:
        for path in list(svc.following._reading_on):
            sliced = True
            svc.following.on_change(Path(path), False)
    return sliced


def test_the_followed_session_after_a_start_is_the_newest_whether_or_not_a_big_one_was_read_in_slices(ctx_home,
                                                                                                       monkeypatch):
    """A big recent transcript is read in slices at a start, between requests. Each slice used to mark it active
    now and follow it, so the session followed after a restart depended on which files were big enough (and on
    how fast the machine read them): a newcomer saw the followed session change with no transcript changed."""
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    big, small = _aged(projects, [(REMINDERS, "-big", 600), (COMPACT, "-small", 300)])
    assert big.stat().st_size > 20 * 4096

    def followed_after_start(budget: int) -> tuple[str, bool]:
        with _starting(projects, monkeypatch, budget) as (svc, live):
            assert live == [big, small]  # oldest first
            sliced = False
            while svc.following.catch_up or any(svc.following._reading_on.values()):
                if svc.following.catch_up:
                    with svc.registry.lock:
                        svc.following.catch_up_where(None, limit=1)
                sliced = _read_on(svc) or sliced
            return svc.registry.followed.session_id, sliced

    assert followed_after_start(4096) == (COMPACT.stem, True)
    assert followed_after_start(8 << 20) == (COMPACT.stem, False)


def test_the_session_the_hook_names_during_a_start_stays_followed_while_a_newer_one_is_still_read(ctx_home,
                                                                                                  monkeypatch):
    """The hook names the session a person works in. At a start a newer transcript may still be read in slices;
    each slice leaves it as recent as its file (decision 495), and it took the followed place from the session
    the hook had named, older on disk: the lamp left the session in use (seen on CI, where it depended on
    which files were still being read when the hook came; decision 500)."""
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    named, newer = _aged(projects, [(COMPACT, "-named", 600), (REMINDERS, "-newer", 300)])
    with _starting(projects, monkeypatch, 4096) as (svc, live):
        assert live == [named, newer]
        with svc.registry.lock:
            svc.following.catch_up_where(None, limit=2)
            assert str(newer) in svc.following._reading_on  # still being read, in slices
            svc.following.rotate(COMPACT.stem, transcript_path=str(named))
        assert svc.registry.followed.session_id == COMPACT.stem
        while _read_on(svc):
            pass
        assert svc.registry.followed.session_id == COMPACT.stem
        assert svc.registry.sessions[str(newer)].snapshot["calls"] > 0  # read to its end all the same


def test_reminders_a_start_finds_crossed_while_it_was_away_are_recorded_without_a_log_line_each(ctx_home, caplog):
    """A first start over a history read every lap its recent sessions crossed into the service's log, one INFO
    line each (57 on real-wild's recent sessions); they are recorded, not announced, and logged at DEBUG."""
    import logging

    from service import config as config_mod
    from service.client.paths import app_paths
    from service.daemon.runtime import Service

    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    path = projects / "-p" / REMINDERS.name
    path.parent.mkdir(parents=True)
    path.write_bytes(REMINDERS.read_bytes())
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    svc._build()
    try:
        caplog.set_level(logging.DEBUG, logger="ctxlamp.service")
        live, _ = svc.following.discover()
        svc.following.catch_up = {str(p): p for p in live}
        svc.scan = {"state": "catching_up", "done": 0, "total": 1}
        while svc.following.catch_up or any(svc.following._reading_on.values()):
            with svc.registry.lock:
                svc.following.catch_up_where(None, limit=1)
                for p in list(svc.following._reading_on):
                    svc.following.on_change(Path(p), False)
        recorded = svc.persist.reminders(REMINDERS.stem)
        assert recorded, "the fixture's session crosses laps"
        lines = [r for r in caplog.records if r.getMessage().startswith("reminder: session")]
        assert len(lines) == len(recorded) and {r.levelno for r in lines} == {logging.DEBUG}
    finally:
        svc.persist.close()


def test_a_file_of_session_titles_alone_is_not_listed_or_followed_until_a_session_starts_in_it(ctx_home):
    """Claude Code writes files holding only `summary` lines (a session's title): on real-wild 8 of a start's
    12 recent files. Each was listed as a live session, "unknown project, warming up, $0", and the newest
    took the lamp. Such a file is read and kept, but listed, published and followed only once a session
    starts in it (decision 497)."""
    from service import config as config_mod
    from service.client.paths import app_paths
    from service.daemon.runtime import Service

    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    real = projects / "-real" / COMPACT.name
    titles = projects / "-titles" / "0ddba11e-aaaa-4bbb-8ccc-dddddddddddd.jsonl"
    for path, data, age in ((real, COMPACT.read_bytes(), 600),
                            (titles, b'{"type":"summary","summary":"Fix the build","leafUuid":"x"}\n', 60)):
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        os.utime(path, (time.time() - age,) * 2)
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    svc._build()
    svc.ready.set()
    client = svc.hub.subscribe()
    try:
        live, _ = svc.following.discover()
        assert live == [real, titles]
        svc.following.catch_up = {str(p): p for p in live}
        svc.scan = {"state": "catching_up", "done": 0, "total": 2}
        with svc.registry.lock:
            svc.following.catch_up_where(None)
        status = svc.status()
        assert [s["session_id"] for s in status["sessions"]] == [COMPACT.stem]
        assert status["followed"] == COMPACT.stem
        published = [m.decode() for m in list(client.queue.queue)]
        assert not any(titles.stem in m for m in published if m.startswith("event: snapshot"))
        with open(titles, "ab") as out:  # a session starts in it
            out.write(COMPACT.read_bytes().replace(COMPACT.stem.encode(), titles.stem.encode()))
        with svc.registry.lock:
            svc.following.on_change(titles, False)
        status = svc.status()
        assert status["followed"] == titles.stem
        assert sorted(s["session_id"] for s in status["sessions"]) == sorted([COMPACT.stem, titles.stem])
    finally:
        svc.persist.close()
