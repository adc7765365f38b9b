"""What a member shares, without a server: the rows add up to `ctxlamp report`, carry no paths or text,
and the `[team]` settings are validated. (The server side: tests/integration/team/test_team.py.)"""
from __future__ import annotations

from math import fsum

import pytest

from service import config
from service.team import figures, outbox
from service.team.schema import member_url, role_name
from service.team.settings import TeamSettings, resolve
from tests.support.team_history import member_env, write_member


@pytest.fixture
def member(tmp_path, monkeypatch):
    from pathlib import Path

    env = member_env(tmp_path, 3)
    for k in ("CTXLAMP_HOME", "CLAUDE_CONFIG_DIR", "HOME"):
        monkeypatch.setenv(k, env[k])
    for k in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB"):
        monkeypatch.delenv(k, raising=False)
    write_member(Path(env["CTXLAMP_HOME"]), Path(env["CLAUDE_CONFIG_DIR"]), 3, days=4)
    return Path(env["CTXLAMP_HOME"])


def test_the_breakdown_and_the_channel_days_add_up_to_the_report(member):
    summary, results, tally, inputs = figures.report_parts(workers=1)
    sp = summary["spend"]
    groups = tally.breakdown()
    assert fsum(g["main_usd"] + g["subagents_usd"] for g in groups.values()) == pytest.approx(sp["total_usd"], abs=1e-9)
    assert fsum(g["subagents_usd"] for g in groups.values()) == pytest.approx(sp["subagents_usd"], abs=1e-9)
    assert sp["subagents_usd"] > 0 and sp["main_usd"] > 0
    assert sum(g["calls"] for g in groups.values()) == sp["calls"]
    assert sum(g["main_calls"] for g in groups.values()) == summary["pinch"]["requests"]
    for day, _model, project in groups:
        assert project.startswith("/home/member3/") and day.startswith("2026-11-0")
    by_model = {}
    for (_, model, _), g in groups.items():
        if g["calls"] > g["unpriced_calls"]:
            by_model[model] = by_model.get(model, 0.0) + g["main_usd"] + g["subagents_usd"]
    assert by_model == pytest.approx(sp["by_model"], abs=1e-9)
    assert any(g["unpriced_calls"] for g in groups.values())  # the model not in the price table

    days = figures.channel_days(results, tally, inputs, groups)
    assert len(days) == 4
    for block, field in figures.CHANNEL_FIELDS.values():
        got = fsum(figures._field(d[block], field) for d in days.values())
        assert got == pytest.approx(figures._field(summary[block], field), abs=1e-9), (block, field)
    assert summary["pinch"]["saved_usd"] > 0 and summary["edit"]["str_replace_calls"] == 8


@pytest.mark.parametrize("mode", ["hash", "name", "none"])
def test_rows_hold_no_paths_prompts_or_session_ids(member, mode):
    from service.store import Store

    store = Store(member / "ctxlamp.db")
    try:
        rows = figures.local_rows(TeamSettings("postgresql://x/y", "me", projects=mode, key="k" * 64), store,
                                  workers=1)
    finally:
        store.close()
    text = repr(rows)
    assert "/" not in text and "task " not in text and "00000003-0000" not in text
    kinds = {k for k, _ in rows}
    assert kinds == {"day", "channel", "segment"}
    assert sum(p["rent_usd"] for (k, _), p in rows.items() if k == "day") == pytest.approx(
        sum(0.05 * (1 + d + 3) for d in range(4)) * 2)
    days = [p for (k, _), p in rows.items() if k == "day"]
    segments = [p for (k, _), p in rows.items() if k == "segment"]
    assert sum(p["restart_segments_reminded"] for p in days) == 2 * 3  # 2 sessions x the 3 days but day 1
    assert sum(p["restart_missed_usd"] for p in days) == pytest.approx(2 * (0.02 * 2 + 0.003))
    assert sum(p["restart_best_usd"] for p in days) == pytest.approx(sum(p["restart_best_usd"] for p in segments))
    assert sum(p["restart_first_usd"] for p in days) == pytest.approx(
        sum(p["restart_first_usd"] or 0 for p in segments)) and any(p["restart_first_usd"] is None for p in segments)
    assert outbox.changes(rows, []) and not outbox.changes(rows, [
        {"kind": k, "key": key, "digest": outbox.digest(p)} for (k, key), p in rows.items()])


def test_project_labels():
    s = TeamSettings("u", "me", key="secret")
    assert s.project_label("/home/a/proj") == s.project_label("/home/a/proj") != s.project_label("/home/b/proj")
    assert len(s.project_label("/home/a/proj")) == 16
    assert TeamSettings("u", "me", key="other").project_label("/home/a/proj") != s.project_label("/home/a/proj")
    assert TeamSettings("u", "me", projects="name").project_label("/home/a/proj/") == "proj"
    assert TeamSettings("u", "me", projects="none").project_label("/home/a/proj") == ""
    assert s.project_label(None) == ""


def test_team_config_is_validated_and_flags_override_it():
    cfg = config.merge(config.DEFAULTS, {"team": {"url": "postgresql://a@h/db", "member": "m", "push_every": "2m"}})
    s = resolve(cfg)
    assert (s.url, s.member, s.projects, s.push_every_s) == ("postgresql://a@h/db", "m", "hash", 120.0)
    s = resolve(cfg, url="postgresql://b@h/db", member="other")
    assert (s.url, s.member) == ("postgresql://b@h/db", "other")
    assert "@" in resolve(config.DEFAULTS).member  # user@host by default
    for bad in ({"projects": "names"}, {"push_every": "soon"}, {"url": 3}):
        with pytest.raises(config.ConfigError):
            config.merge(config.DEFAULTS, {"team": bad})


def test_role_names_and_member_urls():
    assert role_name("alice@laptop").startswith("ctxlamp_alice_laptop_")
    assert role_name("Alice@Laptop") != role_name("alice@laptop")
    assert len(role_name("x" * 200)) <= 63
    url = member_url("postgresql://owner:pw@[::1]:5433/team?sslmode=require", "ctxlamp_a_1", "p/w@:")
    assert url == "postgresql://ctxlamp_a_1:p%2Fw%40%3A@[::1]:5433/team?sslmode=require"
