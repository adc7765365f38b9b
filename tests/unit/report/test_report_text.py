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


def test_models_are_named_as_the_window_names_them_a_dated_id_and_its_plain_one_as_one():
    """Decision 317: "Sonnet 4.5" in the day table and the billed lines; the ids stay in --json."""
    from service.cli.report import _spend_lines, day_table

    sp = {"days": {"2026-12-01": {"models": ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "claude-opus-5-5-fast"],
                                  "input_tokens": 1, "output_tokens": 2, "cache_write_tokens": 3,
                                  "cache_read_tokens": 4, "total_tokens": 10}},
          "by_day": {"2026-12-01": 1.75}, "total_usd": 1.75, "calls": 3, "subagents_usd": 0.0,
          "by_model": {"claude-sonnet-4-5-20250929": 0.25, "claude-sonnet-4-5": 0.5, "claude-opus-5-5-fast": 1.0}}
    table = day_table(sp)
    assert table[2].startswith("2026-12-01  Sonnet 4.5 ") and table[3].strip() == "Opus 5.5 (fast)"
    assert table[4].startswith("---")  # two ids of one model, one row
    billed = [line.split() for line in _spend_lines(sp)[1:]]
    assert billed == [["Opus", "5.5", "(fast)", "$1.00"], ["Sonnet", "4.5", "$0.75"]]
