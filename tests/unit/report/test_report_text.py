"""The text report's restart lines read as English for one stretch of work and for many."""
from __future__ import annotations

from service.cli.report import restart_lines


def _block(segments: int, missed: int) -> dict:
    return {"first_reminder_usd": 0.37, "best_single_usd": 0.87, "segments": segments,
            "segments_with_reminders": 1, "capture": 0.42, "missed_usd": 0.0, "missed_segments": missed}


def test_restart_lines_count_segments_in_the_singular_and_the_plural():
    one = "\n".join(restart_lines(_block(1, 0)))
    assert "$0.87 with the best single restart, over 1 stretch of work\n" in one
    assert "in 0 stretches of work" in one
    many = "\n".join(restart_lines(_block(3, 1)))
    assert "over 3 stretches of work\n" in many and many.endswith("in 1 stretch of work")
    assert "following the lamp got 42% of the best" in many
    assert restart_lines(None) == []
