"""Plan limits in the tray and the window (issue 16): words, notices once per window, the idle-cache
notice, the Session tab's usage plot and per-turn table. Qt offscreen."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from desktop.present import fmt  # noqa: E402
from desktop.present.limits import IdleCacheNotice, LimitNotices, limits_text, turn_rows, usage_points  # noqa: E402

from tests.support.limits import NOW, limits  # noqa: E402


def test_limits_in_words():
    assert limits_text(limits(), NOW) == "5h 37% · resets 17:00; week 12%"
    assert limits_text({"five_hour": None, "seven_day": None, "spend_limit": None}, NOW) is None
    assert limits_text(None, NOW) is None


def test_threshold_notices_once_each_per_window():
    n = LimitNotices({"limits": {"notice_pct": 80, "alert_pct": 95}})
    assert n.offer(limits(five=50), NOW) == []
    first = n.offer(limits(five=81), NOW)
    assert len(first) == 1 and "5h limit at 81%" in first[0][0] and "passed 80%" in first[0][1]
    assert n.offer(limits(five=85), NOW) == []  # same window, same threshold
    second = n.offer(limits(five=96), NOW)
    assert len(second) == 1 and "passed 95%" in second[0][1]
    assert n.offer(limits(five=97), NOW) == []
    next_window = n.offer(limits(five=82, resets=NOW + 5 * 3600 + 60), NOW)
    assert len(next_window) == 1  # a new window (its own resets_at) warns again


def cached(sid="s1", expires=NOW + 50, cold=0.9):
    return {"session_id": sid, "project": "/home/u/proj", "window": {"tokens": 150000},
            "cache": {"ttl_s": 300, "expires_at": expires, "cold_rewrite_usd": cold}}


def test_idle_cache_notice_before_expiry_once_with_window_share():
    n = IdleCacheNotice({"limits": {"idle_rewrite_usd": 0.5, "idle_notice_s": 60}})
    sessions = {"s1": cached(), "cheap": cached("cheap", cold=0.1)}
    assert n.next_due(sessions, NOW - 100) == NOW - 10
    (title, body), = n.due(sessions, limits(), NOW)
    assert "150k tokens" in body and fmt.usd(0.9) in body and "3.6% of your 5-hour window" in body
    assert n.due(sessions, limits(), NOW + 1) == []  # once per expiry
    sessions["s1"] = cached(expires=NOW + 400)  # a new message: a new expiry, a new notice later
    assert n.next_due(sessions, NOW) == NOW + 340


def test_idle_cache_notice_names_the_cold_caches_move_and_the_tooltip_the_same():
    # The engine's advice once the cache is cold: 150,000 tokens of which 20,000 useful, on Sonnet 4.5, and the
    # move the cache notice names from it (the engine's `break_move`). The rewrite ($0.56) is under a $1
    # threshold, yet the notice comes: it names a move, which the followed schedule takes at a break
    # (docs/measurement.md 14, 16); the tooltip says the same sentence.
    from desktop.present.advice import tooltip_text
    from service.client import words
    from service.engine.advice import AdviceBasis, MovePrices, advise
    from service.engine.schedule import break_move

    prices = MovePrices(p_r=0.3e-6, p_w=3.75e-6, p_w5=3.75e-6, p_out=15e-6)
    cold_advice = advise(150_000, 20_000.0, 20_000.0, 2_000.0, prices, AdviceBasis(), cold=True)
    assert cold_advice["move"] == "restart"
    n = IdleCacheNotice({"limits": {"idle_rewrite_usd": 1.0, "idle_notice_s": 60}})
    snap = cached(cold=0.5625)
    snap["cache"].update(cold_rewrite_tokens=150_000, fresh_start_usd=0.075, fresh_start_tokens=20_000,
                         cold_advice=cold_advice, break_move=break_move(cold_advice))
    move = words.break_move_sentence(snap["cache"])
    saves = cold_advice["continue_usd"] - cold_advice["restart_usd"]
    assert move.startswith(f"A restart saves about {fmt.usd(saves)} over the next 30 calls")
    (title, body), = n.due({"s1": snap}, None, NOW)
    assert body.endswith(f"a handoff is cheapest made before a break. {move}")
    snap["cache"]["expires_at"] = "2026-01-01T12:00:00Z"
    text = tooltip_text(dict(snap, lamp={"state": "good", "colour": "green"}), NOW + 10**9)
    assert move[0].lower() + move[1:] in text.splitlines()
    # going on cheapest even cold, under the threshold: no notice, and no move said
    quiet = cached("s2", cold=0.5625)
    quiet["cache"].update(cold_advice=cold_advice, break_move="continue")
    assert words.break_move_sentence(quiet["cache"]) == ""
    assert IdleCacheNotice({"limits": {"idle_rewrite_usd": 1.0, "idle_notice_s": 60}}).due({"s2": quiet}, None,
                                                                                           NOW) == []


def test_idle_cache_notice_prices_the_fresh_start_beside_the_rewrite_and_informs():
    from desktop.present.advice import tooltip_text
    n = IdleCacheNotice({"limits": {"idle_rewrite_usd": 0.5, "idle_notice_s": 60}})
    snap = cached(cold=0.9)
    snap["cache"].update(cold_rewrite_tokens=150_000, fresh_start_usd=0.13, fresh_start_tokens=25_000)
    (title, body), = n.due({"s1": snap}, None, NOW)
    assert title == "ctxlamp: cache about to expire"
    assert body.endswith(f"about {fmt.usd(0.9)}. Fresh start: 25k ({fmt.usd(0.13)}); a handoff is cheapest "
                         "made before a break.")
    # once expired, the tooltip says both amounts, each line within 80 columns
    snap["cache"]["expires_at"] = "2026-01-01T12:00:00Z"
    text = tooltip_text(dict(snap, lamp={"state": "good", "colour": "green"}), NOW + 10**9)
    cold = [line for line in text.splitlines() if "cache cold" in line or "fresh start" in line]
    assert cold == [f"cache cold: your next message rewrites 150k tokens ({fmt.usd(0.9)}).",
                    f"fresh start: 25k ({fmt.usd(0.13)}); a handoff is cheapest made before a break."]
    assert all(len(line) <= 80 for line in cold)


def test_the_tooltip_foresees_claude_codes_idle_compaction_on_a_one_hour_cache():
    from desktop.present.advice import tooltip_text
    snap = cached(expires=NOW + 3000)
    snap["cache"].update(ttl_s=3600, fresh_start_usd=0.13, fresh_start_tokens=25_000, idle_compact_usd=0.41,
                         idle_compact_at=NOW + 2640)
    snap["cache"]["expires_at"] = fmt_iso(NOW + 3000)
    snap["cache"]["idle_compact_at"] = fmt_iso(NOW + 2640)
    text = tooltip_text(dict(snap, lamp={"state": "good", "colour": "green"}), NOW)
    (line,) = [x for x in text.splitlines() if "compacts" in x]
    assert line.startswith("Claude Code compacts it idle at ") and line.endswith(
        f"({fmt.usd(0.41)}); a handoff before the break: {fmt.usd(0.13)}.")
    # Claude Code's settings turned it off: nothing foreseen
    off = tooltip_text(dict(snap, lamp={"state": "good", "colour": "green"}), NOW, idle_compaction=False)
    assert "compacts" not in off and "cache warm until" in off


def fmt_iso(epoch: float) -> str:
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def test_turn_rows_and_points():
    turns = [{"turn": 2, "turns": 1, "before_pct": 10, "after_pct": 12.5, "delta_pct": 2.5, "cost_usd": 0.5,
              "label": "measured"},
             {"turn": 5, "turns": 3, "before_pct": 12.5, "after_pct": 15, "delta_pct": 2.5, "cost_usd": None,
              "label": "upper bound"}]
    rows = turn_rows(turns)
    assert rows[0] == ("3–5", "12.5%", "15.0%", "≤2.50%", "–", "upper bound")
    assert rows[1][3] == "2.50%" and rows[1][4] == fmt.usd(0.5)
    xs, ys = usage_points([{"at": "2026-11-30T10:00:00Z", "five_hour": 10}, {"at": "bad", "five_hour": 3},
                           {"at": "2026-11-30T10:05:00Z", "seven_day": 2}])
    assert ys == [10.0] and len(xs) == 1
