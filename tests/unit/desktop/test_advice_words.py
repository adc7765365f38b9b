"""The lamp says the cheapest move and its saving in one line: tooltip, notice and status line, from the
engine's own snapshots of the project's long session (docs/measurement.md section 15)."""
from __future__ import annotations

import pytest

from desktop.present import fmt
from desktop.present import advice as vm
from service.engine_setup.engines import new_engine
from service.statusline import line
from service.limits.serve import SESSION_FIELDS
from tests.support.corpus import scenario_session
from tests.support.engine_runs import PRICES, calls_of


def _lines() -> list[dict]:
    eng = new_engine("/tmp/long.jsonl", PRICES)
    for raw in scenario_session("long-session").read_bytes().splitlines():
        eng.feed_line(raw)
    eng.finish()
    return calls_of(eng.drain_events())


LINES = _lines()
FRESH = LINES[0]
LATE = LINES[-1]  # past the session's reminders: a restart is cheapest over the next 30 calls


def test_the_tooltip_names_the_move_its_saving_and_the_other_moves():
    advice = LATE["advice"]
    assert advice["move"] == "restart"
    text = vm.tooltip_text(LATE, now=0.0)
    restart = advice["continue_usd"] - advice["restart_usd"]
    compact = advice["continue_usd"] - advice["compact_usd"]
    want = f"A restart now saves about {fmt.usd(restart)} over the next 30 calls"
    if compact > 0:
        want += f"; /compact about {fmt.usd(compact)}"
    assert want + " (estimate)." in text.splitlines()


@pytest.mark.parametrize("colour", ["white", "green", "amber", "red"])
def test_a_move_under_a_green_lamp_is_reconciled_in_one_sentence(colour):
    """"good (green)" over "A restart now saves …" read as a contradiction: one sentence says why both hold."""
    from service.client.words import MOVE_WHILE_GREEN, MOVE_WHILE_WHITE

    text = vm.tooltip_text({**LATE, "lamp": {**LATE["lamp"], "colour": colour}}, now=0.0).splitlines()
    assert (MOVE_WHILE_GREEN in text) == (colour == "green")
    assert (MOVE_WHILE_WHITE in text) == (colour == "white")  # a white lamp is never said to be green
    assert MOVE_WHILE_GREEN not in vm.tooltip_text({**FRESH, "lamp": {"colour": "green"}}, now=0.0)  # no move


@pytest.mark.parametrize("dhat", [12.0, -14.0])
def test_a_green_lamp_past_the_sweet_spot_is_not_said_to_be_short_of_it(dhat):
    """The demo's lamp stays green for calls past the sweet spot (the green zone runs on both sides of it): the
    tooltip said "14 calls past the sweet spot" above "the context is still short of its sweet spot", and the
    Session tab "the sweet spot comes later"."""
    snap = {**LATE, "dhat": dhat, "lamp": {**LATE["lamp"], "colour": "green", "state": "good"}}
    for text in (vm.tooltip_text(snap, now=0.0), " ".join(vm.session_advice(snap, now=0.0)),
                 vm.notice_why(False, {}, snap)):
        assert "short of its sweet spot" not in text and "comes later" not in text, text
        if dhat < 0:
            assert "sweet spot comes" not in text, text
    assert "14 calls past the sweet spot" in vm.tooltip_text(snap, now=0.0) or dhat > 0


def test_the_session_tab_names_the_tooltips_move_with_its_figures():
    """The tooltip said "A restart now saves about $0.81 over the next 30 calls" while the Session tab, at the
    same moment, said only "The lamp is red: prepare a handoff…": one move, one set of figures."""
    for colour, state in (("red", "critical"), ("amber", "warning"), ("green", "good")):
        snap = {**LATE, "lamp": {**LATE["lamp"], "colour": colour, "state": state}}
        move = vm.move_sentence(snap)
        assert move and move in vm.tooltip_text(snap, now=0.0).splitlines()
        advice, why = vm.session_advice(snap, now=0.0)
        assert advice.endswith(move), (colour, advice)
        assert "No restart needed" not in advice  # never beside a move that pays
        if colour == "green":
            assert "The lamp is green" in why, why
    quiet = {**FRESH, "lamp": {"colour": "green", "state": "good"}}
    assert vm.move_sentence(quiet) == "" and "saves about" not in " ".join(vm.session_advice(quiet))


def test_a_fresh_segment_says_no_move_and_a_warm_cache_prices_a_model_switch():
    assert FRESH["advice"]["move"] == "continue"
    assert vm.move_sentence(FRESH) == ""
    text = vm.tooltip_text(FRESH, now=0.0)  # the fixture's cache is warm at t=0 (its expiry is in 2026)
    assert "saves about" not in text
    assert f"switching model now rewrites {fmt.usd(FRESH['cache']['cold_rewrite_usd'])}" in text.splitlines()


def test_the_notice_says_the_move_and_its_saving_on_its_second_line():
    reminder = {"lap": 1, "restart_usd": 0.2, "rent_usd": 0.3, "payback_calls": 4.0}
    notice = vm.notice_text({"kind": "rent", "reminder": reminder}, LATE)
    do, saves = notice.body.splitlines()
    assert saves == vm.move_sentence(LATE) and saves.startswith("A restart now saves about $")
    quiet = vm.notice_text({"kind": "rent", "reminder": reminder}, FRESH)  # no move pays yet: the payback
    assert quiet.body.splitlines()[1] == "A restart costs $0.20 and pays for itself after 4 calls."


def test_the_terminal_gives_the_trays_notice_in_its_words():
    """`ctxlamp status` prints the notice the tray shows: the same head, what to do and what it saves; the
    lamp turning red is shown, not announced, and a reminder while red is worded for it, as the tray words it."""
    from service.cli.status import notice_for

    reminder = {"lap": 1, "restart_usd": 0.2, "rent_usd": 0.3, "payback_calls": 4.0, "session_id": "s", "segment": 0}
    red = {**LATE, "session_id": "s", "segment": 0, "lamp": {"colour": "red", "state": "critical"}}
    colours = {"s": "amber"}
    assert notice_for("snapshot", red, set(), colours) is None  # the colour is never announced
    for kind, data in (("rent", {**FRESH, **reminder}), ("red", {**red, **reminder})):
        tray = vm.notice_text({"kind": kind, "reminder": reminder}, data)
        said = notice_for("reminder", data, set(), {"s": "red"} if kind == "red" else {})
        head = tray.title.split(": ", 1)[1]
        do, saves = tray.body.splitlines()
        assert said is not None and f": {head}. {do} {saves}" in said, (said, tray)


def test_an_advice_from_the_wire_that_does_not_add_up_says_nothing():
    broken = {"advice": {"move": "compact", "horizon_calls": "many", "continue_usd": 1.0, "compact_usd": 0.5,
                         "restart_usd": 0.9}}
    assert vm.move_sentence(broken) == ""
    assert vm.move_sentence({"advice": {**LATE["advice"], "move": "<b>restart</b>"}}) == ""



def test_a_move_that_only_breaks_even_is_not_said_yet():
    """Following the advice at break-even lost more often than it saved (bench/advice.py): the words wait
    until the move saves its own price again."""
    early = {**LATE, "advice": {**LATE["advice"], "pays_twice": False}}
    assert vm.move_sentence(early) == ""
    session = {k: early.get(k) for k in SESSION_FIELDS}
    assert "saves" not in line.render({"session": session, "service": "up"}, color=False, now=0.0)


def test_the_status_line_says_the_move_and_a_switchs_price():
    session = {k: LATE.get(k) for k in SESSION_FIELDS}  # what the service's answer carries
    got = line.render({"session": session, "service": "up"}, color=False, now=0.0)
    # the money as the window says it: one format in the tray, the window, the terminal and the status line
    assert f"restart saves ~{fmt.usd(LATE['advice']['saves_usd'])}/30 calls" in got.split(line.SEP)
    got = line.render({"session": session, "service": "up"}, "{rewrite}", color=False, now=0.0)
    assert got == f"switch rewrites {fmt.usd(LATE['cache']['cold_rewrite_usd'])}"
    fresh = {k: FRESH.get(k) for k in SESSION_FIELDS}
    assert "saves" not in line.render({"session": fresh, "service": "up"}, color=False, now=0.0)


@pytest.mark.parametrize("misses, said", [(1, "1 edit missed its text."), (4, "4 edits missed their text.")])
def test_the_edits_sentence_agrees_in_number(misses, said):
    """The Overview's and the report's Edits sentence: "4 edits missed its text" read wrong."""
    from service.client.words import channel_sentences

    edits = {"str_replace_calls": 26, "str_replace_old_string_tokens": 212, "str_replace_old_string_usd": 0.003,
             "str_replace_misses": {"total": misses}}
    (label, text), = [s for s in channel_sentences({"edit": edits}) if s[0] == "Edits"]
    assert text.endswith(said), text


def test_status_names_the_tooltips_move_and_figures_within_80_columns():
    """`ctxlamp status` showed the lamp and the rent but not the move the tooltip and the status line named, its
    context read "3.1x" where the tooltip read "3.09x", and it said "first reminder" where the tray said notice."""
    from service.cli.status import render

    snap = {**LATE, "session_id": "s", "project": "/home/dev/webshop", "lamp": {"colour": "red", "state": "critical"}}
    tooltip = vm.tooltip_text(snap, now=0.0).splitlines()
    for columns in (80, None):
        text = render({"sessions": [snap], "followed": "s"}, tty=False, columns=columns, now=0.0)
        flat = " ".join(text.split())
        assert " ".join(vm.move_sentence(snap).split()) in flat, text
        assert f"{fmt.number(snap['x'])}x" in flat and f"{fmt.number(snap['xSweet'])}x" in flat, text
        assert f"context {fmt.number(snap['x'])}x its useful part; sweet spot at {fmt.number(snap['xSweet'])}x" \
            in tooltip
        assert "reminder" not in text, text  # the user saw a notice
        if columns:
            assert max(len(line) for line in text.splitlines()) <= 80, text
    quiet = {**FRESH, "session_id": "s", "lamp": {"colour": "green", "state": "good"}}
    assert "saves about" not in render({"sessions": [quiet], "followed": "s"}, tty=False, now=0.0)


def test_between_the_notice_and_a_move_that_pays_twice_every_surface_keeps_the_notices_figures():
    """The demo's notice at call 32 said "A restart costs $0.14 and pays for itself after 21 calls" while no move
    paid twice yet: the tooltip, the Session tab and `status` then said no figure at all. They say the notice's
    second line now, priced from the same snapshot the service raised the reminder with."""
    from service.cli.status import render
    from service.client import words

    snap = {**LATE, "session_id": "s", "advice": {**LATE["advice"], "pays_twice": False},
            "lamp": {"colour": "green", "state": "good"}}
    assert snap["restart_savings"]["first_reminder_call"] is not None and vm.move_sentence(snap) == ""
    reminder = {"lap": 1, "restart_usd": words.restart_cost(snap), "payback_calls": snap["pp"],
                "rent_usd": snap["bill_cycle_usd"]}  # as service/daemon/following.py raises it
    second = vm.notice_text({"kind": "rent", "reminder": reminder}, snap).body.splitlines()[1]
    assert second.startswith("A restart costs $") and "pays for itself after" in second
    assert words.advice_line(snap) == second
    assert second in vm.tooltip_text(snap, now=0.0).splitlines()
    assert words.MOVE_WHILE_GREEN in vm.tooltip_text(snap, now=0.0).splitlines()  # good (green) beside it
    assert vm.session_advice(snap, now=0.0)[0].endswith(second)
    assert second in " ".join(render({"sessions": [snap], "followed": "s"}, tty=False, now=0.0).split())
    before = {**snap, "restart_savings": {**snap["restart_savings"], "first_reminder_call": None}}
    assert words.advice_line(before) == ""  # no notice yet, no move that pays twice: nothing to say


def test_the_tooltip_says_rewrite_one_way_warm_or_cold():
    """A warm cache's lines said "the next turn re-writes" and "switching model now re-writes", a cold one "your
    next message rewrites" (the glossary's words): one word for one act, in the tooltip and the status line."""
    for now in (0.0, 4e9):  # the fixture's cache is warm at 0, long cold by 4e9
        text = vm.tooltip_text(LATE, now=now)
        assert "re-write" not in text and "next turn" not in text, text
        assert "your next message rewrites" in text.lower(), text
    assert "re-write" not in line.render({"session": LATE, "service": "up"}, "{rewrite}", color=False, now=0)


def test_once_the_cache_is_cold_the_cache_notices_move_is_the_one_move_said():
    """With the cache cold, the next message writes the whole prompt again: the move the cache notice names,
    priced for that, is said, and the move priced warm beside it is not (two figures for one restart were
    on the tray's tooltip: decision 459). While warm, the warm move is said."""
    from service.cli.status import render

    warm_move = {"move": "restart", "pays_twice": True, "horizon_calls": 30, "continue_usd": 1.0,
                 "restart_usd": 0.5, "compact_usd": 0.9, "saves_usd": 0.5}
    cold = {"move": "restart", "horizon_calls": 30, "continue_usd": 2.0, "restart_usd": 0.8, "compact_usd": 1.9}
    cache = {"expires_at": "2026-01-01T12:00:00Z", "cold_rewrite_usd": 0.9, "cold_rewrite_tokens": 150_000,
             "cold_advice": cold, "break_move": "restart"}
    snap = {**LATE, "advice": warm_move, "cache": cache, "session_id": "s"}
    expiry = fmt.parse_time(cache["expires_at"])
    for now, said, unsaid in ((expiry - 60, "$0.50", "$1.20"), (expiry + 60, "$1.20", "$0.50")):
        tip = vm.tooltip_text(snap, now)
        status = render({"sessions": [snap], "followed": "s"}, tty=False, now=now)
        advice, _ = vm.session_advice(snap, now)
        for text in (tip, status, advice):
            if now < expiry and text is tip:
                assert said in text  # the cache line prices the rewrite; the move priced warm is said
            else:
                assert f"saves about {said}" in text, text
            assert f"saves about {unsaid}" not in text, text
    facts = {"session": {"advice": warm_move, "cache": cache}, "cache_warm": False}
    text = line.render(facts, color=False, now=expiry + 60)
    assert "restart saves ~$1.20/30 calls" in text and "$0.50" not in text, text
    text = line.render({**facts, "cache_warm": True, "cache_expires_at": expiry + 300}, color=False, now=expiry)
    assert "restart saves ~$0.50/30 calls" in text and "$1.20" not in text, text
