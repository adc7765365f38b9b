"""Desktop logic without widgets: coalescing, restart policy, SSE parsing, view-models."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.present import fmt
from desktop.platforms import autostart
from desktop.present.channel import channel_csv, channel_view
from desktop.present.curve import curve_view, series_view
from desktop.present.files import file_rows, selection_change
from desktop.present.lamp import lamp_colour, menu_sessions, pick_followed, reminder_message, tooltip_text
from desktop.present.settings import flatten, min_gap_seconds, unflatten
from desktop.present.coalesce import ReminderCoalescer
from service.client.api import read_api_info
from service.client.where import runtime_dir
from desktop.present.handoff_prompt import handoff_prompt
from desktop.connection.restart_policy import RestartPolicy
from service.client.sse import SseParser



def rem(lap, sid="s1", segment=0, **kw):
    return {"session_id": sid, "segment": segment, "lap": lap, "call": lap * 3, **kw}


# ---------------- coalescing ----------------

def test_first_reminder_pops_and_a_second_within_min_gap_is_held():
    c = ReminderCoalescer(min_gap_s=600)
    assert c.offer(rem(1), now=1000) == rem(1)
    assert c.offer(rem(2), now=1100) is None
    assert c.next_due() == 1600
    assert c.due(now=1599) == []


def test_newest_held_lap_replaces_older_and_shows_when_gap_passes():
    c = ReminderCoalescer(min_gap_s=600)
    c.offer(rem(1), now=0)
    c.offer(rem(2), now=60)
    c.offer(rem(5), now=120)
    shown = c.due(now=600)
    assert [r["lap"] for r in shown] == [5]
    assert c.due(now=5000) == []  # shown once


def test_sessions_are_coalesced_independently():
    c = ReminderCoalescer(min_gap_s=600)
    assert c.offer(rem(1, "a"), now=0) is not None
    assert c.offer(rem(1, "b"), now=10) is not None
    assert c.offer(rem(2, "a"), now=20) is None


def test_nothing_pops_while_snoozed_or_paused():
    c = ReminderCoalescer(min_gap_s=60)
    c.snooze("s1", now=0, duration_s=1800)
    assert c.offer(rem(1), now=10) is None
    assert c.offer(rem(2), now=1000) is None
    assert c.due(now=2000) == []
    assert c.offer(rem(3), now=1801) == rem(3)  # the snooze is over
    c.set_paused(True)
    assert c.offer(rem(4), now=5000) is None
    c.set_paused(False)
    assert c.offer(rem(5), now=6000) == rem(5)


def test_repeated_or_older_laps_do_not_pop_again():
    c = ReminderCoalescer(min_gap_s=0)
    assert c.offer(rem(3), now=0) is not None
    assert c.offer(rem(3), now=100) is None  # the stream sent it again after a reconnect
    assert c.offer(rem(2), now=200) is None
    assert c.offer(rem(1, segment=1), now=300) is not None  # a new segment starts its laps afresh


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.floats(0, 5000)), min_size=1, max_size=60),
       st.floats(1, 1200))
def test_never_two_popups_of_one_session_within_min_gap(events, gap):
    c = ReminderCoalescer(min_gap_s=gap)
    shown: dict[str, list[float]] = {}
    laps = {"a": 0, "b": 0}
    now = 0.0
    for sid, dt in events:
        # release what became due before this event, as the tray's single-shot timer does
        due = c.next_due()
        while due is not None and due <= now + dt:
            for r in c.due(due):
                shown.setdefault(r["session_id"], []).append(due)
            due = c.next_due()
        now += dt
        laps[sid] += 1
        r = c.offer(rem(laps[sid], sid), now)
        if r is not None:
            shown.setdefault(sid, []).append(now)
    for times in shown.values():
        assert all(b - a >= gap - 1e-6 for a, b in zip(times, times[1:]))


# ---------------- restart policy ----------------

def test_restart_policy_gives_up_after_three_restarts_in_ten_minutes():
    p = RestartPolicy()
    delays = [p.on_exit(t) for t in (0, 30, 90)]
    assert all(d is not None and d > 0 for d in delays)
    assert delays == sorted(delays)  # backoff grows
    assert p.on_exit(120) is None


def test_restart_policy_forgets_restarts_older_than_the_window():
    p = RestartPolicy()
    for t in (0, 10, 20):
        assert p.on_exit(t) is not None
    assert p.on_exit(700) is not None


# ---------------- SSE ----------------

def test_sse_parser_dispatches_named_events_and_skips_comments():
    p = SseParser()
    text = ": keep-alive\n\nevent: snapshot\ndata: {\"a\":\ndata: 1}\n\nevent: reminder\ndata: {}\n\n"
    assert p.feed(text) == [("snapshot", '{"a":\n1}'), ("reminder", "{}")]


def test_sse_parser_accepts_crlf_and_no_space_after_colon():
    p = SseParser()
    assert p.feed("event:service\r\ndata:{\"v\":1}\r\n\r\n") == [("service", '{"v":1}')]


# ---------------- lamp and tooltip ----------------

SNAP = {
    "session_id": "abcdef123456", "project": "/home/u/proj", "lamp": {"state": "warning", "colour": "amber"},
    "x": 2.5, "xSweet": 2.0, "dhat": -7.2, "bill_cycle_usd": 1.234, "br": 0.9, "u": 1.8,
    "cache": {"expires_at": "2026-01-01T12:05:00Z", "cold_rewrite_usd": 0.45},
    "skeleton": {"u_mirror": 0.4, "u_amber": 1.6, "u_crit": 2.6,
                 "curve": [[u / 10, 1 + (u / 10 - 1) ** 2 / 4] for u in range(1, 40)]},
}


@pytest.mark.parametrize("colour", ["white", "green", "amber", "red"])
def test_lamp_colour_is_the_snapshots(colour):
    assert lamp_colour({"lamp": {"colour": colour}}) == colour


def test_no_snapshot_is_grey_and_says_service_down():
    assert lamp_colour(None) == "grey"
    assert "service down" in tooltip_text(None, 0)


def test_tooltip_carries_state_position_rent_and_cache():
    now = fmt.parse_time("2026-01-01T12:00:00Z")
    text = tooltip_text(SNAP, now)
    assert "amber" in text and "2.50" in text and "2.00" in text
    assert "8 calls past the sweet spot" in text
    assert "$1.23" in text and "$0.90/h" in text
    assert "cache warm until" in text and "$0.45" in text
    assert "cache expired" in tooltip_text(SNAP, now + 600)


def test_tooltip_of_a_gated_snapshot_has_no_sweet_spot():
    text = tooltip_text({"session_id": "x", "lamp": {"state": "insufficient_data", "colour": "white"},
                            "x": 1, "xSweet": None, "dhat": None}, 0)
    assert "not enough data" in text and "sweet" not in text


def test_followed_session_prefers_user_choice_then_service_then_newest():
    sessions = {"a": {"updated_at": "2026-01-01T00:00:00Z"}, "b": {"updated_at": "2026-01-02T00:00:00Z"}}
    assert pick_followed(sessions, None, None) == "b"
    assert pick_followed(sessions, "a", None) == "a"
    assert pick_followed(sessions, "a", "b") == "b"
    assert pick_followed(sessions, "a", "gone") == "a"
    assert [r[2] for r in menu_sessions(sessions, "a")] == [False, True]


def test_reminder_message_is_stamped_with_its_lap_and_payback():
    title, body = reminder_message(rem(7, restart_usd=0.5, payback_calls=4.2, rent_usd=3.5))
    assert "7 restarts' worth" in title
    assert "$0.50" in body and "5 calls" in body and "$3.50" in body
    assert "a restart's worth" in reminder_message(rem(1))[0]


# ---------------- charts' view-models ----------------

def test_curve_view_has_bands_at_the_landmarks_and_the_point_on_the_curve():
    v = curve_view(SNAP)
    assert [b[2] for b in v.bands] == ["white", "green", "amber", "red"]
    assert v.bands[1][:2] == (0.4, 1.6) and v.bands[2][:2] == (1.6, 2.6)
    u, a = v.point
    assert u == 1.8 and a == pytest.approx(1 + 0.8 ** 2 / 4, abs=0.01)


def test_curve_view_without_skeleton_explains():
    v = curve_view({"lamp": {"state": "insufficient_data"}, "skeleton": None})
    assert not v.us and "not enough data" in v.note


def test_series_view_marks_reminders_and_resets():
    series = {"calls": [{"call": i, "totalStock": 1000 * i, "L": 900 * i, "B": 500, "bill_cycle_usd": 0.01 * i}
                        for i in range(1, 6)],
              "reminders": [{"lap": 1, "call": 3}], "resets": [{"call": 4, "segment": 1}],
              "rewinds": [{"call": 2, "segment": 0}]}
    v = series_view(series)
    assert v.calls == [1, 2, 3, 4, 5] and v.total_stock[-1] == 5000
    assert v.reminder_calls == [(3.0, 1)] and v.reset_calls == [4.0]
    assert v.rewind_calls == [2.5]  # after call 2, before call 3
    assert series_view(None).calls == []


def test_file_rows_and_selection_bodies():
    rows = file_rows({"paths": [{"path": "/p/a", "tokens": 10, "selected": True, "why": None},
                                   {"path": "/x/b", "tokens": 50, "selected": False, "why": "outside_cwd"}]})
    assert [r.path for r in rows] == ["/x/b", "/p/a"]
    assert "outside the project" in rows[0].label
    assert selection_change("/p/a", False) == {"exclude": ["/p/a"], "include": []}
    assert selection_change("/p/a", True) == {"exclude": [], "include": ["/p/a"]}


def test_channel_view_and_csv():
    ch = {"label": "measured", "bucket": "day", "totals": {"calls": 3, "usd_saved": 0.5},
          "buckets": [{"start": "2026-01-01T00:00:00Z", "calls": 1, "bytes": 10},
                      {"start": "2026-01-02T00:00:00Z", "calls": 2, "bytes": 20}], "sources": ["transcripts"]}
    v = channel_view(ch, "bytes")
    assert v.counters == ["calls", "bytes"] and v.heights == [10, 20] and v.label == "measured"
    assert v.xs[1] - v.xs[0] == 86400
    csv_text = channel_csv(ch)
    assert csv_text.splitlines()[0] == "start,calls,bytes,label"
    assert csv_text.splitlines()[2] == "2026-01-02T00:00:00Z,2,20,measured"
    assert channel_view(None).xs == []


def test_settings_flatten_round_trip():
    cfg = {"engine": {"g_floor": 500, "eps_amber": 0.05}, "selection": {"exclude": []},
           "history": {"store_prompts": True}, "tokenizer": {"ratio": {}}}
    flat = flatten(cfg)
    assert flat["engine.g_floor"] == 500 and flat["tokenizer.ratio"] == {}
    assert unflatten(flat) == cfg


@pytest.mark.parametrize("value,seconds", [(None, 600), (300, 300), ("10m", 600), ("90s", 90), ("1h", 3600),
                                           ("junk", 600)])
def test_min_gap_from_config(value, seconds):
    cfg = {"reminders": {"min_gap": value}} if value is not None else {}
    assert min_gap_seconds(cfg) == seconds


# ---------------- handoff, autostart, discovery ----------------

def test_handoff_prompt_names_the_tool_and_the_selected_paths_largest_first():
    series = {"paths": [{"path": "/p/small.py", "tokens": 10, "selected": True},
                        {"path": "/p/big.py", "tokens": 900, "selected": True},
                        {"path": "/p/dropped.py", "tokens": 500, "selected": False}]}
    text = handoff_prompt({"project": "/p"}, series)
    assert "mcp__ctxlamp__handoff_save" in text
    assert "task" in text and "body" in text and "paths" in text
    assert text.index("/p/big.py") < text.index("/p/small.py")
    assert "/p/dropped.py" not in text


def test_autostart_respects_xdg_config_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    path = Path(autostart.set_enabled(True))
    assert path == tmp_path / "cfg" / "autostart" / "ctxlamp.desktop"
    text = path.read_text()
    assert "[Desktop Entry]" in text and "Exec=" in text and "tray" in text
    assert autostart.is_enabled()
    autostart.set_enabled(False)
    assert not path.exists() and not autostart.is_enabled()


def test_discovery_reads_api_json_from_ctxlamp_home(ctx_home):
    assert runtime_dir() == str(ctx_home.resolve())
    assert read_api_info() is None
    (ctx_home / "api.json").write_text('{"port": 4321, "token": "t0k", "pid": 1}')
    info = read_api_info()
    assert info.port == 4321 and info.token == "t0k"
    (ctx_home / "api.json").write_text("{half")
    assert read_api_info() is None


def test_no_display_is_detected():
    from desktop.app import has_display

    assert not has_display({}, "linux")
    assert has_display({"DISPLAY": ":0"}, "linux")
    assert has_display({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert has_display({}, "darwin")


def test_fmt_helpers():
    assert fmt.usd(None) == "–" and fmt.usd(1234.5) == "$1,234" and fmt.usd(0.0042) == "$0.004"
    assert fmt.tokens(1500) == "1.5k" and fmt.tokens(2_500_000) == "2.50M"
    assert fmt.duration(65) == "1 min 05 s" and fmt.duration(3720) == "1 h 02 min"
    assert math.isclose(fmt.parse_time("1970-01-01T00:01:00Z"), 60)
