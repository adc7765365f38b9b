"""The real service process: `ctxlamp serve` on temp folders, spoken to over real HTTP.

Appends are written into the watched folder the way Claude Code writes them
(and also in random byte chunks, and with kill -9 in between); the service's
status must end where `ctxlamp replay` of the same bytes ends.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.corpus import ROOT, scenario_session, scenario_sessions
from tests.support.harness import replay, wait_for
from tests.support.service_proc import CTXLAMP, Svc, wait_for_snapshot

COMPACT = scenario_session("subagent-and-compact")  # 9 calls, a subagent, one /compact
CLEAR_FIRST, CLEAR_SECOND = scenario_sessions("clear")
REMINDERS = scenario_session("long-session")  # its shell output brings restart reminders
SWITCH = scenario_session("model-switch")  # sonnet-4-5 -> opus-4-5 -> sonnet-4-5 in one segment (issue 19)


def replay_end_status(path: Path) -> tuple[dict, list[dict]]:
    """`ctxlamp replay FILE --jsonl`: the end status and the reminders it raised."""
    status, reminders, _ = replay(path, path.parent.parent.parent / "replay-home")
    return status, reminders


def append_lines(src: Path, dst: Path, pause_every: int = 0) -> None:
    with open(src, "rb") as fh, open(dst, "ab") as out:
        for i, line in enumerate(fh, 1):
            out.write(line)
            out.flush()
            if pause_every and i % pause_every == 0:
                time.sleep(0.005)


def append_chunks(data: bytes, dst: Path, rng: random.Random, max_chunk: int = 40_000) -> None:
    with open(dst, "ab") as out:
        pos = 0
        while pos < len(data):
            n = rng.randint(1, max_chunk)
            out.write(data[pos:pos + n])
            out.flush()
            pos += n
            if rng.random() < 0.3:
                time.sleep(0.002)


# ---- the API's guard rails --------------------------------------------------------------------
def post_raw(port: int, token: str, body_bytes: int) -> bytes:
    """POST a body of `body_bytes` over a bare socket and return what the service answered. The
    service may answer and close before the body is all sent: a refused send is not an error here,
    the answer is what counts."""
    head = (f"POST /api/v1/rotate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {body_bytes}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        try:
            sock.sendall(head + b"x" * body_bytes)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        return answer


def test_a_body_over_the_limit_is_answered_413_every_time(svc):
    """The rule: a body over 1 MiB is refused with 413, and the client reads that answer whole, even
    though the service never reads the body (it drops what is still coming, bounded, then closes).
    The case that failed: 1 MiB + 1 from http.client, which got a broken pipe in place of the 413
    once the service had closed before the whole body was sent."""
    s = svc().start()
    for _ in range(25):
        assert s.request("POST", "/api/v1/rotate", body=b"x" * ((1 << 20) + 1))[0] == 413
        answer = post_raw(s.info["port"], s.info["token"], (1 << 20) + 1)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]
    # far past what the service drops for a refused body: it stops reading; it stays up and answers
    post_raw(s.info["port"], s.info["token"], 64 << 20)
    assert s.get("/api/v1/health")["ok"] is True


def test_api_discovery_auth_host_and_limits(svc, dirs):
    home, _ = dirs
    s = svc().start()
    api = home / "api.json"
    assert stat.S_IMODE(api.stat().st_mode) == 0o600
    info = json.loads(api.read_text())
    assert set(info) >= {"port", "token", "pid", "version", "started_at"} and len(info["token"]) >= 32

    health = s.get("/api/v1/health")
    assert health["ok"] is True and health["pid"] == s.proc.pid
    assert s.request("GET", "/api/v1/status", token=None)[0] == 401
    assert s.request("GET", "/api/v1/status", token="wrong" + info["token"])[0] == 401
    status, body = s.request("GET", "/api/v1/status", headers={"Host": "evil.example"})
    assert status == 403 and "Host" in body["error"]
    assert s.request("GET", "/api/v1/status", headers={"Host": "evil.example:80"}, token=None)[0] == 403
    assert s.request("GET", "/api/v1/health", headers={"Host": f"localhost:{info['port']}"})[0] == 200
    assert s.request("POST", "/api/v1/rotate", body=b"x" * ((1 << 20) + 1))[0] == 413  # more below
    assert s.request("POST", "/api/v1/rotate", body=b"{not json")[0] == 400
    assert s.request("GET", "/api/v1/nope")[0] == 404
    assert s.request("DELETE", "/api/v1/status")[0] == 405

    # every route the server dispatches is in the OpenAPI document
    doc = s.get("/api/v1/openapi.json")
    assert doc["openapi"].startswith("3.1")
    from service.api.server import ApiServer

    routes = ApiServer.__new__(ApiServer)._routes()
    documented = {(m.lower(), p) for p, ops in doc["paths"].items() for m in ops}

    for method, pattern, _ in routes:
        assert any(m == method.lower() and re.fullmatch(pattern.pattern.replace("$", ""),
                                                          re.sub(r"\{[^}]+\}", "edit", p))
                   for m, p in documented), pattern.pattern
    assert ("get", "/api/v1/events") in documented

    svc_block = s.get("/api/v1/status")["service"]
    assert svc_block["observer"] in ("inotify", "polling") and svc_block["db"]["ok"] is True

    # one service per user: a second one says who runs and exits 1
    second = subprocess.run([*CTXLAMP, "serve"], env=s.env, cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert second.returncode == 1
    assert f"pid {s.proc.pid}" in second.stderr

    assert s.stop() == 0
    assert not api.exists()  # graceful stop removes discovery


def test_status_command_without_a_service_says_how_to_start_one(dirs):
    home, claude = dirs
    env = {**os.environ, "CTXLAMP_HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude)}
    out = subprocess.run([*CTXLAMP, "status", "--json"], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 1 and "ctxlamp serve" in out.stderr


# ---- live appends end where replay ends ----------------------------------------------------------
def test_appends_line_by_line_and_in_random_chunks_match_replay(svc, dirs):
    home, claude = dirs
    s = svc().start()
    p1 = claude / "projects" / "-home-user-one"
    p2 = claude / "projects" / "-home-user-two"
    p1.mkdir()
    p2.mkdir()
    by_lines = p1 / COMPACT.name
    by_chunks = p2 / REMINDERS.name
    switched = claude / "projects" / "-home-user-three" / SWITCH.name
    switched.parent.mkdir()
    sub = next(COMPACT.parent.glob("*/subagents/agent-*.jsonl"))  # a subagent's file: spend, never a session
    (p1 / COMPACT.stem / "subagents").mkdir(parents=True)
    shutil.copyfile(sub, p1 / COMPACT.stem / "subagents" / sub.name)
    shutil.copyfile(sub, p1 / sub.name)  # the flat 2.0.x layout
    append_lines(COMPACT, by_lines, pause_every=25)
    append_chunks(REMINDERS.read_bytes(), by_chunks, random.Random(7))
    append_chunks(SWITCH.read_bytes(), switched, random.Random(19), max_chunk=3000)
    end1, _ = replay_end_status(by_lines)
    end2, reminders = replay_end_status(by_chunks)
    end3, _, open3 = replay(switched, switched.parent.parent.parent / "replay-home")
    wait_for_snapshot(s, end1["session_id"], end1)
    wait_for_snapshot(s, end2["session_id"], end2)
    wait_for_snapshot(s, end3["session_id"], end3)
    assert len(open3[0]["models"]) == 2
    assert end1["segment"] == 1 and end2["laps"] >= 1  # the fixtures exercise a reset and reminders

    status = s.get("/api/v1/status")
    assert status["followed"] in (end1["session_id"], end2["session_id"], end3["session_id"])
    series = s.get(f"/api/v1/sessions/{end1['session_id']}/series")
    assert [c["call"] for c in series["calls"]] == list(range(1, end1["calls"] + 1))
    assert series["resets"] and series["resets"][0]["segment"] == 1
    got = s.get(f"/api/v1/reminders?session={end2['session_id']}")["reminders"]
    assert [(r["segment"], r["lap"], r["call"]) for r in got] == \
        [(r["segment"], r["lap"], r["call"]) for r in reminders]
    # the compaction archived the first segment's profile
    segs = s.get(f"/api/v1/segments?session={end1['session_id']}")["segments"]
    assert [(p["segment"], p["end_reason"]) for p in segs] == [(0, "compact")]
    # named by its session's folder, as the first pass names the stretches it read (the History tab said
    # "unknown project" for every stretch a live session archived)
    project = s.get("/api/v1/status")["sessions"]
    assert segs[0]["project"] == next(x["project"] for x in project if x["session_id"] == end1["session_id"])
    assert segs[0]["project"]

    # the CLI's one-shot view reads the same status
    out = subprocess.run([*CTXLAMP, "status", "--json"], env=s.env, cwd=ROOT, capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0
    assert {x["session_id"] for x in json.loads(out.stdout)["sessions"]} == \
        {end1["session_id"], end2["session_id"], end3["session_id"]}

    assert s.stop() == 0
    stored = svc().start().get("/api/v1/segments")["segments"]
    profiles = {(p["session_id"], p["segment"]): p["end_reason"] for p in stored}
    assert profiles[(end1["session_id"], 1)] == "shutdown"
    assert profiles[(end2["session_id"], 0)] == "compact"  # the long session's early /compact
    assert profiles[(end2["session_id"], end2["segment"])] == "shutdown" and end2["segment"] == 1
    # the switched session's profile: the models it used, each with its calls and spend, as replay has them
    stored = {p["session_id"]: p for p in stored}
    assert stored[end3["session_id"]]["models"] == open3[0]["models"]
    assert stored[end3["session_id"]]["bill_in_usd"] == open3[0]["bill_in_usd"]


def test_a_partial_last_line_is_held_back_until_it_completes(svc, dirs):
    _, claude = dirs
    s = svc().start()
    proj = claude / "projects" / "-p"
    proj.mkdir()
    dst = proj / COMPACT.name
    data = COMPACT.read_bytes()
    lines = data.splitlines(keepends=True)
    head = b"".join(lines[:-1])
    last = lines[-1]
    dst.write_bytes(head + last[: len(last) // 2])
    mid, _ = replay_end_status(_copy_bytes(dst.parent.parent.parent / "mid", COMPACT.name, head))
    mid["transcript"] = str(dst)
    wait_for_snapshot(s, mid["session_id"], mid)
    assert s.session(mid["session_id"])["skipped_lines"] == 0  # half a line is not a broken line
    with open(dst, "ab") as out:
        out.write(last[len(last) // 2:])
    end, _ = replay_end_status(dst)
    wait_for_snapshot(s, end["session_id"], end)


def _copy_bytes(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "p").mkdir(exist_ok=True)
    path = folder / "p" / name
    path.write_bytes(data)
    return path


# ---- rotation ------------------------------------------------------------------------------------
def test_clear_rotates_to_the_new_file_and_archives_the_old_segment(svc, dirs):
    _, claude = dirs
    s = svc().start()
    proj = claude / "projects" / "-home-user-demo-project"
    proj.mkdir()
    first, second = proj / CLEAR_FIRST.name, proj / CLEAR_SECOND.name
    append_lines(CLEAR_FIRST, first)
    end1, _ = replay_end_status(first)
    wait_for_snapshot(s, end1["session_id"], end1)
    assert s.get("/api/v1/status")["followed"] == end1["session_id"]

    events = _sse_events(s)
    append_lines(CLEAR_SECOND, second)  # what /clear writes: a new file in the same project folder
    end2, _ = replay_end_status(second)
    wait_for_snapshot(s, end2["session_id"], end2)
    status = s.get("/api/v1/status")
    assert status["followed"] == end2["session_id"]
    assert [x["session_id"] for x in status["sessions"]] == [end2["session_id"]]
    segs = s.get(f"/api/v1/segments?session={end1['session_id']}")["segments"]
    assert [(p["segment"], p["end_reason"], p["calls"]) for p in segs] == [(0, "rotation", end1["calls"])]
    kinds = wait_for(lambda: _collected(events, {"rotated"}), what="rotated event on SSE")
    assert kinds["rotated"][0] == {"from": end1["session_id"], "to": end2["session_id"],
                                   "project": "-home-user-demo-project"}

    # the hook's rotation request back to the first session switches again
    ok = s.request("POST", "/api/v1/rotate", {"session_id": end1["session_id"], "cwd": "/home/user/demo-project"})
    assert ok == (200, {"ok": True, "following": end1["session_id"]})
    assert s.get("/api/v1/status")["followed"] == end1["session_id"]
    segs = s.get(f"/api/v1/segments?session={end2['session_id']}")["segments"]
    assert [p["end_reason"] for p in segs] == ["rotation"]


def _sse_events(s: Svc):
    """Collect SSE events in a thread; returns the shared list."""
    import threading

    from service.client.api import ApiClient

    got: list = []
    client = ApiClient(s.info)

    def read():
        try:
            for ev in client.events():
                got.append(ev)
        except Exception:
            pass

    threading.Thread(target=read, daemon=True).start()
    wait_for(lambda: any(k == "service" for k, _ in got), what="SSE stream to open")
    return got


def _collected(events: list, kinds: set[str]) -> dict | None:
    out: dict = {}
    for k, v in list(events):
        out.setdefault(k, []).append(v)
    return out if kinds <= set(out) else None


# ---- reminders on the event stream --------------------------------------------------------------------
def test_reminders_and_snapshots_are_published_once(svc, dirs):
    _, claude = dirs
    s = svc().start()
    events = _sse_events(s)
    proj = claude / "projects" / "-p"
    proj.mkdir()
    dst = proj / REMINDERS.name
    append_chunks(REMINDERS.read_bytes(), dst, random.Random(3), max_chunk=200_000)
    end, reminders = replay_end_status(dst)
    wait_for_snapshot(s, end["session_id"], end)
    published = wait_for(lambda: (lambda r: r if len(r) >= len(reminders) else None)(
        [v for k, v in list(events) if k == "reminder"]), what="reminders on SSE")
    assert [(r["segment"], r["lap"]) for r in published] == [(r["segment"], r["lap"]) for r in reminders]
    assert all(r["restart_usd"] > 0 and r["rent_usd"] > 0 for r in published)
    kinds = [(k, v.get("session_id")) for k, v in list(events)]
    first_reminder = kinds.index(("reminder", end["session_id"]))
    assert ("snapshot", end["session_id"]) in kinds[:first_reminder]  # a client knows the session first


def test_the_api_opens_before_recent_sessions_are_read_and_laps_they_held_are_not_announced(svc, dirs):
    _, claude = dirs
    proj = claude / "projects" / "-p"
    proj.mkdir()
    data = REMINDERS.read_bytes()
    sids = [f"0000000{n}-aaaa-4bbb-8ccc-dddddddddddd" for n in range(4)]
    for n, sid in enumerate(sids):  # four recent sessions, oldest first, whose laps were crossed before the start
        dst = proj / f"{sid}.jsonl"
        dst.write_bytes(data.replace(REMINDERS.stem.encode(), sid.encode()))
        os.utime(dst, (time.time() - 100 + n,) * 2)
    s = svc(extra_env={"CTXLAMP_CATCH_UP_PAUSE_S": "0.4"}).start(caught_up=False)
    first = s.get("/api/v1/status")
    assert first["service"]["scan"]["state"] == "catching_up" and first["service"]["scan"]["total"] == 4
    assert len(first["sessions"]) < 4
    events = _sse_events(s)
    # the hook's rotation to the oldest session reads its project first, as a fully read start would have
    ok = s.request("POST", "/api/v1/rotate", {"session_id": sids[0], "cwd": "/p"})
    assert ok == (200, {"ok": True, "following": sids[0]})
    status = wait_for(lambda: (lambda st: st if st["service"]["scan"]["state"] == "idle" else None)(
        s.get("/api/v1/status")), what="the startup reading to end")
    assert status["followed"] == sids[0]
    assert sorted(x["session_id"] for x in status["sessions"]) == sorted(sids[:3])  # the newest was rotated away
    assert all(x["laps"] >= 1 for x in status["sessions"])
    # the stream delivers in its own thread: on a busy machine the rotation's event may not be in yet
    wait_for(lambda: any(k == "rotated" for k, _ in list(events)), what="the rotation's event on the stream")
    kinds = [k for k, _ in list(events)]
    assert "reminder" not in kinds and "rotated" in kinds
    assert s.get(f"/api/v1/reminders?session={sids[1]}")["reminders"]  # recorded all the same


def test_a_first_start_reads_the_history_beside_the_recent_sessions_and_writes_it_after_them(svc, dirs):
    """On a first start the history's first pass starts with the service, beside the recent sessions the loop
    reads (decision 457); what it writes, and its progress, wait until they are read, so a client sees the
    states in order and the store as when the two ran one after the other."""
    home, claude = dirs
    proj = claude / "projects" / "-p"
    proj.mkdir()
    data = REMINDERS.read_bytes()
    recent = [f"0000000{n}-aaaa-4bbb-8ccc-dddddddddddd" for n in range(3)]
    for n, sid in enumerate(recent):
        dst = proj / f"{sid}.jsonl"
        dst.write_bytes(data.replace(REMINDERS.stem.encode(), sid.encode()))
        os.utime(dst, (time.time() - 100 + n,) * 2)
    old = {}
    for n, src in enumerate((COMPACT, CLEAR_FIRST, CLEAR_SECOND, SWITCH)):
        dst = proj / src.name
        shutil.copyfile(src, dst)
        os.utime(dst, (time.time() - 3 * 86400 + n,) * 2)
        old[src.stem] = dst
    s = svc(extra_env={"CTXLAMP_CATCH_UP_PAUSE_S": "0.4"}).start(caught_up=False)
    seen = []
    while True:
        scan = s.get("/api/v1/status")["service"]["scan"]
        archived = {row["session_id"] for row in s.get("/api/v1/segments?limit=100")["segments"]}
        seen.append(scan["state"])
        if scan["state"] == "catching_up":
            assert scan["total"] == len(recent) and scan["done"] <= scan["total"]
            assert not archived & set(old), "the history is written only once the recent sessions are read"
        if scan["state"] == "idle":
            break
        assert len(seen) < 2000, "the first pass did not end"
        time.sleep(0.02)
    order = [state for n, state in enumerate(seen) if n == 0 or seen[n - 1] != state]
    assert order[0] == "catching_up" and order[-1] == "idle" and order.count("catching_up") == 1
    assert set(old) <= archived
    from service.report import forked

    if forked.start_method() == "fork":  # the fork server is started ahead only where the system forks
        log = "\n".join(p.read_text() for p in home.rglob("*.log"))
        assert log.index("history scan started beside the recent sessions") < log.index("caught up: ")


# ---- checkpoints ------------------------------------------------------------------------------------
def test_a_corrupted_newest_checkpoint_falls_back_to_the_one_before(svc, dirs):
    home, claude = dirs
    proj = claude / "projects" / "-p"
    proj.mkdir()
    shutil.copyfile(COMPACT, proj / COMPACT.name)
    for _ in range(2):  # each graceful stop writes a final checkpoint
        s = svc().start()
        assert s.stop() == 0
    names = sorted(p.name for p in (home / "checkpoints").iterdir())
    assert names == ["ledger-1.json", "ledger-2.json"]
    doc = json.loads((home / "checkpoints" / "ledger-2.json").read_text())
    state = doc["sessions"][COMPACT.stem]
    assert state["offset"] == COMPACT.stat().st_size and state["segment"] == 1
    assert state["inode"] == (proj / COMPACT.name).stat().st_ino
    newest = home / "checkpoints" / "ledger-2.json"
    newest.write_bytes(newest.read_bytes()[:100])  # torn by a crash
    s = svc().start()
    ck = s.get("/api/v1/status")["service"]["checkpoint"]
    assert ck == {"loaded": 1, "rejected": ["ledger-2.json"]}
    s.stop()
    names = sorted(p.name for p in (home / "checkpoints").iterdir())
    assert names == ["ledger-1.json", "ledger-2.json", "ledger-3.json"]


def test_an_idle_service_writes_no_checkpoints_and_uses_no_cpu(svc, dirs):
    home, claude = dirs
    proj = claude / "projects" / "-p"
    proj.mkdir()
    shutil.copyfile(COMPACT, proj / COMPACT.name)
    s = svc().start()
    s.get("/api/v1/status")
    pid = s.proc.pid

    def cpu_ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    time.sleep(1.0)  # let startup settle
    before = cpu_ticks()
    time.sleep(3.0)
    used = cpu_ticks() - before
    assert used <= 3, f"idle service used {used} clock ticks in 3 s"
    assert not list((home / "checkpoints").iterdir())  # nothing changed since start: no interval write yet
    s.stop()


# ---- kill -9 during appends -----------------------------------------------------------------------------
def _kill_9_loop(svc, dirs, kills: int, seed: int) -> None:
    home, claude = dirs
    proj = claude / "projects" / "-p"
    proj.mkdir()
    dst = proj / REMINDERS.name
    data = REMINDERS.read_bytes()
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), kills)) + [len(data)]
    pos = 0
    for cut in cuts:
        s = svc().start()
        if cut < len(data) and rng.random() < 0.2:
            s.stop(signal.SIGKILL)  # killed while replaying from byte zero
            s = svc().start()
        append_chunks(data[pos:cut], dst, rng, max_chunk=60_000)
        pos = cut
        if cut < len(data):
            time.sleep(rng.random() * 0.2)
            s.stop(signal.SIGKILL)
    end, reminders = replay_end_status(dst)
    wait_for_snapshot(s, end["session_id"], end)
    got = s.get(f"/api/v1/reminders?session={end['session_id']}")["reminders"]
    assert [(r["segment"], r["lap"], r["call"]) for r in got] == \
        [(r["segment"], r["lap"], r["call"]) for r in reminders]
    assert len(reminders) >= 2  # the fixture must bring several for the loop to mean something
    assert s.stop() == 0
    con = sqlite3.connect(home / "ctxlamp.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        n = con.execute("SELECT COUNT(*) FROM reminder WHERE session_id = ?", (end["session_id"],)).fetchone()[0]
        assert n == len(reminders)
    finally:
        con.close()


def test_kill_9_during_appends_loses_and_doubles_nothing(svc, dirs):
    _kill_9_loop(svc, dirs, kills=3, seed=11)


@pytest.mark.slow
def test_kill_9_many_times_loses_and_doubles_nothing(svc, dirs):
    _kill_9_loop(svc, dirs, kills=8, seed=29)


def test_the_interval_checkpoint_writes_only_after_changes(svc, dirs):
    home, claude = dirs
    s = svc(extra_env={"CTXLAMP_CHECKPOINT_EVERY_S": "1"}).start()
    proj = claude / "projects" / "-p"
    proj.mkdir()
    append_lines(CLEAR_FIRST, proj / CLEAR_FIRST.name)
    end, _ = replay_end_status(proj / CLEAR_FIRST.name)
    wait_for_snapshot(s, end["session_id"], end)
    ck = home / "checkpoints"
    size = CLEAR_FIRST.stat().st_size

    def newest_at_the_end() -> int | None:
        """The newest finished checkpoint's number once it records the whole file (what the test asserts:
        an atomic write's temporary file, or an interval that fell between two reads, is not that state)."""
        done = _finished_checkpoints(ck)
        if not done:
            return None
        doc = json.loads((ck / f"ledger-{done[-1]}.json").read_text())
        return done[-1] if (doc["sessions"].get(end["session_id"]) or {}).get("offset") == size else None

    n = wait_for(newest_at_the_end, timeout=10, what="an interval checkpoint of the whole file")
    listing = sorted(p.name for p in ck.iterdir())
    assert listing == [f"ledger-{k}.json" for k in _finished_checkpoints(ck)]  # no write under way
    time.sleep(3)  # three intervals with nothing changed: no further write, not even begun
    assert sorted(p.name for p in ck.iterdir()) == listing
    with open(proj / CLEAR_FIRST.name, "ab") as out:  # a change arms the job again
        out.write(b'{"type":"user","message":{"content":"more"},"sessionId":"x"}\n')
    wait_for(lambda: n + 1 in _finished_checkpoints(ck), timeout=10, what="the next checkpoint")


def _finished_checkpoints(folder: Path) -> list[int]:
    """The numbers of the checkpoints written to the end (`ledger-<n>.json`, not a write's temporary file)."""
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := re.fullmatch(r"ledger-(\d+)\.json", p.name)))


# ---- revaluation and settings --------------------------------------------------------------------------
def test_selection_revalues_and_config_persists(svc, dirs):
    home, claude = dirs
    proj = claude / "projects" / "-p"
    proj.mkdir()
    shutil.copyfile(REMINDERS, proj / REMINDERS.name)
    s = svc().start()
    sid = REMINDERS.stem
    before = s.session(sid)
    rows = s.get(f"/api/v1/sessions/{sid}/series")["paths"]
    biggest = max((r for r in rows if r["selected"]), key=lambda r: r["tokens"])
    status, after = s.request("POST", f"/api/v1/sessions/{sid}/selection", {"exclude": [biggest["path"]]})
    assert status == 200
    assert after["B_default"] == before["B_default"] - biggest["tokens"]
    assert after["laps"] == before["laps"]  # a revaluation withdraws nothing
    row = next(r for r in s.get(f"/api/v1/sessions/{sid}/series")["paths"] if r["path"] == biggest["path"])
    assert (row["selected"], row["why"]) == (False, "excluded")
    status, back = s.request("POST", f"/api/v1/sessions/{sid}/selection", {"include": [biggest["path"]]})
    assert status == 200 and back["B_default"] == before["B_default"]
    assert s.request("POST", "/api/v1/sessions/nope/selection", {"exclude": []})[0] == 404

    status, cfg = s.request("POST", "/api/v1/config", {"engine": {"g_floor": 900}, "sessions": {"live_hours": 48}})
    assert status == 200 and cfg["engine"]["g_floor"] == 900
    assert s.get("/api/v1/config")["sessions"]["live_hours"] == 48
    assert s.session(sid)["g"] >= 900  # applied to the live session at once
    assert s.request("POST", "/api/v1/config", {"engine": {"g_floor": "x"}})[0] == 400
    text = (home / "config.toml").read_text()
    assert "\ng_floor = 900\n" in text and "# eps_amber = 0.05" in text
    status, excluded = s.request("POST", f"/api/v1/sessions/{sid}/selection", {"exclude": [biggest["path"]]})
    assert status == 200
    s.stop()
    again = svc().start()
    assert again.get("/api/v1/config")["engine"]["g_floor"] == 900
    # the unticked path stays unticked across a restart (kept in the ledger checkpoint)
    assert again.session(sid)["B_default"] == excluded["B_default"]
    again.stop()
    # stopped before it read the session again: its last checkpoint still carries the unticked path
    early = svc(extra_env={"CTXLAMP_CATCH_UP_PAUSE_S": "30"}).start(caught_up=False)
    assert early.get("/api/v1/status")["service"]["scan"]["state"] == "catching_up"
    assert early.stop() == 0
    assert svc().start().session(sid)["B_default"] == excluded["B_default"]


def test_polling_fallback_says_why_and_still_follows_appends(svc, dirs):
    _, claude = dirs
    s = svc(extra_env={"CTXLAMP_POLLING": "1"}).start()
    block = s.get("/api/v1/status")["service"]
    assert block["observer"] == "polling" and block["observer_reason"]
    assert "polling" in s.stderr()
    proj = claude / "projects" / "-p"
    proj.mkdir()
    dst = proj / CLEAR_FIRST.name
    append_lines(CLEAR_FIRST, dst)
    end, _ = replay_end_status(dst)
    wait_for_snapshot(s, end["session_id"], end)


# ---- a defect stops measurement ------------------------------------------------------------------------
DEFECT_RUNNER = """
import sys
import service.engine_setup.engines as m
real = m.new_engine
def new_engine(*a, **k):
    engine = real(*a, **k)
    feed = engine.feed_line
    def feed_line(line):
        if b"DEFECT-TRIGGER" in line:
            raise RuntimeError("an engine bug (test)")
        return feed(line)
    engine.feed_line = feed_line
    return engine
m.new_engine = new_engine
from service.cli import main
sys.exit(main(["serve"]))
"""


def _discovery_of(home: Path, pid: int) -> dict | None:
    """api.json once the service with `pid` wrote it (its port answers by then), else None."""
    try:
        info = json.loads((home / "api.json").read_text())
    except (OSError, ValueError):
        return None
    return info if info.get("pid") == pid else None


def test_an_engine_defect_stops_measurement_archives_nothing_and_exits_non_zero(dirs):
    home, claude = dirs
    s = Svc(home, claude)
    s.err = open(s.err_path, "wb")
    # the defect is put into the engine's Python methods, which the compiled build does not have: what is
    # tested is the service's answer to an engine that raises, the same for either build
    s.proc = subprocess.Popen([sys.executable, "-c", DEFECT_RUNNER], env={**s.env, "CTXLAMP_ENGINE": "pure"}, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=s.err)
    try:
        s.info = wait_for(lambda: _discovery_of(home, s.proc.pid), what="api.json of this service")
        proj = claude / "projects" / "-p"
        proj.mkdir()
        dst = proj / COMPACT.name
        append_lines(COMPACT, dst)
        wait_for(lambda: (s.session(COMPACT.stem) or {}).get("calls") == 9, what="ingest")  # the scenario's 9 main calls
        with open(dst, "ab") as out:
            out.write(b'{"type":"user","message":{"content":"DEFECT-TRIGGER"}}\n')
        rc = s.proc.wait(timeout=20)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
        s.err.close()
    assert rc == 1
    err = s.stderr()
    assert "measurement stopped (defect)" in err and "an engine bug (test)" in err
    assert "an engine bug (test)" in (home / "service.log").read_text()
    assert not (home / "api.json").exists()
    assert not list((home / "checkpoints").iterdir())  # no checkpoint of a ledger a defect touched
    con = sqlite3.connect(home / "ctxlamp.db")
    try:  # the compaction's closed segment was archived when it happened; the open one never is
        rows = con.execute("SELECT segment, end_reason FROM segment_profile").fetchall()
    finally:
        con.close()
    assert rows == [(0, "compact")]
    assert dst.read_bytes().startswith(COMPACT.read_bytes())  # the transcript is never touched


def test_inotify_out_of_watches_falls_back_to_polling_and_says_why_once(tmp_path, monkeypatch, capsys):
    import errno

    inotify = pytest.importorskip("watchdog.observers.inotify", reason="no inotify observer here", exc_type=ImportError)

    from service.ingest.watch import Watcher

    def no_watches(self):
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(inotify.InotifyObserver, "start", no_watches)
    seen = []
    w = Watcher(tmp_path, lambda p, created: seen.append((p.name, created)))
    w.start()
    try:
        assert w.kind == "polling" and "max_user_watches" in w.reason
        assert capsys.readouterr().err.count("max_user_watches") == 1
        (tmp_path / "a.jsonl").write_text("{}\n")
        wait_for(lambda: ("a.jsonl", True) in seen, timeout=10, what="polling observer to see the file")
    finally:
        w.stop()


# ---- history older than the live window --------------------------------------------------------------
def _one_old_one_live(claude: Path) -> None:
    """COMPACT's transcript a week old (for the history scan) and CLEAR_FIRST's recent (a live session)."""
    proj = claude / "projects" / "-p"
    proj.mkdir()
    shutil.copyfile(COMPACT, proj / COMPACT.name)
    shutil.copyfile(CLEAR_FIRST, proj / CLEAR_FIRST.name)
    week_ago = time.time() - 7 * 86400
    os.utime(proj / COMPACT.name, (week_ago, week_ago))


def test_old_transcripts_are_scanned_into_history_not_made_live(svc, dirs):
    _, claude = dirs
    _one_old_one_live(claude)
    s = svc().start()
    status = s.get("/api/v1/status")
    assert [x["session_id"] for x in status["sessions"]] == [CLEAR_FIRST.stem]  # live ones are ready first
    wait_for(lambda: s.get("/api/v1/status")["service"]["scan"]["state"] == "idle", what="history scan")
    scan = s.get("/api/v1/status")["service"]["scan"]
    assert scan["done"] == scan["total"] >= 1
    segs = s.get(f"/api/v1/segments?session={COMPACT.stem}")["segments"]
    assert sorted((p["segment"], p["end_reason"]) for p in segs) == [(0, "compact"), (1, "end")]
    assert COMPACT.stem not in {x["session_id"] for x in s.get("/api/v1/status")["sessions"]}


def test_the_report_is_read_ready_when_the_service_goes_idle(svc, dirs):
    """Decision 202: the first report a user asks for after a start reads no transcript again."""
    from service.report import scan

    home, claude = dirs
    _one_old_one_live(claude)
    s = svc().start()
    wait_for(lambda: s.get("/api/v1/status")["service"]["scan"]["state"] == "idle", what="history scan")
    cache = home / "cache" / "report-scan.json"
    prepared = json.loads(cache.read_bytes())["files"]
    transcripts = sorted(str(p) for p in (claude / "projects").rglob("*.jsonl"))
    assert len(transcripts) == 2
    assert sorted(prepared) == transcripts
    assert all(prepared[p]["fp"] == scan.fingerprint(p) for p in transcripts)
    before = cache.stat().st_mtime_ns
    doc = s.get("/api/v1/report")
    assert doc["spend"]["calls"] > 0 and "restart_savings" in doc
    assert cache.stat().st_mtime_ns == before  # nothing was read again, so nothing was written


def test_status_command_redraws_from_the_event_stream(svc, dirs):
    _, claude = dirs
    s = svc().start()
    view = subprocess.Popen([*CTXLAMP, "status"], env=s.env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        first = view.stdout.readline().decode()
        assert first.startswith("ctxlamp: 0 live sessions (service pid")
        proj = claude / "projects" / "-p"
        proj.mkdir()
        dst = proj / REMINDERS.name
        shutil.copyfile(REMINDERS, dst)
        end, _ = replay_end_status(dst)
        wait_for_snapshot(s, end["session_id"], end)
        from service.client.words import advice, colour_of, session_name

        last = f"at call {end['restart_savings']['first_reminder_call']}"  # the stretch's one notice
        deadline = time.monotonic() + 15
        seen = ""
        while time.monotonic() < deadline and last not in seen:  # earlier redraws may show earlier laps
            seen += view.stdout.readline().decode()
        row = next(line for line in seen.splitlines() if last in line)  # the last reminder is shown
        assert session_name(end) in row and advice(end) in row and f"● {colour_of(end)}" in row
    finally:
        view.terminate()
        view.wait(timeout=10)


def test_an_unusable_database_does_not_stop_measurement(svc, dirs):
    home, claude = dirs
    (home / "ctxlamp.db").mkdir()  # not a file: every open fails
    s = svc().start()
    block = s.get("/api/v1/status")["service"]["db"]
    assert block["ok"] is False and block["error"]
    proj = claude / "projects" / "-p"
    proj.mkdir()
    dst = proj / REMINDERS.name
    append_chunks(REMINDERS.read_bytes(), dst, random.Random(5))
    end, reminders = replay_end_status(dst)
    wait_for_snapshot(s, end["session_id"], end)
    got = s.get(f"/api/v1/reminders?session={end['session_id']}")["reminders"]
    assert [(r["segment"], r["lap"]) for r in got] == [(r["segment"], r["lap"]) for r in reminders]
    assert "database" in s.stderr()  # said once, on stderr


# ---- one followed session, said the same way everywhere ---------------------------------------------
def test_the_live_status_follows_the_session_the_service_follows_not_the_newest_timestamp(svc, dirs):
    """`ctxlamp status` guessed the followed session from the newest entry time after each snapshot, and the
    tray kept the one /status named at connect: after a start, or when an older session grew, the terminal,
    the tray and the status line named different sessions. The service now says which it follows (a
    `followed` event) and both show that one (decision 496)."""
    import threading

    _, claude = dirs
    s = svc().start()
    alpha, beta = claude / "projects" / "-home-user-alpha", claude / "projects" / "-home-user-beta"
    alpha.mkdir()
    beta.mkdir()
    lines = SWITCH.read_bytes().splitlines(keepends=True)
    first = alpha / SWITCH.name
    first.write_bytes(b"".join(lines[:len(lines) // 2]))
    wait_for(lambda: s.get("/api/v1/status")["followed"], what="the first session followed")
    append_lines(COMPACT, beta / COMPACT.name)  # its entries are the newest of the two
    end_b, _ = replay_end_status(beta / COMPACT.name)
    wait_for_snapshot(s, end_b["session_id"], end_b)
    assert s.get("/api/v1/status")["followed"] == end_b["session_id"]

    live = subprocess.Popen([*CTXLAMP, "status"], env=s.env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    frames: list[str] = []
    reader = threading.Thread(target=lambda: frames.extend(iter(live.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(line.startswith("→") for line in frames), what="the live status's first frame")
        with open(first, "ab") as out:  # the person goes back to the older session: it grows
            out.write(b"".join(lines[len(lines) // 2:]))
        end_a, _ = replay_end_status(first)
        wait_for_snapshot(s, end_a["session_id"], end_a)
        assert end_a["updated_at"] < end_b["updated_at"], "the grown session's entries stay the older ones"
        assert s.get("/api/v1/status")["followed"] == end_a["session_id"]
        def arrow_row() -> int | None:
            """Which row of the latest whole frame is marked followed (its rows: newest entries first)."""
            heads = [i for i, line in enumerate(frames) if line.startswith("ctxlamp: ")]
            rows = [line for line in frames[heads[-1]:] if line[2:3] == "●"] if heads else []
            return next((i for i, row in enumerate(rows) if row.startswith("→")), None) if len(rows) == 2 else None

        wait_for(lambda: arrow_row() == 1, what="the live status marking the grown session (the second row)")
    finally:
        live.terminate()
        live.wait(10)
