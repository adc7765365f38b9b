"""The report's restart block counts each segment once: an archived profile, or the live snapshot of a segment
still open. A live session whose open segment has no call yet (a compaction just ended the one before) has no
segment to count: the engine archives none for it, and a report without the service replays none."""
from __future__ import annotations

from service.report.restart import block


def _row(segment: int, calls: int, best: float, **at: str) -> dict:
    return {"session_id": "s", "segment": segment, "rent_usd": 0.5, "laps": 1,
            "restart_savings": {"best_usd": best, "calls": calls, "missed_calls": 0}, **at}


def test_a_live_segment_without_a_call_is_no_segment():
    archived = [_row(0, 40, 2.0, ended_at="2026-01-02T10:00:00Z")]
    empty = _row(1, 0, 0.0, updated_at="2026-01-02T10:01:00Z")
    got = block(archived, [empty], None, None)
    assert got["segments"] == 1 and got["best_single_usd"] == 2.0


def test_a_live_segment_with_its_first_call_counts_and_stands_for_its_own_profile():
    archived = [_row(0, 40, 2.0, ended_at="2026-01-02T10:00:00Z"), _row(1, 1, 0.25, ended_at="2026-01-02T10:02:00Z")]
    live = _row(1, 2, 0.5, updated_at="2026-01-02T10:03:00Z")
    got = block(archived, [live], None, None)
    assert got["segments"] == 2 and got["best_single_usd"] == 2.5
