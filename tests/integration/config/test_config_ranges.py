"""Every setting has a range (issue 25, attack 5): through the API's check and in config.toml at start."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from service import config
from tests.support.harness import one_session_home

HUGE = int("9" * 400)
OSC52 = "{lamp} \x1b]52;c;cm0gLXJmIH4=\x07"  # writes the clipboard at every prompt
CLEAR = "{lamp}\x1b[2J"

BAD = [
    ({"engine": {"g_floor": 0}}, "engine.g_floor"),
    ({"engine": {"g_floor": -5}}, "engine.g_floor"),
    ({"engine": {"g_floor": HUGE}}, "engine.g_floor"),
    ({"engine": {"g_floor": 10_000_001}}, "engine.g_floor"),
    ({"engine": {"eps_crit": 1e308}}, "engine.eps_crit"),
    ({"engine": {"eps_crit": math.inf}}, "engine.eps_crit"),
    ({"engine": {"eps_amber": math.nan}}, "engine.eps_amber"),
    ({"engine": {"eps_amber": 0}}, "engine.eps_amber"),
    ({"engine": {"eps_crit": 10.5}}, "engine.eps_crit"),
    ({"engine": {"eps_amber": 0.3}}, "engine.eps_amber"),          # not below the default red (0.2)
    ({"engine": {"eps_amber": 0.2, "eps_crit": 0.2}}, "engine.eps_amber"),
    ({"sessions": {"live_hours": 24 * 367}}, "sessions.live_hours"),
    ({"sessions": {"live_hours": HUGE}}, "sessions.live_hours"),
    ({"sessions": {"live_max": -1}}, "sessions.live_max"),
    ({"sessions": {"live_max": 1001}}, "sessions.live_max"),
    ({"sessions": {"live_max": 2.5}}, "sessions.live_max"),      # a count of sessions: no fraction
    ({"sessions": {"live_max": HUGE}}, "sessions.live_max"),
    ({"sessions": {"live_max": True}}, "sessions.live_max"),
    ({"limits": {"notice_pct": 101}}, "limits.notice_pct"),
    ({"limits": {"alert_pct": -1}}, "limits.alert_pct"),
    ({"limits": {"idle_notice_s": 3601}}, "limits.idle_notice_s"),
    ({"limits": {"idle_rewrite_usd": 1e12}}, "limits.idle_rewrite_usd"),
    ({"transcripts": {"max_line_mb": 0}}, "transcripts.max_line_mb"),
    ({"transcripts": {"max_line_mb": 5000}}, "transcripts.max_line_mb"),
    ({"reminders": {"min_gap": "8d"}}, "reminders.min_gap"),
    ({"reminders": {"min_gap": "9" * 400 + "s"}}, "reminders.min_gap"),
    ({"team": {"push_every": "0.5s"}}, "team.push_every"),
    ({"team": {"push_every": "2d"}}, "team.push_every"),
    ({"tokenizer": {"ratio": {"sonnet": HUGE}}}, "tokenizer.ratio.sonnet"),
    ({"tokenizer": {"ratio": {"sonnet": math.inf}}}, "tokenizer.ratio.sonnet"),
    ({"statusline": {"format": OSC52}}, "statusline.format"),
    ({"statusline": {"format": CLEAR}}, "statusline.format"),
    ({"statusline": {"format": "{lamp}\x9b2J"}}, "statusline.format"),  # C1 CSI
    ({"selection": {"exclude": ["**/x\x1b[2J"]}}, "selection.exclude"),
    ({"database": {"url": "x" * 5000}}, "database.url"),
]


@pytest.mark.parametrize("change,key", BAD, ids=[k + ":" + repr(c)[:40] for c, k in BAD])
def test_a_value_out_of_range_is_refused_naming_its_key(change, key):
    with pytest.raises(config.ConfigError) as caught:
        config.merge(config.DEFAULTS, change)
    assert key in str(caught.value)
    assert "\x1b" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize("change", [
    {"engine": {"g_floor": 1}}, {"engine": {"g_floor": 10_000_000}},
    {"engine": {"eps_amber": 0.001, "eps_crit": 10}}, {"engine": {"eps_amber": 9.99, "eps_crit": 10.0}},
    {"sessions": {"live_hours": 0}}, {"sessions": {"live_hours": 24 * 366}},
    {"sessions": {"live_max": 0}}, {"sessions": {"live_max": 1000}}, {"sessions": {"live_max": 8.0}},
    {"limits": {"notice_pct": 0, "alert_pct": 100, "idle_notice_s": 3600, "idle_rewrite_usd": 0}},
    {"transcripts": {"max_line_mb": 0.001}}, {"reminders": {"min_gap": "0s"}}, {"reminders": {"min_gap": "7d"}},
    {"team": {"push_every": "1s"}}, {"team": {"push_every": "1d"}},
    {"statusline": {"format": "{lamp} {rent} | {limits} — ✓"}},
])
def test_the_ends_of_each_range_are_accepted(change):
    merged = config.merge(config.DEFAULTS, change)
    for section, values in change.items():
        for key, value in values.items():
            assert merged[section][key] == value


def test_every_number_has_a_range():
    for section, values in config.DEFAULTS.items():
        for key, default in values.items():
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                assert (section, key) in config.RANGES, f"{section}.{key} has no range"
                assert config.RANGES[(section, key)].holds(default)
    for section, key in (("reminders", "min_gap"), ("team", "push_every")):
        assert config.RANGES[(section, key)].holds(config.parse_duration(config.DEFAULTS[section][key]))


# ---- config.toml at start: named, defaulted, never a crash ---------------------------------------

BAD_TOML = f"""
[engine]
g_floor = 0
eps_crit = 1e308
[sessions]
live_hours = {HUGE}
live_max = 4.5
[limits]
notice_pct = nan
alert_pct = inf
[statusline]
format = "{{lamp}} \\u001b]52;c;cm0gLXJmIH4=\\u0007"
[transcripts]
max_line_mb = 64
[tokenizer]
ratio.sonnet = 1.1
ratio.opus = -3
[nosuch]
x = 1
"""


def test_load_names_each_bad_value_and_keeps_the_good_ones(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(BAD_TOML)
    problems: list[str] = []
    cfg = config.load(path, problems)
    text = "\n".join(problems)
    for key in ("engine.g_floor", "engine.eps_crit", "sessions.live_hours", "sessions.live_max", "limits.notice_pct",
                "limits.alert_pct", "statusline.format", "tokenizer.ratio.opus", "[nosuch]"):
        assert key in text, key
    assert "\x1b" not in text and "\x07" not in text and len(text) < 3000  # the 400 digits are cut short
    d = config.DEFAULTS
    assert cfg["engine"] == d["engine"] and cfg["sessions"] == d["sessions"] and cfg["limits"] == d["limits"]
    assert cfg["statusline"] == d["statusline"]
    assert cfg["transcripts"]["max_line_mb"] == 64 and cfg["tokenizer"]["ratio"] == {"sonnet": 1.1}
    assert path.read_text() == BAD_TOML  # the user's file is never rewritten by reading it


def test_amber_not_below_red_in_the_file_uses_the_defaults_of_both(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[engine]\neps_amber = 0.5\neps_crit = 0.4\n")
    problems: list[str] = []
    cfg = config.load(path, problems)
    assert (cfg["engine"]["eps_amber"], cfg["engine"]["eps_crit"]) == (0.05, 0.2)
    assert any("engine.eps_amber" in p for p in problems)
    path.write_text("[engine]\neps_amber = 0.3\neps_crit = 0.5\n")  # both moved together: both kept
    assert config.load(path)["engine"] == {"g_floor": 500, "eps_amber": 0.3, "eps_crit": 0.5}


@pytest.fixture
def env(tmp_path):
    return one_session_home(tmp_path, 12)[1]


def test_the_service_starts_on_a_bad_config_toml_and_names_each_bad_value(env):
    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    home = Path(env["CTXLAMP_HOME"])
    (home / "config.toml").write_text(BAD_TOML)
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info)
        cfg = client.get("/api/v1/config")
        assert cfg["engine"] == config.DEFAULTS["engine"] and cfg["transcripts"]["max_line_mb"] == 64
        status, raw = client.exchange("GET", "/api/v1/status")
        assert status == 200 and raw["sessions"][0]["lamp"]["colour"] in ("white", "green", "amber", "red")
    log = (home / "service.log").read_text()
    for key in ("engine.g_floor", "engine.eps_crit", "sessions.live_hours", "statusline.format"):
        assert key in log, key
    assert "\x1b" not in log and "Traceback" not in log


def test_the_api_check_refuses_what_would_break_measurement_or_the_terminal(env):
    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    home = Path(env["CTXLAMP_HOME"])
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info)
        for body, key in [({"engine": {"g_floor": 0}}, "engine.g_floor"),
                          ({"engine": {"eps_crit": 1e308}}, "engine.eps_crit"),
                          ({"statusline": {"format": OSC52}}, "statusline.format")]:
            for path in ("/api/v1/config?check=1", "/api/v1/config"):
                status, answer = client.exchange("POST", path, body)
                assert status == 400 and key in answer["error"], (path, answer)
        raw = json.dumps({"engine": {"g_floor": 1}})[:-2] + "9" * 400 + "}}"  # a 400-digit number, as sent
        for path in ("/api/v1/config?check=1", "/api/v1/config"):
            import http.client

            conn = http.client.HTTPConnection("127.0.0.1", info["port"], timeout=10)
            conn.request("POST", path, body=raw.encode(), headers={"Authorization": f"Bearer {info['token']}"})
            resp = conn.getresponse()
            answer = json.loads(resp.read())
            conn.close()
            assert resp.status == 400 and "engine.g_floor" in answer["error"]
        assert client.get("/api/v1/config")["engine"] == config.DEFAULTS["engine"]
        status, text = client.exchange("GET", "/api/v1/status")
        assert status == 200 and isinstance(text, dict)  # still valid JSON: nothing stored
