"""The colour the service publishes does not step back while the session's last notice is younger than a minute."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from service.ingest.live import NOTICE_HOLD_S, LampHold

RANK = {"white": 0, "green": 1, "amber": 2, "red": 3}
STATE = {"white": "warming", "green": "good", "amber": "warning", "red": "critical"}


def lamp(colour: str) -> dict:
    return {"state": STATE[colour], "colour": colour}


def test_red_then_amber_while_the_notice_is_up_stays_red_and_steps_back_after_a_minute():
    hold = LampHold()
    assert hold.notice(0, lamp("red"), now=100.0)
    assert hold.shown(lamp("amber"), now=130.0) == {**lamp("red"), "held": True}  # state and colour alike
    assert hold.shown(lamp("amber"), now=100.0 + NOTICE_HOLD_S) == lamp("amber")  # the minute is over
    assert not hold.notice(0, lamp("red"), now=200.0)  # a later lap of the stretch is no notice: no new hold
    assert hold.shown(lamp("green"), now=210.0) == lamp("green")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(list(RANK)),
       st.lists(st.tuples(st.floats(0, 30), st.sampled_from(list(RANK))), max_size=30))
def test_the_published_colour_never_steps_back_within_the_minute_and_is_the_engines_after(at_notice, steps):
    hold = LampHold()
    hold.notice(3, lamp(at_notice), now=0.0)
    now, highest = 0.0, RANK[at_notice]
    for dt, colour in steps:
        now += dt
        shown = hold.shown(lamp(colour), now)
        if now < NOTICE_HOLD_S:
            highest = max(highest, RANK[colour])
            assert RANK[shown["colour"]] == highest  # never a step back, and never above what was shown
            assert shown.get("held", False) == (RANK[colour] < highest)
        else:
            assert shown == lamp(colour)  # the engine's own lamp once the notice is a minute old
