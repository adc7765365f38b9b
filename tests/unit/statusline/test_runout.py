"""Issue 26, run-out: from a plan window's readings, its pace and when it reaches 100 % (null when it
resets first), in the API's limits, the status line, the tray tooltip and the Overview's meters."""
from __future__ import annotations

import time

import pytest

from service.statusline import line, reading
from service.limits.book import Book, iso
from service.limits.runout import run_out

NOW = 1795000000.0  # 2026-11-18T11:06:40Z
HOUR = 3600.0


def five(pct: float, resets: float) -> dict:
    return reading.parse({"session_id": "s1", "rate_limits": {"five_hour": {"used_percentage": pct,
                                                                            "resets_at": resets}}})


def scripted(book: Book, series: list[tuple[float, float, float]]) -> None:
    """Readings (minutes after NOW, five-hour %, reset time) as Claude Code's status line reports them."""
    for minutes, pct, resets in series:
        book.record("s1", five(pct, resets), turns=int(minutes), now=NOW + minutes * 60)


def test_three_readings_give_the_pace_and_the_run_out():
    book = Book()
    resets = NOW + 4 * HOUR
    scripted(book, [(0, 10.0, resets), (20, 20.0, resets), (40, 30.0, resets)])  # 30 points an hour
    w = book.limits()["five_hour"]
    assert w["pace_pct_per_hour"] == pytest.approx(30.0)
    # 30 % at +40 min, 70 points to go at 30 an hour: 2 h 20 min later, at +3 h, an hour before the reset
    assert w["runs_out_at"] == iso(NOW + 3 * HOUR)
    assert book.limits(epoch=True)["five_hour"]["runs_out_at"] == pytest.approx(NOW + 3 * HOUR)


def test_null_when_the_window_resets_first():
    book = Book()
    resets = NOW + 2 * HOUR
    scripted(book, [(0, 10.0, resets), (30, 15.0, resets), (60, 20.0, resets)])  # 10 an hour: 100 % in 8 h
    w = book.limits()["five_hour"]
    assert w["pace_pct_per_hour"] == pytest.approx(10.0) and w["runs_out_at"] is None


def test_a_pace_that_never_reaches_100():
    flat = run_out("five_hour", [(NOW, 40.0, NOW + HOUR), (NOW + 600, 40.0, NOW + HOUR),
                                 (NOW + 1200, 40.0, NOW + HOUR)])
    assert flat.pace_pct_per_hour == 0 and flat.runs_out_at is None
    one = run_out("five_hour", [(NOW, 40.0, NOW + HOUR)])  # one reading: no pace yet
    assert one.pace_pct_per_hour is None and one.runs_out_at is None
    close = run_out("five_hour", [(NOW, 40.0, NOW + HOUR), (NOW + 30, 41.0, NOW + HOUR)])  # 30 s apart
    assert close.runs_out_at is None


def test_a_window_that_resets_starts_its_pace_afresh():
    book = Book()
    first, second = NOW + HOUR, NOW + 6 * HOUR
    # a fast window, then the reset: the new window's two readings go at 12 points an hour
    scripted(book, [(0, 60.0, first), (30, 90.0, first), (61, 2.0, second), (121, 14.0, second)])
    w = book.limits()["five_hour"]
    assert w["pace_pct_per_hour"] == pytest.approx(12.0)
    # 14 % at +121 min, 86 to go at 12 an hour: 7 h 10 min later, after the reset at +6 h
    assert w["runs_out_at"] is None
    scripted(book, [(151, 34.0, second)])  # now faster: least squares over the last hour's readings
    w = book.limits()["five_hour"]
    pace = w["pace_pct_per_hour"]
    assert pace == pytest.approx(40.0)  # 2 -> 14 -> 34 at +61, +121, +151 min: 14 and 34 within the hour
    assert w["runs_out_at"] == iso(NOW + 151 * 60 + (100 - 34.0) / pace * HOUR)


def test_already_full_says_when_it_filled():
    r = run_out("five_hour", [(NOW, 90.0, NOW + HOUR), (NOW + 600, 100.0, NOW + HOUR)])
    assert r.runs_out_at == NOW + 600


def test_the_status_line_says_full_at_when_it_comes_before_the_reset():
    limits = {"five_hour": {"used_percentage": 37.0, "resets_at": NOW + 4 * HOUR, "runs_out_at": NOW + 2 * HOUR}}
    text = line.limits_part({"limits": limits}, False, NOW)
    assert text == f"5h 37% full {time.strftime('%H:%M', time.localtime(NOW + 2 * HOUR))}"
    limits["five_hour"]["runs_out_at"] = None
    assert line.limits_part({"limits": limits}, False, NOW).startswith("5h 37% resets ")


def test_the_tray_tooltip_and_the_overview_meter_say_it_and_a_notice_comes_once():
    from desktop.present import fmt
    from desktop.present.limits import LimitNotices, limits_text
    from desktop.present.overview import limit_meters

    limits = {"five_hour": {"used_percentage": 37.0, "resets_at": iso(NOW + 4 * HOUR),
                            "runs_out_at": iso(NOW + 2 * HOUR), "pace_pct_per_hour": 30.0}}
    clock = time.strftime("%H:%M", time.localtime(NOW + 2 * HOUR))
    assert f"5h 37% · full at {clock} at this pace" in limits_text(limits, NOW)
    meter = limit_meters({"limits": limits}, NOW)[0]
    assert f"full {fmt.when(NOW + 2 * HOUR, NOW)} at this pace" in meter.text
    notices = LimitNotices()
    first = notices.offer(limits, NOW)
    assert [t for t, _ in first] == ["ctxlamp: 5h limit runs out before it resets"]
    assert clock in first[0][1]
    assert notices.offer(limits, NOW + 60) == []  # once per window
