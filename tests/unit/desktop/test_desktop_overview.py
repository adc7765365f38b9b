"""The Overview tab and the words on screen: formatting, the overview's view model and widget, and the
overview's sums against `ctxlamp report --json` on the same transcripts (a real service)."""
from __future__ import annotations

import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from desktop.present import fmt  # noqa: E402
from desktop.present import overview as om  # noqa: E402
from desktop.connection.datasource import DemoSource  # noqa: E402


# ---------------- formatting ----------------

@pytest.mark.parametrize("value,text", [(None, "–"), (0, "$0"), (1234.5, "$1,234"), (12.345, "$12.35"),
                                        (0.994, "$0.99"), (0.42, "$0.42"), (0.0042, "$0.004"),
                                        (0.00012, "$0.0001"), (-2.5, "-$2.50")])
def test_money(value, text):
    assert fmt.usd(value) == text


@pytest.mark.parametrize("value,text", [(850, "850"), (1500, "1.5k"), (12_345, "12k"), (2_500_000, "2.50M")])
def test_tokens(value, text):
    assert fmt.tokens(value) == text


@pytest.mark.parametrize("value,text", [(512, "512 B"), (9004, "9.0 kB"), (949_460, "949.5 kB"),
                                        (4_500_000, "4.5 MB"), (2e9, "2.0 GB")])
def test_bytes(value, text):
    assert fmt.size(value) == text


@pytest.mark.parametrize("value,text", [(45, "45 s"), (65, "1 min 05 s"), (600, "10 min"), (3720, "1 h 02 min"),
                                        (90_000, "1 d 1 h"), (None, "–")])
def test_durations(value, text):
    assert fmt.duration(value) == text


def test_counts_percent_plural():
    assert fmt.count(1234567) == "1,234,567" and fmt.count(2.0) == "2"
    assert fmt.percent(0.37) == "37 %" and fmt.percent(0.004) == "0.4 %" and fmt.percent(0) == "0 %"
    assert fmt.plural(1, "call") == "1 call" and fmt.plural(3, "stretch", "stretches") == "3 stretches"


def test_dates_are_local_time(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # UTC+9, no daylight saving
    time.tzset()
    try:
        now = fmt.parse_time("2026-11-30T02:00:00Z")  # 11:00 in Tokyo
        assert fmt.when("2026-11-30T01:05:00Z", now) == "today 10:05"
        assert fmt.when("2026-11-28T20:30:00Z", now) == "Sun 29 Nov 05:30"
        assert fmt.when("2025-03-01T00:00:00Z", now) == "1 Mar 2025 09:00"
        assert fmt.day("2026-11-29") == "Sun 29 Nov"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# ---------------- the overview's view model ----------------

def doc_with(models: dict[str, list[float]], days: list[str]) -> dict:
    by_day = {d: {m: v[i] for m, v in models.items() if v[i]} for i, d in enumerate(days)}
    return {"spend": {"days": days, "by_day_model": by_day, "by_day_project": {}}}


def test_daily_stacks_keep_the_dearest_and_fold_the_rest_into_other():
    days = ["2026-11-28", "2026-11-29"]
    models = {f"claude-sonnet-4-{i}": [float(i), 1.0] for i in range(1, 9)}
    stacks = om.daily_stacks(doc_with(models, days))
    names = [n for n, _ in stacks.layers]
    assert len(names) == om.MAX_STACKS and names[-1] == om.OTHER
    assert names[0] == "Sonnet 4.8"  # dearest at the bottom
    assert stacks.totals == pytest.approx([sum(v[0] for v in models.values()), 8.0])


def test_the_bars_add_up_to_what_was_billed():
    """Issue 26: the requests Claude Code did not write are a layer of their own, so the bars sum to Spent."""
    doc = DemoSource().overview(7)
    stacks = om.daily_stacks(doc, "model")
    assert stacks.layers[-1][0] == om.NOT_WRITTEN and sum(stacks.layers[-1][1]) > 0
    assert sum(stacks.totals) == pytest.approx(doc["spend"]["billed_usd"], abs=1e-6)
    assert om.spend_figures(doc)[0].value == fmt.usd(doc["spend"]["billed_usd"])


def test_model_and_project_names_are_words():
    assert om.model_name("claude-opus-4-8") == "Opus 4.8"
    assert om.model_name("claude-haiku-4-5-20251001") == "Haiku 4.5"
    assert om.model_name(None) == "unknown model"
    assert om.project_name("/home/dev/webshop") == "webshop"
    # a transcript written on Windows (real-wild has them) read on Linux: the History tab said "C:\Users\Mischa"
    assert om.project_name("C:\\Users\\dev\\webshop") == "webshop" == om.project_name("/home/dev/webshop/")


def test_fast_calls_have_their_own_bars_and_name_and_unpriced_values_are_said():
    """Issue 38: the report books fast-mode calls as "<model>-fast"; the Overview shows them apart, in words."""
    assert om.model_name("claude-opus-5-5-fast") == "Opus 5.5 (fast)"
    doc = {"spend": {"days": ["2026-12-01"],
                     "by_day_model": {"2026-12-01": {"claude-opus-5-5": 0.19, "claude-opus-5-5-fast": 0.35}},
                     "unknown_price_modifiers": {"speed=fast": {"claude-opus-4-8-fast": 8}}}}
    assert om.daily_stacks(doc, "model").layers == [("Opus 5.5 (fast)", [0.35]), ("Opus 5.5", [0.19])]
    assert "Priced at standard rates, no price known for speed=fast: Opus 4.8 (fast)." in om.spend_notes(doc)


def test_the_output_claude_code_did_not_record_is_said_apart_from_the_figures():
    doc = {"spend": {"days": ["2026-12-01"], "total_usd": 40.0, "billed_usd": 40.0,
                     "placeholder_output_calls": 12, "placeholder_output_estimate_usd": 0.57}}
    notes = om.spend_notes(doc)
    assert "12 calls recorded only a placeholder for the output" in notes
    assert "about $0.57 of output Claude Code did not record, not in these figures." in notes
    assert om.spend_figures(doc)[0].value == fmt.usd(40.0)


RECORDED_LIMITS = {"five_hour": {"used_percentage": 37.0, "resets_at": "2026-11-30T18:00:00Z",
                                 "seen_at": "2026-11-30T14:02:00Z"},
                   "seven_day": {"used_percentage": 81.5, "resets_at": "2026-12-03T09:00:00Z",
                                 "seen_at": "2026-11-30T14:02:00Z"},
                   "spend_limit": None}


def test_limit_meters_from_the_status_shape():
    meters = om.limit_meters({"limits": RECORDED_LIMITS}, fmt.parse_time("2026-11-30T14:05:00Z"))
    assert [m.name for m in meters] == ["5-hour limit", "Weekly limit"]
    assert meters[0].percent == 37.0 and meters[0].text.startswith("37 % used, resets ")
    assert om.limit_meters({"limits": None}) == [] and om.limit_meters({}) == []


def test_channel_headlines_are_sentences_with_units():
    doc = DemoSource().overview(30)
    lines = dict(om.channel_headlines(doc))
    e = doc["channels"]["edit"]
    assert lines["Edits"].startswith(f"{e['str_replace_calls']} replace edits paid "
                                     f"{fmt.tokens(e['str_replace_old_string_tokens'])} output tokens")
    assert "Context trimming saved" in lines["Trimming"] and "kB" in lines["Search"]



def test_claude_codes_compactions_are_a_headline_and_a_session_figure():
    from desktop.present.session import compaction_fact, header_facts
    doc = {"compactions": {"by_trigger": {"manual": 1, "auto": 0, "idle": 2}, "cost_usd": 0.4213,
                           "label": "estimated"}}
    assert dict(om.channel_headlines(doc))["Compactions"] == \
        "3 compactions: 1 by you, 2 while you were idle; about $0.42 (estimate)."
    assert "Compactions" not in dict(om.channel_headlines({"compactions": {"by_trigger": {"manual": 0}}}))
    (fact,) = compaction_fact({"manual": 0, "auto": 1, "idle": 1})
    assert fact[:2] == ("Compactions", "1 automatic, 1 while you were idle")
    assert compaction_fact({"manual": 0, "auto": 0, "idle": 0}) == [] and compaction_fact(None) == []
    snap = {"totalStock": 1000, "compactions": {"manual": 2, "auto": 0, "idle": 0}}
    assert ("Compactions", "2 by you") in [f[:2] for f in header_facts(snap)]


# ---------------- the tab ----------------


# ---------------- the overview's sums are the report's ----------------


def test_the_history_names_a_segments_fast_stretch_apart():
    """Issue 38: a profile's `models` lists the fast calls under "<model>-fast"; History says "(fast)"."""
    from desktop.present.history import fmt_models

    models = [{"model": "claude-opus-5-5", "calls": 5, "bill_in_usd": 0.18, "bill_out_usd": 0.01},
              {"model": "claude-opus-5-5-fast", "calls": 3, "bill_in_usd": 0.35, "bill_out_usd": 0.0}]
    assert fmt_models(models) == "Opus 5.5 ×5 $0.19; Opus 5.5 (fast) ×3 $0.35"


def test_saving_the_price_table_keeps_what_it_does_not_edit():
    """Issue 38: a user's fast-mode or US-only figures in the override file survive a save from Settings."""
    from desktop.present.settings import price_table

    fast = {"speed": {"fast": [{"multiplier": 2}]}}
    previous = {"models": {"claude-fable-5-2": {"input": 9, "modifiers": fast}, "gone-model": {"input": 1}}}
    rows = [("claude-fable-5-2", {"input": "8", "output": ""}), ("claude-opus-5-5", {"output": "21"})]
    assert price_table(rows, previous) == {"models": {"claude-fable-5-2": {"input": 8.0, "modifiers": fast},
                                                      "claude-opus-5-5": {"output": 21.0}}}
    assert price_table(rows) == {"models": {"claude-fable-5-2": {"input": 8.0}, "claude-opus-5-5": {"output": 21.0}}}


def test_the_rent_figure_says_the_glossarys_words():
    """docs/glossary.md: "rent on dead weight", short "rent" (the report's line, the Session tab's figure), never
    "dead-weight rent"; the tile is too narrow for the long form, so its tooltip says it."""
    doc = DemoSource().overview(7)
    rent = [f for f in om.spend_figures(doc) if f.value == fmt.usd(doc["rent"]["rent_usd"])]
    assert [f.caption for f in rent] == ["Rent"]
    assert rent[0].tip.startswith("Rent on dead weight: ")


def test_sessions_are_named_by_their_folder_and_when_they_started_never_by_their_id():
    """docs/glossary.md: a session is named by its project folder and when it started; its id (the demo's
    d3m0d3m0-…) stays in --json and the API. Every place the window names a session, on the demo's data."""
    from desktop.present.history import segment_rows
    from desktop.present.lamp import session_name

    src = DemoSource()
    status, overview, segments = src.status(), src.overview(7), src.segments()
    ids = {s["session_id"] for s in status["sessions"]} | {s["session_id"] for s in overview["sessions"]} | \
        {p["session_id"] for p in segments["segments"]}
    names = [session_name(s) for s in status["sessions"]] + [r.name for r in om.session_rows(overview)] + \
        [row[1] for row in segment_rows(segments)]
    assert names and all(sid[:8] not in name for sid in ids for name in names), names
    first = status["sessions"][0]
    assert session_name(first) == f"ctxlamp · started {fmt.when(first['started_at'])}"
    assert [row[1] for row in segment_rows(segments)][0] == "ctxlamp · 2"  # the folder and which stretch
