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
    assert "the notice got 42 % of the best single restart" in many
    assert restart_lines(None) == []


def test_the_report_leads_with_what_following_every_notice_saved():
    from service.cli.report import followed_lines

    schedule = {"best_usd": 54.2, "best_restarts_only_usd": 50.1, "followed_usd": 46.07, "capture": 0.85,
                "restarts_followed": 75, "restarts_best": 60, "compactions_followed": 1, "segments": 80}
    lead, detail = followed_lines(schedule)
    assert lead == "Following every notice would have saved $46.07, 85 % of the best in hindsight (estimate)."
    assert detail == ("  The best in hindsight: $54.20 ($50.10 with restarts alone); following the notices meant "
                      "75 restarts and 1 /compact.")
    nothing = {**schedule, "best_usd": 0.0, "best_restarts_only_usd": 0.0, "followed_usd": 0.0}
    assert followed_lines(nothing) == ["No restart or /compact would have saved anything in hindsight (estimate)."]
    assert followed_lines(None) == [] and followed_lines({**schedule, "segments": 0}) == []


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
