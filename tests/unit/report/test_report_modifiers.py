"""Issue 38 in the report: fast-mode and US-only calls priced at their own rates, fast calls booked apart
("<model>-fast" in JSON, "(fast)" in text), and usage values with no price figure counted by name.

The session is the real CLI's model-switch transcript with its model, speed and geography rewritten
(tests/support/modifiers.py gives its usage and the sums, by hand). Opus 5.5: $4 / $20 per million,
cache reads $0.20, 5-minute writes $5; fast mode 2x; US-only 1.1x.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from service.cli.report import render_text
from service.engine_setup.engines import load_prices
from service.api.overview import build as overview_of
from service.report.scan import SizeMemo, TranscriptFile, scan_bytes
from service.report.summary import build_summary
from tests.support import modifiers as M

OPUS55 = "claude-opus-5-5"
STANDARD = {"input": 4.0, "output": 20.0, "cache_read": 0.20, "cache_write_5m": 5.0}
OPUS = {M.FIRST: OPUS55, M.MIDDLE: OPUS55}


def report_of(path: Path) -> dict:
    tf = TranscriptFile(path=str(path), project=path.parent.name, subagent=False, session_hint=path.stem)
    result = scan_bytes(path.read_bytes(), tf, SizeMemo(), len)
    return build_summary({tf.path: result}, load_prices().lookup)  # days in UTC


@pytest.mark.parametrize("usage, label, factor, by_hand", [
    ({"speed": "fast"}, OPUS55 + "-fast", 2.0, 0.7369852),
    ({"inference_geo": "us"}, OPUS55, 1.1, 0.40534186),
    ({"speed": "fast", "inference_geo": "us"}, OPUS55 + "-fast", 2.2, 0.81068372),
    ({"speed": "standard", "inference_geo": "global"}, OPUS55, 1.0, 0.3684926),
    ({"inference_geo": "not_available"}, OPUS55, 1.0, 0.3684926),
])
def test_the_report_bills_the_session_at_its_modifiers(tmp_path, usage, label, factor, by_hand):
    spend = report_of(M.derive(tmp_path, usage, models=OPUS))["spend"]
    assert factor * M.usd(STANDARD) == pytest.approx(by_hand, abs=1e-12)
    assert spend["total_usd"] == pytest.approx(by_hand, abs=1e-9)
    assert spend["by_model"] == {label: pytest.approx(by_hand, abs=1e-9)}


def test_fast_calls_are_apart_in_json_text_and_the_overview(tmp_path):
    summary = report_of(M.derive(tmp_path, models=OPUS, middle={"speed": "fast"}))
    spend = summary["spend"]
    middle = M.usd(STANDARD, M.MIDDLE_CALLS)  # 0.1768128 at standard, the fast stretch pays twice that
    assert spend["by_model"] == {OPUS55: pytest.approx(0.1916798, abs=1e-9),
                                 OPUS55 + "-fast": pytest.approx(2 * middle, abs=1e-9)}
    assert spend["total_usd"] == pytest.approx(0.5453054, abs=1e-9)
    assert "unknown_price_modifiers" not in summary["data_quality"]  # every value had a figure
    text = render_text(summary)
    assert "Opus 5.5 (fast)" in text and "claude-opus-5-5-fast" not in text  # the window's name
    day = next(iter(spend["by_day"]))
    splits = {"by_day_model": {day: dict(spend["by_model"])}, "by_day_project": {}, "first_at": {}, "last_at": {}}
    overview = overview_of(1, summary, splits, {}, set(), day, day)
    assert set(overview["spend"]["by_day_model"][day]) == {OPUS55, OPUS55 + "-fast"}


def test_values_without_a_figure_are_priced_at_standard_and_counted_by_name(tmp_path):
    opus48 = {M.FIRST: "claude-opus-4-8", M.MIDDLE: "claude-opus-4-8"}
    rates = {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write_5m": 6.25}
    # Opus 4.8's fast mode was removed on 2026-11-30: these calls of 2026-12-01 have no fast figure
    summary = report_of(M.derive(tmp_path / "a", {"speed": "fast"}, models=opus48, day="2026-12-01"))
    assert summary["spend"]["total_usd"] == pytest.approx(M.usd(rates), abs=1e-9)
    assert summary["data_quality"]["unknown_price_modifiers"] == {"speed=fast": {"claude-opus-4-8-fast": 8}}
    assert "priced at standard, no figure for speed=fast: claude-opus-4-8 (fast) (8)" in render_text(summary)
    # a speed and a geography the table has never heard of
    odd = report_of(M.derive(tmp_path / "b", {"speed": "turbo"}, models=OPUS, middle={"inference_geo": "eu"}))
    assert odd["spend"]["total_usd"] == pytest.approx(M.usd(STANDARD), abs=1e-9)
    assert odd["data_quality"]["unknown_price_modifiers"] == {"inference_geo=eu": {OPUS55: 3},
                                                              "speed=turbo": {OPUS55: 8}}


def test_the_team_figures_keep_fast_calls_apart(tmp_path):
    """What `ctxlamp team push` sends: the spend cut by (day, model, project), fast calls under their label."""
    from service.report.summary import spend_tally

    path = M.derive(tmp_path, models=OPUS, middle={"speed": "fast", "inference_geo": "us"})
    tf = TranscriptFile(path=str(path), project=path.parent.name, subagent=False, session_hint=path.stem)
    tally = spend_tally(load_prices().lookup)
    tally.add(tf.path, scan_bytes(path.read_bytes(), tf, SizeMemo(), len))
    by_model = {model: g["main_usd"] for (_day, model, _project), g in tally.breakdown().items()}
    middle = M.usd(STANDARD, M.MIDDLE_CALLS)
    assert by_model == {OPUS55: pytest.approx(M.usd(STANDARD) - middle, abs=1e-9),
                        OPUS55 + "-fast": pytest.approx(2.2 * middle, abs=1e-9)}


def test_the_reports_channel_lines_say_what_the_windows_overview_says():
    """One voice: the command line's savings channels read as the window's Overview sentences, figures and all."""
    from desktop.present.overview import channel_headlines
    from service.cli.report import channel_lines

    retrieval = {"calls": 1234, "bytes_served": 4290, "bytes_saved": 346682,
                 "tools": {"Grep": {"calls": 1234, "bytes_served": 4290, "bytes_saved": 346682}}}
    edit = {"str_replace_calls": 26, "str_replace_old_string_tokens": 212, "str_replace_old_string_usd": 0.0032,
            "str_replace_misses": {"not_found": 3, "ambiguous": 1, "total": 4}, "anchored_calls": 0, "anchored_ops": 0,
            "anchored_avoided_output_tokens": 0, "anchored_conflicts": 0}
    pinch = {"events": 2, "requests": 100, "pinched_requests": 2, "share_pinched": 0.02, "tokens_saved_total": 61801,
             "tokens_saved_median": 30900, "saved_usd": 0.0406}
    lines = channel_lines(edit, pinch, retrieval)
    window = dict(channel_headlines({"channels": {"edit": edit, "pinch": pinch, "retrieval": retrieval}}))
    assert window["Search"] == "1,234 search calls served 4.3 kB and spared an estimated 346.7 kB of whole-file reads."
    assert window["Edits"].startswith("26 replace edits paid 212 output tokens ($0.003) re-quoting the old text")
    for title, label in (("Edits", "  Edits (measured): "), ("Trimming", "  Trimming (measured): "),
                         ("Search", "  Search (estimated): ")):
        assert label + window[title] in lines, (title, lines)
    assert "    missed: 3 text not found, 1 ambiguous" in lines  # what only the report details
    assert lines[-1].split() == ["Grep", "1,234", "calls", "4.3", "kB", "served", "~", "346.7", "kB", "spared"]
