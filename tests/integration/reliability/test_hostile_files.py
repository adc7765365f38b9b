"""Hostile files beside a good transcript: nothing stalls, bloats or stops the service, report or replay.

Each hostile file sits in the project folder of one good transcript. A real
`ctxlamp serve` must keep answering /status and SSE, hold its memory, measure
the good session exactly as `ctxlamp replay` does, name what it skipped in
SERVICE.skipped_files, and stop on SIGTERM within a few seconds. `ctxlamp report
--no-service` must finish with the figures it gives without the hostile file.
Both run as root and as an unprivileged user (a normal user, or root without
its file-permission capabilities when no normal user can reach the interpreter).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.engine.lines import OVERLONG, LineSplitter
from service.report.scan import CHUNK
from tests.support import transcripts as T
from tests.support.corpus import ROOT
from tests.support.harness import Api, Events, meaningful, replay
from tests.support.servicectl import running_service

MAX_LINE_MB = 4  # config.toml of these tests: an endless line is dropped once it passes 4 MB
GOOD = f"{T.SID}.jsonl"
STOP_WITHIN_S = 5.0
WATCH_S = 1.5  # how long /status is polled and memory sampled with the hostile file in place


# ---- the bounded line reader --------------------------------------------------------------

@st.composite
def lines_and_chunks(draw):
    lines = draw(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")), max_size=12))
    tail = draw(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"y")))
    data = b"".join(ln + b"\n" for ln in lines) + tail
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    return lines, tail, data, cuts


@settings(max_examples=200, deadline=None)
@given(lines_and_chunks(), st.integers(1, 25))
def test_the_line_bound_skips_exactly_the_long_lines_whatever_the_chunking(sample, bound):
    lines, tail, data, cuts = sample
    want = [OVERLONG if len(ln) > bound else ln for ln in lines if len(ln) > bound or ln.strip()]
    for pieces in ([data], [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]):
        sp = LineSplitter(bound)
        got = [ln for p in pieces for ln in sp.feed(p)]
        assert got == want
        assert sp.long_lines == sum(len(ln) > bound for ln in lines)
        assert sp.pending == len(tail)  # an unfinished line is held back (or being skipped) whole
        assert len(sp.tail) <= bound
        buf = LineSplitter(bound)
        kept = b"".join(d[:s] for d, s in (buf.feed_buffer(p) for p in pieces))
        assert kept == b"".join(ln + b"\n" for ln in lines if len(ln) <= bound)


def test_an_endless_line_is_never_held_whole():
    sp = LineSplitter(1 << 20)
    zeros = bytes(256 << 10)
    for _ in range(64):  # 16 MB without a newline
        assert sp.feed(zeros) == []
        assert len(sp.tail) <= 1 << 20
    assert sp.pending == 16 << 20 and sp.skipping > 0
    assert sp.feed(b"\n{}\n") == [OVERLONG, b"{}"]  # reading resumes after its newline
    assert sp.long_lines == 1 and sp.pending == 0


def test_a_live_session_whose_file_vanishes_or_becomes_a_folder_mid_read_goes_missing(tmp_path):
    from service.ingest.live import LiveSession
    from service.engine_setup.engines import load_prices, new_engine

    prices = load_prices()
    path = tmp_path / "p" / GOOD
    path.parent.mkdir()
    body = T.to_bytes(T.growing_session(40, reads=40))
    for replace in (lambda: path.unlink(), lambda: (path.unlink(), path.mkdir())):
        path.write_bytes(body)
        sess = LiveSession(path, lambda p: new_engine(str(p), prices, full_events=False))
        first = sess.pump(budget=1)
        assert first.bytes_read and not first.went_missing
        replace()
        gone = sess.pump()
        assert gone.went_missing and sess.missing
        assert (gone.skip_reason or "").startswith("not a regular file") == path.is_dir()
        shutil.rmtree(path) if path.is_dir() else None


# ---- the hostile folder -----------------------------------------------------------------------

def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:  # a regular file of zeros without one newline, costing no disk
        fh.truncate(size)


def _fifos(d: Path) -> None:
    os.mkfifo(d / "x.jsonl")  # recent: a live session to the service
    os.mkfifo(d / "old.jsonl")  # three days old: for the service's history scan
    os.utime(d / "old.jsonl", (time.time() - 3 * 86400,) * 2)


HOSTILE = {
    # name -> (make it in the project folder, the reason SERVICE.skipped_files gives, or None)
    "fifo": (_fifos, "not a regular file (a FIFO)"),
    "symlink_to_dev_zero": (lambda d: (d / "z.jsonl").symlink_to("/dev/zero"), "not a regular file (a character device)"),
    "symlink_loop": (lambda d: ((d / "a.jsonl").symlink_to(d / "b.jsonl"), (d / "b.jsonl").symlink_to(d / "a.jsonl")),
                     "a symlink loop"),
    "folder": (lambda d: (d / "x.jsonl").mkdir(), "not a regular file (a folder)"),
    "endless_line": (lambda d: _sparse(d / "y.jsonl", 200 << 20), None),
    "denied": (lambda d: ((d / "w.jsonl").write_bytes(T.to_bytes(T.growing_session(3, prefix="w"))),
                          (d / "w.jsonl").chmod(0)), "permission denied"),
}


def _long_call_line() -> bytes:
    """A priced assistant line 6 MB long: over the bound, so skipped, and no figure may include it."""
    entry = T.call("too-long", 5, cw5=999_999, out=999_999)
    entry["message"]["content"] = [{"type": "text", "text": "x" * (6 << 20)}]
    return json.dumps(entry).encode() + b"\n"


_TOKENIZER: list[Path] = []  # a tokenizer cache made once, copied into each home (a first start costs 2 s more)


def _tree(base: Path, long_line: bool = False) -> tuple[Path, Path, Path]:
    """(CTXLAMP_HOME, CLAUDE_CONFIG_DIR, project folder) with one good transcript and the test's bound."""
    home, claude = base / "home", base / "claude"
    project = claude / "projects" / "-home-user-proj"
    project.mkdir(parents=True)
    home.mkdir()
    for seed in _TOKENIZER[:1]:
        shutil.copytree(seed, home / seed.name)
    (home / "config.toml").write_text(f"[transcripts]\nmax_line_mb = {MAX_LINE_MB}\n")
    entries = T.growing_session(12, reads=4)
    body = T.to_bytes(entries[:5]) + (_long_call_line() if long_line else b"") + T.to_bytes(entries[5:])
    (project / GOOD).write_bytes(body)
    return home, claude, project


def _env(home: Path, claude: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "LEAN_CTX"))}
    env.update(CTXLAMP_HOME=str(home), CLAUDE_CONFIG_DIR=str(claude), HOME=str(home))
    return env


# ---- as whom ----------------------------------------------------------------------------------------

_NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _can_run(prefix: list[str]) -> bool:
    try:
        return subprocess.run([*prefix, sys.executable, "-c", "import orjson"], cwd=ROOT, capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def unprivileged() -> tuple[list[str], bool]:
    """(command prefix, whether the files must be handed to `nobody`) to run as a normal user."""
    if os.geteuid() != 0:
        return [], False
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot run the service as a normal user")
    if _can_run(_NOBODY):
        return _NOBODY, True
    if _can_run(_NO_DAC):  # the interpreter lives where nobody may go (/root): root without DAC override
        return _NO_DAC, False
    pytest.skip("cannot drop root's file-permission rights here (setpriv failed)")


@pytest.fixture(params=["root", "user"])
def as_whom(request):
    if request.param == "root":
        if os.geteuid() != 0:
            pytest.skip("not root: the root runs need root")
        return [], False
    return request.getfixturevalue("unprivileged")


def _hand_over(base: Path, chown: bool) -> None:
    if not chown:
        return
    import pwd

    nobody = pwd.getpwnam("nobody")
    base.chmod(0o755)
    for root, dirs, files in os.walk(base):
        for name in [*dirs, *files]:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(root, name), nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    os.chown(base, nobody.pw_uid, nobody.pw_gid)


def _vm_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _report(env: dict, prefix: list[str]) -> dict:
    out = subprocess.run([*prefix, sys.executable, "-m", "service.cli", "report", "--json", "--no-service"],
                         cwd=ROOT, env=env, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return json.loads(out.stdout)


def _figures(doc: dict) -> dict:
    """What the report measures (everything but the data-quality block and where it looked)."""
    return {k: v for k, v in doc.items() if k not in ("data_quality", "sources")}


def watch_service(env: dict, home: Path, prefix: list[str]) -> dict:
    """Run the service over the folder: /status and SSE answering, memory, the good session, the stop."""
    with running_service(env, home, prefix=tuple(prefix)) as (proc, info):
        api = Api(info, timeout=5)
        events = Events(info)
        try:
            slowest, rss = 0.0, []
            end = time.monotonic() + WATCH_S
            while time.monotonic() < end:
                t = time.monotonic()
                status = api.status(timeout=3)
                slowest = max(slowest, time.monotonic() - t)
                rss.append(_vm_rss_mb(proc.pid))
                time.sleep(0.1)
            assert events.connected.is_set() and events.of("service"), "SSE did not answer"
            good = next((s for s in status["sessions"] if s["session_id"] == T.SID), None)
        finally:
            events.close()
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            code = None
        stop_s = time.monotonic() - t
    return {"status": status, "good": good, "slowest_status_s": slowest, "rss_mb": rss, "stop_s": stop_s,
            "code": code}


@pytest.fixture(scope="module")
def without_hostile(tmp_path_factory) -> tuple[dict, dict]:
    """The report's figures and the replay's status of the good folder alone."""
    home, claude, project = _tree(tmp_path_factory.mktemp("good-alone"))
    figures, status = _report(_env(home, claude), []), replay(project / GOOD, home)[0]
    if (home / "tiktoken").is_dir():
        _TOKENIZER.append(home / "tiktoken")
    return figures, status


@pytest.fixture
def open_base():
    """A temp folder another user can reach (pytest's own is private to its user)."""
    base = Path(tempfile.mkdtemp(prefix="ctxlamp-hostile-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_file_beside_a_good_transcript(kind, as_whom, open_base, without_hostile):
    prefix, chown = as_whom
    if kind == "denied" and not prefix and os.geteuid() == 0:
        pytest.skip("root reads a file without permissions: permission denied needs a normal user")
    base = open_base
    home, claude, project = _tree(base)
    env = _env(home, claude)
    before, expected = without_hostile

    make, reason = HOSTILE[kind]
    make(project)
    _hand_over(base, chown)
    seen = watch_service(env, home, prefix)
    assert seen["code"] == 0 and seen["stop_s"] < STOP_WITHIN_S, seen["stop_s"]
    assert seen["slowest_status_s"] < 2.0
    # the live reader holds at most three bounds of a line; the report's scan, which the service runs once it
    # has read the folder (decision 202), holds one of its chunks more; neither grows with the line
    bound = 3 * MAX_LINE_MB + (CHUNK >> 20) + 16
    assert max(seen["rss_mb"]) < 400 and seen["rss_mb"][-1] - seen["rss_mb"][0] < bound, seen["rss_mb"]
    assert meaningful(seen["good"]) == meaningful(expected)
    hostile = {p.name for p in project.iterdir() if p.name != GOOD}
    skipped = {Path(r["path"]).name: r["reason"] for r in seen["status"]["service"]["skipped_files"]}
    if reason:
        assert skipped == dict.fromkeys(hostile, reason)
    else:
        assert skipped == {}

    after = _report(env, prefix)
    assert _figures(after) == _figures(before)
    named = {Path(r["path"]).name: r["reason"] for r in after["data_quality"]["skipped_files"]}
    assert named == (dict.fromkeys(hostile, reason) if reason else {})
    if kind == "endless_line":
        assert after["data_quality"]["long_lines"] == 1


def test_a_long_line_inside_a_good_transcript_is_skipped_the_same_way_live_and_in_replay_and_report(
        tmp_path, without_hostile):
    home, claude, project = _tree(tmp_path / "with")
    env = _env(home, claude)
    without = _report(env, [])
    home2, claude2, project2 = _tree(tmp_path / "long", long_line=True)
    env2 = _env(home2, claude2)
    seen = watch_service(env2, home2, [])
    assert seen["code"] == 0 and seen["stop_s"] < STOP_WITHIN_S
    expected, _, _ = replay(project2 / GOOD, home2)
    assert meaningful(seen["good"]) == meaningful(expected)
    assert seen["good"]["skipped_lines"] == expected["skipped_lines"] == 1
    with_long = _report(env2, [])
    assert with_long["data_quality"]["long_lines"] == 1
    assert _figures(with_long)["spend"] == _figures(without)["spend"]


def test_a_transcript_replaced_by_a_folder_or_its_project_folder_removed_while_serving(tmp_path, without_hostile):
    """Before: a session file replaced by a folder was a defect (EISDIR escaped the reader): the service died."""
    home, claude, project = _tree(tmp_path)
    env = _env(home, claude)
    other = project.parent / "-home-user-other"
    other.mkdir()
    (other / "22222222-2222-3333-4444-555555555555.jsonl").write_bytes(T.to_bytes(T.growing_session(3, prefix="o")))
    with running_service(env, home) as (proc, info):
        api = Api(info, timeout=5)
        assert api.session(T.SID)
        (project / GOOD).unlink()
        (project / GOOD).mkdir()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rows = api.status()["service"]["skipped_files"]
            if any(r["reason"] == "not a regular file (a folder)" for r in rows):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the folder was not named: {rows}")
        assert proc.poll() is None
        (project / GOOD).rmdir()  # gone: it leaves the list
        wait_gone = time.monotonic() + 10
        while api.status()["service"]["skipped_files"] and time.monotonic() < wait_gone:
            time.sleep(0.1)
        assert api.status()["service"]["skipped_files"] == []
        shutil.rmtree(other)
        time.sleep(0.5)
        assert proc.poll() is None and api.status()["service"]["pid"] == proc.pid
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0 and time.monotonic() - t < STOP_WITHIN_S


def test_replay_refuses_what_is_not_a_regular_file_at_once(tmp_path):
    os.mkfifo(tmp_path / "x.jsonl")
    (tmp_path / "z.jsonl").symlink_to("/dev/zero")
    for name, why in (("x.jsonl", "a FIFO"), ("z.jsonl", "a character device")):
        out = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(tmp_path / name), "--jsonl"],
                             cwd=ROOT, env=_env(tmp_path, tmp_path), capture_output=True, timeout=30)
        assert out.returncode == 2 and why in out.stderr.decode(), out.stderr


def test_a_big_transcript_being_read_neither_stalls_status_nor_delays_the_stop(tmp_path, without_hostile):
    """Before: 8 MB per turn of the loop under the registry lock (3 s of tokenizing), taken again at once."""
    home, claude, project = _tree(tmp_path)
    T.write_big_tool_session(tmp_path / "v.jsonl", 80)  # about 320 calls, seconds of tokenizing
    with running_service(_env(home, claude), home) as (proc, info):
        api = Api(info, timeout=10)
        (tmp_path / "v.jsonl").rename(project / "v.jsonl")  # a new session of 80 MB appears
        slowest, while_reading = 0.0, 0
        end = time.monotonic() + 10.0
        while while_reading < 10 and time.monotonic() < end:  # status asked while the file is half read
            t = time.monotonic()
            big = next((x for x in api.status()["sessions"] if x.get("transcript", "").endswith("v.jsonl")), None)
            slowest = max(slowest, time.monotonic() - t)
            while_reading += big is not None and 0 < big["calls"] < 300
            time.sleep(0.05)
        assert while_reading == 10 and slowest < 1.0
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0 and time.monotonic() - t < STOP_WITHIN_S

