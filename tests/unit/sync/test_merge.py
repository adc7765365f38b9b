"""Summing device files (service/sync/merge.py): per device, each session once, whatever the order."""
from __future__ import annotations

from math import fsum

import pytest
from hypothesis import given, settings, strategies as st

from service.sync.fileformat import DeviceFile, SessionFigures
from service.sync.merge import merge, owners

DAYS = ("2026-11-29", "2026-11-30", "2026-12-01")
IDS = tuple(f"{i:032x}" for i in range(1, 5))
SESSIONS = tuple(f"{i:032x}" for i in range(100, 106))


def spend_row(day: str, usd: float, calls: int) -> list:
    return [day, "claude-sonnet-4-5", "label", calls, calls, 0, 1, 2, 3, 4, usd, 0.0, 0.0, 0.0]


session = st.builds(lambda last, rows: SessionFigures(last, [spend_row(d, u, c) for d, u, c in rows]),
                    st.sampled_from(["2026-11-30T10:00:00Z", "2026-11-30T11:00:00Z", "2026-12-01T09:00:00Z"]),
                    st.lists(st.tuples(st.sampled_from(DAYS), st.floats(0, 100, allow_nan=False), st.integers(1, 50)),
                             min_size=1, max_size=3))
device = st.builds(lambda sid, sessions: DeviceFile(sid, sid[-4:], "2026-12-01T10:00:00Z", "hash", sessions),
                   st.sampled_from(IDS), st.dictionaries(st.sampled_from(SESSIONS), session, max_size=4))


def devices_of(drawn: list[DeviceFile]) -> list[DeviceFile]:
    return list({d.id: d for d in drawn}.values())


@settings(max_examples=50, deadline=None)
@given(st.lists(device, max_size=4), st.randoms(use_true_random=False))
def test_the_sum_is_each_session_once_from_its_owner_in_any_order(drawn, rnd):
    devices = devices_of(drawn)
    total = merge(devices).total
    owner = owners(devices)
    by_id = {d.id: d for d in devices}
    want = fsum(r[10] for key, dev in owner.items() for r in by_id[dev].sessions[key].spend)
    assert total.total("main_usd") == want
    assert total.counts.get("calls", 0) == sum(r[3] for key, dev in owner.items() for r in by_id[dev].sessions[key].spend)
    shuffled = devices[:]
    rnd.shuffle(shuffled)
    again = merge(shuffled)
    assert again.total.total("main_usd") == total.total("main_usd") and owners(shuffled) == owner
    # the devices' own sums add up to the total: summing per device, never a maximum
    assert fsum(s.total("main_usd") for s in merge(devices).per_device.values()) == pytest.approx(
        total.total("main_usd"), abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(device, min_size=1, max_size=4), st.sampled_from(DAYS), st.sampled_from(DAYS))
def test_a_period_keeps_the_days_inside_it(drawn, a, b):
    since, until = min(a, b), max(a, b)
    devices = devices_of(drawn)
    inside = merge(devices, since, until).total
    assert set(inside.by_day) <= {d for d in DAYS if since <= d <= until}
    whole = merge(devices).total
    assert all(fsum(inside.by_day[d]) == fsum(whole.by_day[d]) for d in inside.by_day)


def test_the_device_that_saw_the_latest_call_wins_then_more_calls_then_the_smaller_id():
    key = SESSIONS[0]
    late = DeviceFile(IDS[0], "a", "2026-12-01T00:00:00Z", "hash",
                      {key: SessionFigures("2026-11-30T12:00:00Z", [spend_row(DAYS[1], 1.0, 2)])})
    early_more = DeviceFile(IDS[1], "b", "2026-12-02T00:00:00Z", "hash",  # written later: no matter
                            {key: SessionFigures("2026-11-30T11:00:00Z", [spend_row(DAYS[1], 5.0, 9)])})
    assert owners([late, early_more]) == {key: IDS[0]}
    tie = DeviceFile(IDS[2], "c", "2026-12-01T00:00:00Z", "hash",
                     {key: SessionFigures("2026-11-30T12:00:00Z", [spend_row(DAYS[1], 1.5, 3)])})
    assert owners([late, tie]) == {key: IDS[2]}
    same = DeviceFile(IDS[3], "d", "2026-12-01T00:00:00Z", "hash",
                      {key: SessionFigures("2026-11-30T12:00:00Z", [spend_row(DAYS[1], 1.5, 3)])})
    assert owners([same, tie]) == owners([tie, same]) == {key: IDS[2]}


def test_one_device_is_its_own_sessions_only():
    a = DeviceFile(IDS[0], "a", "2026-12-01T00:00:00Z", "hash",
                   {SESSIONS[0]: SessionFigures("2026-11-30T12:00:00Z", [spend_row(DAYS[1], 1.0, 2)])})
    b = DeviceFile(IDS[1], "b", "2026-12-01T00:00:00Z", "hash",
                   {SESSIONS[1]: SessionFigures("2026-11-30T12:00:00Z", [spend_row(DAYS[1], 2.0, 2)])},
                   channels=[[DAYS[1]] + [1] * 20])
    only_b = merge([a, b], only=IDS[1])
    assert only_b.total.total("main_usd") == 2.0
    assert only_b.per_device[IDS[0]].total("main_usd") == 1.0
