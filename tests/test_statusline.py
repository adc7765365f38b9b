"""`ctxlamp statusline` and what the service keeps of it (issue 16).

Pure parts (the input filter, the line, the JSON shortcut, the readings book) are tested
directly; the command runs as Claude Code runs it (a process fed JSON on stdin) against a real
`ctxlamp serve`, a service that is down, and one that never answers.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from service.statusline import fastjson, line, reading, where
from service.statusline.book import Book
from tests.support import transcripts as T
from tests.support.corpus import ROOT

SAMPLE = json.loads((ROOT / "tests" / "fixtures" / "statusline" / "subscriber.json").read_text())
SCRIPT = [sys.executable, "-S", str(ROOT / "service" / "statusline" / "fast.py")]
NOW = 1795000000.0


# ---- the input filter ---------------------------------------------------------------------------

def test_recorded_subscriber_json_gives_its_limits_cost_context_and_cache():
    r = reading.parse(SAMPLE)
    assert r["session_id"] == SAMPLE["session_id"]
    assert r["rate_limits"] == {"five_hour": {"used_percentage": 37.0, "resets_at": 1795010400.0},
                                "seven_day": {"used_percentage": 12.0, "resets_at": 1795400000.0},
                                "spend_limit": {"used_percentage": 4.5, "resets_at": 1797000000.0}}
    assert r["cost"]["total_cost_usd"] == 1.8342
    assert r["context_window"]["used_percentage"] == 42
    assert r["prompt_cache"] == {"ttl": 300, "requests": 14, "misses": 1, "hit_ratio": 0.93,
                                 "expires_at": 1795000300.0, "warm": True}
    assert "output_style" not in r and "workspace" not in r  # unknown or unused fields are dropped


@pytest.mark.parametrize("bad", [None, [], "x", 3, {"session_id": 5}, {"session_id": "../../etc/passwd"},
                                 {"rate_limits": {"five_hour": {"used_percentage": "37"}}},
                                 {"rate_limits": {"five_hour": {"used_percentage": float("nan")}}},
                                 {"rate_limits": [1, 2]}, {"cost": {"total_cost_usd": True}},
                                 {"prompt_cache": {"expires_at": "soon", "warm": "yes"}}])
def test_wrong_types_are_dropped_not_fatal(bad):
    r = reading.parse(bad)
    assert "session_id" not in r and "rate_limits" not in r and "cost" not in r and "prompt_cache" not in r


def test_resets_at_in_milliseconds_or_iso_reads_as_epoch_seconds():
    ms = reading.parse({"rate_limits": {"five_hour": {"used_percentage": 1, "resets_at": 1795010400000}}})
    iso = reading.parse({"rate_limits": {"five_hour": {"used_percentage": 1, "resets_at": "2026-11-18T09:20:00Z"}}})
    assert ms["rate_limits"]["five_hour"]["resets_at"] == 1795010400.0
    assert iso["rate_limits"]["five_hour"]["resets_at"] == 1794993600.0


# ---- the line -----------------------------------------------------------------------------------

def facts(**over):
    base = {"service": "up", "session": {"lamp": {"state": "good", "colour": "green"}, "dhat": 4.2,
                                          "bill_cycle_usd": 0.31},
            "limits": reading.parse(SAMPLE)["rate_limits"], "turn": None, "cache_expires_at": NOW + 192,
            "context_pct": 42}
    base.update(over)
    return base


def test_line_reads_at_a_glance():
    text = line.render(facts(), color=False, now=NOW)
    assert text.startswith("● green 5 calls to sweet spot · rent $0.310 · 5h 37% resets ")
    assert "week 12% resets " in text and "spend 4% resets" in text and text.endswith("cache 3:12")


def test_states_in_words_and_colours():
    red = facts(session={"lamp": {"state": "critical", "colour": "red"}, "dhat": -9})
    assert "restart pays" in line.render(red, color=False, now=NOW)
    assert "\033[31m● red\033[0m" in line.render(red, color=True, now=NOW)
    past = facts(session={"lamp": {"state": "warning", "colour": "amber"}, "dhat": -1.2})
    assert "2 calls past sweet spot" in line.render(past, color=False, now=NOW)
    assert line.render(facts(session=None, service="down"), color=False, now=NOW).startswith("◌ ctxlamp off · 5h 37%")
    hot = facts(limits={"five_hour": {"used_percentage": 96.0}})
    assert "\033[31m5h 96%\033[0m" in line.render(hot, color=True, now=NOW)


def test_cache_expired_and_turn_share():
    text = line.render(facts(cache_expires_at=NOW - 5, turn={"delta_pct": 1.25, "label": "upper bound"}),
                       color=False, now=NOW)
    assert "last turn ≤1.2% of 5h" in text and text.endswith("cache cold")


def test_template_picks_orders_and_drops_empty_pieces():
    f = facts(session=None, service="down", limits={}, cache_expires_at=None)
    assert line.render(f, "{cache} | {limits} | {lamp}", color=False, now=NOW) == "◌ ctxlamp off"
    assert line.render(facts(), "{context} | {lamp}", color=False, now=NOW) == "ctx 42% · ● green"
    with pytest.raises(ValueError):
        line.check_format("{lamp} {nope}")
    assert line.render(facts(), "{nope", color=False, now=NOW) == line.render(facts(), color=False, now=NOW)


def test_config_rejects_an_unknown_part():
    from service import config

    with pytest.raises(config.ConfigError, match="nope"):
        config.merge(config.DEFAULTS, {"statusline": {"format": "{lamp} {nope}"}})
    ok = config.merge(config.DEFAULTS, {"statusline": {"format": "{lamp}|{limits}"}})
    assert ok["statusline"]["format"] == "{lamp}|{limits}"


# ---- JSON through _json alone -------------------------------------------------------------------

JSONS = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=20)


@given(JSONS)
@settings(max_examples=300, deadline=None)
def test_fastjson_matches_json(doc):
    text = json.dumps(doc)
    assert fastjson.loads(text) == json.loads(text)
    assert fastjson.loads(text.encode()) == json.loads(text)
    assert fastjson.dumps(doc) == json.dumps(doc, separators=(",", ":"))


@pytest.mark.parametrize("bad", ["", " ", "{", "[1]x", "x", "{\"a\":}", "[" * 100000, "\ufeff{}"])
def test_fastjson_refuses_what_json_refuses(bad):
    with pytest.raises(ValueError):
        fastjson.loads(bad)


# ---- where api.json is -------------------------------------------------------------------------

@pytest.mark.parametrize("env", [{"CTXLAMP_HOME": "/tmp/x/../ctx"}, {"XDG_DATA_HOME": "/tmp/data"}])
def test_where_agrees_with_service_paths(monkeypatch, env):
    from service.paths import app_paths

    for key in ("CTXLAMP_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert where.runtime_dir() == str(app_paths().runtime)


# ---- the readings book --------------------------------------------------------------------------

def limits_reading(sid, five, resets=NOW + 3600, cost=None):
    body = {"session_id": sid, "rate_limits": {"five_hour": {"used_percentage": five, "resets_at": resets}}}
    if cost is not None:
        body["cost"] = {"total_cost_usd": cost}
    return reading.parse(body)


def test_book_deduplicates_and_reports_latest():
    book = Book()
    assert book.limits() == {"five_hour": None, "seven_day": None, "spend_limit": None}
    assert book.record("s1", limits_reading("s1", 10), turns=1, now=NOW) is True
    assert book.record("s1", limits_reading("s1", 10), turns=1, now=NOW + 5) is False
    assert len(book.session_readings("s1")) == 1 and len(book.account_readings()) == 1
    five = book.limits()["five_hour"]
    assert five["used_percentage"] == 10 and five["resets_at"] == "2026-11-18T12:06:40Z"
    assert five["seen_at"] == "2026-11-18T11:06:45Z"  # seen again: the newer time


def test_book_cannot_grow_without_bound():
    book = Book(per_session=50, account=100, max_sessions=8)
    for i in range(5000):
        sid = f"s{i % 40}"
        book.record(sid, limits_reading(sid, i % 97 + (i / 1e6)), turns=i, now=NOW + i)
    assert len(book.sessions) == 8
    assert all(len(v) <= 50 for v in book.sessions.values())
    assert len(book.account) == 100


def test_turn_costs_measured_upper_bound_and_window_reset():
    book = Book()
    book.record("a", limits_reading("a", 10.0, cost=1.0), turns=1, now=NOW)
    book.record("a", limits_reading("a", 12.5, cost=1.5), turns=2, now=NOW + 60)       # turn 2: 2.5 %
    book.record("b", limits_reading("b", 14.0), turns=7, now=NOW + 90)                  # another session moves it
    book.record("a", limits_reading("a", 15.0, cost=1.9), turns=3, now=NOW + 120)      # turn 3: upper bound
    book.record("a", limits_reading("a", 1.0, NOW + 20000, cost=2.0), turns=4, now=NOW + 180)  # new window
    turns = book.turn_costs("a")
    assert [(t["turn"], t["label"]) for t in turns] == [(2, "measured"), (3, "upper bound"), (4, "window reset")]
    assert turns[0]["delta_pct"] == 2.5 and math.isclose(turns[0]["cost_usd"], 0.5)
    assert turns[1]["delta_pct"] == 2.5 and turns[2]["delta_pct"] is None
    assert book.pct_per_usd() == pytest.approx(5.0)  # 2.5 % for $0.50, measured turns only


def test_book_saves_and_loads(tmp_path):
    path = tmp_path / "statusline.json"
    book = Book(path)
    book.record("a", limits_reading("a", 20.0), turns=1, now=NOW)
    book.save()
    again = Book(path)
    assert again.limits()["five_hour"]["used_percentage"] == 20.0
    assert again.session_readings("a")[0]["five_hour"] == 20.0
    path.write_text("{broken")
    assert Book(path).limits()["five_hour"] is None


# ---- the command, as Claude Code runs it --------------------------------------------------------

def run_line(env, data: bytes | None, *, args=(), timeout=5.0):
    t0 = time.monotonic()
    proc = subprocess.run([*SCRIPT, *args], input=data, env=env, capture_output=True, timeout=timeout, cwd="/")
    return proc, time.monotonic() - t0


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "ctx"
    claude = tmp_path / "claude"
    folder = claude / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    home.mkdir()
    (folder / f"{T.SID}.jsonl").write_bytes(T.to_bytes(T.growing_session(30)))
    out = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
    out.update(CTXLAMP_HOME=str(home), CLAUDE_CONFIG_DIR=str(claude), NO_COLOR="1")
    return out


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
    from service.api.client import ApiClient

    client = ApiClient(dict(info, token=info["token"] if token is True else (token or "")), timeout=10)
    return client.request(method, path, body)


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
    from service.statusline import book as book_mod

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
    ours = api(service, "GET", "/api/v1/report")[1]["spend"]["by_session"][T.SID]["usd"]
    body = json.loads(subscriber_json())
    body["cost"]["total_cost_usd"] = ours + 0.5
    assert api(service, "POST", "/api/v1/statusline", body)[0] == 200
    booked = api(service, "GET", "/api/v1/report")[1]["spend"]["unwritten"]["statusline"]
    assert booked["label"] == "measured" and booked["usd"] == pytest.approx(0.5, abs=1e-6)
    assert booked["by_session"][T.SID]["claude_code_usd"] == pytest.approx(ours + 0.5)
    body["cost"]["total_cost_usd"] = ours - 0.1  # never negative: booked 0, and said
    api(service, "POST", "/api/v1/statusline", body)
    row = api(service, "GET", "/api/v1/report")[1]["spend"]["unwritten"]["statusline"]["by_session"][T.SID]
    assert row["usd"] == 0 and row["would_be_negative_usd"] == pytest.approx(-0.1)
    dated = api(service, "GET", "/api/v1/report?since=2026-11-01")[1]["spend"]["unwritten"]["statusline"]
    assert dated["by_session"] == {}  # a cumulative figure: whole history only


def test_recorded_api_key_json_of_the_real_cli_parses():
    recorded = json.loads((ROOT / "tests" / "fixtures" / "statusline" / "apikey-2.1.328.json").read_text())
    r = reading.parse(recorded)
    assert r["session_id"] == recorded["session_id"] and "rate_limits" not in r
    assert r["prompt_cache"]["expires_at"] == recorded["prompt_cache"]["expires_at"]
    assert "ttl" not in r["prompt_cache"]  # "5m" in 2.1.328: a text, not the number of seconds: dropped
    assert r["cost"]["total_cost_usd"] == recorded["cost"]["total_cost_usd"]


def test_the_event_stream_sends_limits_on_connect_and_when_they_change(env, service):
    import queue
    import threading

    from service.api.client import ApiClient

    got: queue.Queue = queue.Queue()

    def listen():
        try:
            for event, data in ApiClient(service, timeout=10).events():
                if event == "limits":
                    got.put(data)
        except Exception:  # noqa: BLE001 - the stream ends with the service
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
