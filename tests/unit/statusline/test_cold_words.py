"""The cold cache in the terminal's words (issue 47): `ctxlamp status` and the shared rule for a handoff from
before the break. The status line's own form is tested in test_statusline.py."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from service.cli.status import cold_words, render
from service.client.breaks import handoff_before_break
from service.client.figures import usd

NOW = 1795000000.0
LAST = "2026-11-18T10:00:00Z"  # the session's last activity: the break began here
LAST_EPOCH = 1794996000.0


def snap(expires: str = "2026-11-18T10:05:00Z", **cache) -> dict:
    return {"session_id": "s1", "project": "/home/u/proj", "lamp": {"state": "good", "colour": "green"},
            "updated_at": LAST, "cache": {"expires_at": expires, "cold_rewrite_usd": 0.9, "cold_rewrite_tokens": 180_000,
                                          "fresh_start_usd": 0.13, "fresh_start_tokens": 25_000, **cache}}


def test_status_says_both_amounts_once_the_cache_is_cold_and_names_the_restart_only_with_a_handoff():
    status = {"service": {"pid": 1}, "sessions": [snap()], "followed": "s1"}
    text = render(status, tty=False, now=NOW)
    assert text.splitlines()[-2:] == [
        f"Cache cold: your next message rewrites 180k tokens ({usd(0.9)}).",
        f"Fresh start: 25k ({usd(0.13)}); a handoff is cheapest made before a break."]
    with_handoff = render(status, tty=False, now=NOW, handoff_ready=frozenset({"s1"}))
    assert with_handoff.splitlines()[-1] == f"A fresh session with your handoff writes 25k ({usd(0.13)})."
    warm = render(status, tty=False, now=LAST_EPOCH + 60)
    assert "Cache cold" not in warm and "fresh" not in warm


@settings(max_examples=200, deadline=None)
@given(rewrite=st.floats(0, 1e7, allow_nan=False), tokens=st.integers(0, 10**7), share=st.floats(0, 1),
       handoff=st.booleans())
def test_every_cold_line_fits_80_columns(rewrite, tokens, share, handoff):
    s = snap(cold_rewrite_usd=rewrite, cold_rewrite_tokens=tokens, fresh_start_usd=rewrite * share,
             fresh_start_tokens=int(tokens * share))
    lines = cold_words(s, NOW, handoff)
    assert 1 <= len(lines) <= 2 and all(len(line) <= 80 and "\n" not in line for line in lines)


def row(**kw) -> dict:
    return {"token": "h-abc234", "from_session": "s1", "created_at": "2026-11-18T09:58:00Z", "delivered_at": None,
            **kw}


def test_a_handoff_from_before_the_break_is_the_sessions_own_unloaded_and_saved_near_its_last_activity():
    assert handoff_before_break([row()], "s1", LAST)["token"] == "h-abc234"
    assert handoff_before_break([row(created_at="2026-11-18T10:01:30Z")], "s1", LAST) is not None  # its last answer
    assert handoff_before_break([row(created_at="2026-11-18T10:30:00Z")], "s1", LAST) is None  # after the break
    assert handoff_before_break([row(created_at="2026-11-18T08:00:00Z")], "s1", LAST) is None  # work went on after it
    assert handoff_before_break([row(from_session="other")], "s1", LAST) is None
    assert handoff_before_break([row(delivered_at="2026-11-18T11:00:00Z")], "s1", LAST) is None
    newest = handoff_before_break([row(), row(token="h-new234", created_at="2026-11-18T09:59:00Z")], "s1", LAST_EPOCH)
    assert newest["token"] == "h-new234"
    assert handoff_before_break("junk", "s1", LAST) is None and handoff_before_break([row()], None, LAST) is None
    assert handoff_before_break([row(created_at=5), row(created_at="never"), "x"], "s1", LAST) is None


def test_misses_by_cause_in_words():
    from service.client.words import misses_sentence
    assert misses_sentence({"misses": 1, "miss_causes": {"ttl_expired_1h": 1}, "rewrote_usd": 0.5}) == \
        f"1 cache miss: 1 after a break past an hour; it rewrote {usd(0.5)}."
    assert misses_sentence({"misses": 4, "miss_causes": {"tools_changed": 1, "new_cause": 2, "model_changed": 1}}) \
        == "4 cache misses: 2 other, 1 tools changed, 1 model switch."
    assert misses_sentence({"misses": 0}) == "" and misses_sentence(None) == ""
    assert misses_sentence({"misses": True, "miss_causes": {"model_changed": 1}}) == ""


@settings(max_examples=100, deadline=None)
@given(saves=st.floats(0, 1e7, allow_nan=False), ahead=st.floats(1, 2000), handoff=st.booleans())
def test_status_names_the_move_the_cache_notice_names_within_80_columns(saves, ahead, handoff):
    # the engine's advice once cold and its `break_move` (a restart where it names one): the same sentence as
    # the tray's notice and tooltip, after the rewrite and the fresh start
    from service.client.words import break_move_sentence

    cold = {"move": "restart", "horizon_calls": ahead, "continue_usd": saves, "restart_usd": 0.0, "compact_usd": 0.0,
            "saves_usd": saves, "label": "estimated", "pays_twice": True}
    s = snap(cold_advice=cold, break_move="restart")
    lines = cold_words(s, NOW, handoff)
    if saves > 0:
        assert lines[-1] == break_move_sentence(s["cache"])
        assert lines[-1].startswith(f"A restart saves about {usd(saves)} over the next ")
        assert len(lines) == 3
    else:
        assert len(lines) == 2  # it saves nothing: no move said
    assert all(len(line) <= 80 and "\n" not in line for line in lines)
    assert cold_words(snap(cold_advice=cold, break_move="continue"), NOW, handoff) == lines[:2]
