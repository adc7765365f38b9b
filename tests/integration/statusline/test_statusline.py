"""`ctxlamp statusline` and what the service keeps of it (issue 16).

Pure parts (the input filter, the line, the JSON shortcut, the readings book) are tested
directly; the command runs as Claude Code runs it (a process fed JSON on stdin) against a real
`ctxlamp serve`, a service that is down, and one that never answers.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import transcripts as T
from tests.support.corpus import ROOT
from tests.support.harness import one_session_home

SAMPLE = json.loads((ROOT / "tests" / "fixtures" / "statusline" / "subscriber.json").read_text())
SCRIPT = [sys.executable, "-S", str(ROOT / "service" / "statusline" / "fast.py")]


# ---- the input filter ---------------------------------------------------------------------------


# ---- the line -----------------------------------------------------------------------------------


# ---- JSON through _json alone -------------------------------------------------------------------


# ---- where api.json is -------------------------------------------------------------------------


# ---- the readings book --------------------------------------------------------------------------


# ---- the command, as Claude Code runs it --------------------------------------------------------

def run_line(env, data: bytes | None, *, args=(), timeout=5.0):
    t0 = time.monotonic()
    proc = subprocess.run([*SCRIPT, *args], input=data, env=env, capture_output=True, timeout=timeout, cwd="/")
    return proc, time.monotonic() - t0


@pytest.fixture
def env(tmp_path):
    return one_session_home(tmp_path, 30, NO_COLOR="1")[1]


@pytest.fixture
def service(env):
    from tests.support.servicectl import running_service

    with running_service(env, Path(env["CTXLAMP_HOME"])) as (proc, info):
        yield info


def subscriber_json(five=37.0) -> bytes:
    doc = json.loads(json.dumps(SAMPLE))
    doc["session_id"] = T.SID
    now = time.time()
    doc["rate_limits"]["five_hour"].update(used_percentage=five, resets_at=now + 7200)
    doc["prompt_cache"]["expires_at"] = now + 200
    return json.dumps(doc).encode()


def api(info, method, path, body=None, token=True):
    from service.client.api import ApiClient

    client = ApiClient(dict(info, token=info["token"] if token is True else (token or "")), timeout=10)
    return client.exchange(method, path, body)


def test_line_from_the_running_service_and_limits_in_status(env, service):
    proc, took = run_line(env, subscriber_json())
    assert proc.returncode == 0 and proc.stderr == b""
    text = proc.stdout.decode()
    assert text.count("\n") == 1 and "5h 37%" in text and "cache 3:" in text
    assert text.split()[1] in ("white", "green", "amber", "red")  # the lamp of the known session
    status, body = api(service, "GET", "/api/v1/status")
    five = body["limits"]["five_hour"]
    assert status == 200 and five["used_percentage"] == 37.0 and five["resets_at"].endswith("Z")
    assert body["limits"]["seven_day"]["used_percentage"] == 12.0 and five["seen_at"]
    # one reading gives no pace yet: the run-out is null, named (issue 26; tests/unit/statusline/test_runout.py scripts a series)
    assert five["runs_out_at"] is None and body["limits"]["seven_day"]["runs_out_at"] is None
    status, view = api(service, "GET", f"/api/v1/limits?session={T.SID}")
    assert status == 200 and view["session"]["readings"][0]["five_hour"] == 37.0


def test_the_write_route_takes_the_token(env, service):
    body = json.loads(subscriber_json(50.0))
    for token in (None, "wrong"):
        status, _ = api(service, "POST", "/api/v1/statusline", body, token=token)
        assert status == 401
    status, _ = api(service, "GET", "/api/v1/limits", token=None)
    assert status == 401
    assert api(service, "GET", "/api/v1/status")[1]["limits"]["five_hour"] is None  # nothing was kept


def test_a_client_cannot_grow_the_series_without_bound(env, service):
    from service.limits import book as book_mod

    for i in range(book_mod.PER_SESSION + 60):
        body = {"session_id": f"flood-{i % (book_mod.MAX_SESSIONS + 10)}",
                "rate_limits": {"five_hour": {"used_percentage": i % 100 + i / 1e4}}, "junk": "x" * 1000}
        assert api(service, "POST", "/api/v1/statusline", body)[0] == 200
    view = api(service, "GET", "/api/v1/limits")[1]
    assert len(view["account"]) == book_mod.PER_SESSION + 60  # under the account bound, each one distinct
    for i in range(book_mod.MAX_SESSIONS + 10):
        readings = api(service, "GET", f"/api/v1/limits?session=flood-{i}")[1]["session"]["readings"]
        assert len(readings) <= book_mod.PER_SESSION
        assert all("junk" not in r for r in readings)


@pytest.mark.parametrize("data", [b"", b"not json", b'{"session_id": 12, "rate_limits": "x"}', b"[1,2]",
                                  b'{"session_id": "unknown-session"}', b'{"a":' + b"1" * (10 << 20) + b"}"],
                         ids=["empty", "not-json", "wrong-types", "array", "unknown-session", "10MB"])
def test_bad_input_still_prints_a_line_fast(env, service, data):
    proc, took = run_line(env, data)
    assert proc.returncode == 0 and proc.stderr == b"" and took < 1.5
    text = proc.stdout.decode()
    assert text.count("\n") == 1 and "ctxlamp" in text and "Traceback" not in text


def test_service_down_prints_what_the_input_allows(env):
    proc, took = run_line(env, subscriber_json())
    assert proc.returncode == 0 and proc.stderr == b"" and took < 1.0
    assert proc.stdout.decode().startswith("◌ ctxlamp off · 5h 37%")
    proc, _ = run_line(env, None)
    assert proc.returncode == 0 and proc.stdout.decode() == "◌ ctxlamp off\n"


def test_a_service_that_never_answers_gives_the_last_line_within_the_bound(env, tmp_path):
    home = Path(env["CTXLAMP_HOME"])
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # accepts connections (the backlog) and never answers
    try:
        (home / "api.json").write_text(json.dumps({"port": silent.getsockname()[1], "token": "t", "pid": 1}))
        state = home / "statusline"
        state.mkdir()
        (state / f"{T.SID}.line").write_text("● green the last line\n")
        proc, took = run_line(env, subscriber_json())
        assert proc.returncode == 0 and took < 1.0
        assert proc.stdout.decode() == "● green the last line\n"
    finally:
        silent.close()


def test_a_run_in_flight_is_never_waited_on(env, service):
    fcntl = pytest.importorskip("fcntl", reason="holds the run's lock as another run would, with flock",
                                exc_type=ImportError)
    run_line(env, subscriber_json())  # leaves the session's last line
    state = Path(env["CTXLAMP_HOME"]) / "statusline"
    last = (state / f"{T.SID}.line").read_text()
    with open(state / f"{T.SID}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a run still talking to the service would
        proc, took = run_line(env, subscriber_json(64.0))
    assert proc.returncode == 0 and proc.stdout.decode() == last + "\n" and took < 1.0
    assert "64" not in proc.stdout.decode()


def test_fifty_runs_at_once_end_fast_and_leave_nothing(env, service):
    """Claude Code fires a run per update without waiting: 50 at once must not pile up."""
    data = subscriber_json()
    t0 = time.monotonic()
    procs = []
    for _ in range(50):  # as Claude Code does: spawn, write the JSON, close; next update, next run
        p = subprocess.Popen(SCRIPT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, cwd="/")
        p.stdin.write(data)
        p.stdin.close()
        procs.append(p)
    cpu = []
    outputs = []
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu.append(usage.ru_utime + usage.ru_stime)
        outputs.append(p.stdout.read().decode())
        assert p.stderr.read() == b""
    wall = time.monotonic() - t0
    alive = [p.pid for p in procs if os.path.exists(f"/proc/{p.pid}")]
    print(f"50 runs at once: {wall:.2f} s wall, CPU per run mean {1000 * sum(cpu) / 50:.1f} ms, "
          f"max {1000 * max(cpu):.1f} ms")
    assert all(p.returncode == 0 for p in procs) and not alive
    assert all(o.count("\n") == 1 and "5h 37%" in o for o in outputs)
    assert max(cpu) < 0.5 and sum(cpu) / 50 < 0.15  # no run spins; each stays a small start-up's worth
    assert wall < 10  # two shared cores; each run alone is bounded at 1 s


def test_the_users_own_status_line_runs_beside_ours(env, tmp_path):
    script = tmp_path / "theirs.sh"
    script.write_text("#!/bin/sh\nprintf 'theirs:%s' \"$(cat | head -c 14)\"\n")
    script.chmod(0o755)
    proc, _ = run_line(env, subscriber_json(), args=("--wrap", str(script)))
    assert proc.returncode == 0 and proc.stdout.decode().rstrip("\n").endswith('theirs:{"session_id":')
    slow = "sleep 5; echo never"
    proc, took = run_line(env, subscriber_json(), args=("--wrap", slow))
    assert proc.returncode == 0 and took < 1.2 and "never" not in proc.stdout.decode()


# ---- install / uninstall ------------------------------------------------------------------------

def ctxlamp(args, env):
    return subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def claude_env(tmp_path):
    config = tmp_path / "cfg"
    config.mkdir()
    return dict(os.environ, HOME=str(tmp_path), CLAUDE_CONFIG_DIR=str(config)), config


def test_install_sets_our_status_line_and_uninstall_takes_it_out(claude_env):
    env, config = claude_env
    (config / "settings.json").write_text(json.dumps({"model": "opus"}))
    assert ctxlamp(["install"], env).returncode == 0
    entry = json.loads((config / "settings.json").read_text())["statusLine"]
    assert entry["type"] == "command" and "service/statusline/fast.py" in entry["command"]
    run = subprocess.run(entry["command"], shell=True, input=b"{}", capture_output=True, timeout=5, cwd="/",
                         env=dict(env, CTXLAMP_HOME=str(config / "nothing")))
    assert run.returncode == 0 and b"ctxlamp" in run.stdout and run.stderr == b""
    assert ctxlamp(["uninstall"], env).returncode == 0
    assert json.loads((config / "settings.json").read_text()) == {"model": "opus"}


def test_install_keeps_the_users_status_line_and_uninstall_restores_it_exactly(claude_env):
    env, config = claude_env
    mine = {"statusLine": {"type": "command", "command": "bash ~/.claude/my line.sh 'x'", "padding": 2}, "a": 1}
    (config / "settings.json").write_text(json.dumps(mine))
    dry = ctxlamp(["install", "--dry-run"], env)
    assert "your own `bash ~/.claude/my line.sh 'x'` stays" in dry.stdout
    assert json.loads((config / "settings.json").read_text()) == mine
    assert ctxlamp(["install"], env).returncode == 0
    assert ctxlamp(["install"], env).stdout.count("already in") == 2  # twice changes nothing
    entry = json.loads((config / "settings.json").read_text())["statusLine"]
    assert list(entry) == ["type", "command", "padding"] and entry["padding"] == 2
    assert "--wrap" in entry["command"]
    assert ctxlamp(["uninstall"], env).returncode == 0
    after = json.loads((config / "settings.json").read_text())
    assert after == mine and list(after["statusLine"]) == list(mine["statusLine"])


def test_a_status_line_of_another_kind_is_left_alone(claude_env):
    env, config = claude_env
    other = {"statusLine": {"type": "static", "text": "hello"}}
    (config / "settings.json").write_text(json.dumps(other))
    assert ctxlamp(["install"], env).returncode == 0
    assert json.loads((config / "settings.json").read_text())["statusLine"] == other["statusLine"]
    assert ctxlamp(["uninstall"], env).returncode == 0
    assert json.loads((config / "settings.json").read_text()) == other


def test_the_status_lines_cost_books_what_was_not_written_where_no_cost_state_is(env, service):
    status, doc = api(service, "GET", "/api/v1/report")
    assert status == 200, doc  # a report asked for during the first pass (it once failed saving the cache)
    ours = doc["spend"]["by_session"][T.SID]["usd"]
    body = json.loads(subscriber_json())
    body["cost"]["total_cost_usd"] = ours + 0.5
    assert api(service, "POST", "/api/v1/statusline", body)[0] == 200
    spend = api(service, "GET", "/api/v1/report")[1]["spend"]
    booked = spend["unwritten"]["statusline"]
    assert booked["label"] == "measured" and booked["usd"] == pytest.approx(0.5, abs=1e-6)
    # the headline counts it, as a labelled part (issue 26)
    assert spend["billed_usd"] == pytest.approx(spend["total_usd"] + 0.5, abs=1e-6)
    assert spend["billed"]["unwritten_statusline_usd"] == pytest.approx(0.5, abs=1e-6)
    assert spend["billed"]["by_session"][T.SID] == pytest.approx(ours + 0.5, abs=1e-6)
    assert booked["by_session"][T.SID]["claude_code_usd"] == pytest.approx(ours + 0.5)
    body["cost"]["total_cost_usd"] = ours - 0.1  # never negative: booked 0, and said
    api(service, "POST", "/api/v1/statusline", body)
    row = api(service, "GET", "/api/v1/report")[1]["spend"]["unwritten"]["statusline"]["by_session"][T.SID]
    assert row["usd"] == 0 and row["would_be_negative_usd"] == pytest.approx(-0.1)
    dated = api(service, "GET", "/api/v1/report?since=2026-11-01")[1]["spend"]["unwritten"]["statusline"]
    assert dated["by_session"] == {}  # a cumulative figure: whole history only


def test_the_event_stream_sends_limits_on_connect_and_when_they_change(env, service):
    import queue
    import threading

    from service.client.api import ApiClient

    got: queue.Queue = queue.Queue()

    def listen():
        try:
            for event, data in ApiClient(service, timeout=10).events():
                if event == "limits":
                    got.put(data)
        except Exception:  # the stream ends with the service
            pass

    threading.Thread(target=listen, daemon=True).start()
    first = got.get(timeout=10)
    assert first == {"five_hour": None, "seven_day": None, "spend_limit": None}
    assert api(service, "POST", "/api/v1/statusline", json.loads(subscriber_json(41.0)))[0] == 200
    changed = got.get(timeout=10)
    assert changed["five_hour"]["used_percentage"] == 41.0 and changed["five_hour"]["resets_at"].endswith("Z")
    api(service, "POST", "/api/v1/statusline", json.loads(subscriber_json(41.0)))  # the same: no event
    with pytest.raises(queue.Empty):
        got.get(timeout=1.0)


# ---- the cold cache (issue 47) -------------------------------------------------------------------

def cold_json(warm: bool | None = None) -> bytes:
    """Claude Code's status-line input for the session after its cache expired (its own prompt_cache)."""
    doc = json.loads(subscriber_json())
    now = time.time()
    doc["prompt_cache"].update(expires_at=now - 30, recache_tokens_if_cold=123_000)
    if warm is not None:
        doc["prompt_cache"]["warm"] = warm
    return json.dumps(doc).encode()


def test_on_a_cold_cache_the_line_prices_the_rewrite_and_the_fresh_start_and_names_the_restart_with_a_handoff(
        env, service):
    from service.client.figures import usd
    from tests.support.harness import wait_for

    snap = next(s for s in api(service, "GET", "/api/v1/status")[1]["sessions"] if s["session_id"] == T.SID)
    cache = snap["cache"]
    assert 0 < cache["fresh_start_usd"] < cache["cold_rewrite_usd"]
    proc, _ = run_line(env, cold_json())
    assert proc.returncode == 0
    text = proc.stdout.decode().strip()
    # the move the cache notice names (the engine's break_move, priced by its advice for a cold cache)
    cold = cache["cold_advice"]
    assert cache["break_move"] == "restart"
    assert text.endswith(f"cache cold: next msg rewrites {usd(cache['cold_rewrite_usd'])} · restart saves "
                         f"~{usd(cold['continue_usd'] - cold['restart_usd'])}/{round(cold['horizon_calls'])} calls")
    # the session saves a handoff and answers once more; Claude Code then says its cache went cold
    status, saved = api(service, "POST", "/api/v1/handoffs", {"task": "go on", "body": "notes", "project": T.CWD,
                                                              "session_id": T.SID})
    assert status == 200 and saved["token"]
    transcript = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-user-proj" / f"{T.SID}.jsonl"
    answer = T.call("after-handoff", 0, inn=3, cr=snap["totalStock"], out=40)
    answer["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    with transcript.open("ab") as fh:
        fh.write(T.to_bytes([answer]))
    wait_for(lambda: next(s for s in api(service, "GET", "/api/v1/status")[1]["sessions"]
                          if s["session_id"] == T.SID)["calls"] > snap["calls"], what="the answer read")
    proc, _ = run_line(env, cold_json(warm=False))
    assert "· restart w/ handoff saves ~$" in proc.stdout.decode()


def test_the_service_keeps_the_sessions_misses_by_cause_and_the_report_and_session_view_say_them(env, service):
    from service.client.figures import usd
    from service.client.words import misses_sentence

    doc = json.loads(subscriber_json())
    doc["prompt_cache"].update(requests=40, misses=3, miss_recache_tokens=380_000,
                               miss_causes={"ttl_expired_5m": 2, "model_changed": 1, "Bad Cause!": 7},
                               last_miss_cause={"causes": ["model_changed"]})
    assert run_line(env, json.dumps(doc).encode())[0].returncode == 0
    snap = next(s for s in api(service, "GET", "/api/v1/status")[1]["sessions"] if s["session_id"] == T.SID)
    per_token = snap["cache"]["cold_rewrite_usd"] / snap["cache"]["cold_rewrite_tokens"]
    view = api(service, "GET", f"/api/v1/limits?session={T.SID}")[1]["session"]["cache_misses"]
    assert view["misses"] == 3 and view["miss_causes"] == {"ttl_expired_5m": 2, "model_changed": 1}
    assert view["rewrote_usd"] == pytest.approx(380_000 * per_token, abs=1e-6) and view["rewrote_label"] == "estimated"
    assert misses_sentence(view) == (f"3 cache misses: 2 after a break past 5 minutes, 1 model switch; they rewrote "
                                     f"{usd(view['rewrote_usd'])}.")
    report = api(service, "GET", "/api/v1/report")[1]["cache_misses"]
    assert report["misses"] == 3 and report["by_cause"] == {"model_changed": 1, "ttl_expired_5m": 2}
    assert report["by_session"][T.SID]["misses"] == 3
