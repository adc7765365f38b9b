"""`ctxlamp status` and `ctxlamp report` fit 80 columns when COLUMNS is 80: a narrow layout, wrapped
between words, never inside one (issue 51); a pipe without COLUMNS keeps the wide layout."""
from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings, strategies as st

from service.cli.status import _lines, render
from service.client.terminal import fit
from tests.support.harness import one_session_home
from tests.support.procs import ctl


def _session(i: int, name: str, laps: int) -> dict:
    return {"session_id": f"s{i}", "project": f"/home/u/{name}", "lamp": {"colour": "amber", "state": "warning"},
            "x": 2.31, "xSweet": 1.62, "dhat": 4.0, "bill_cycle_usd": 1.234, "br": 0.456, "laps": laps,
            "reminder": {"call": 40 + i} if laps else {}, "updated_at": "2026-11-30T10:00:00Z",
            "started_at": "2026-11-30T09:12:00Z"}


WORD = st.text(alphabet="abcdefghij-_", min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(WORD, st.integers(0, 30)), min_size=1, max_size=4), st.integers(40, 149))
def test_a_narrow_status_keeps_every_word_whole_and_within_the_width(sessions, columns):
    status = {"service": {"pid": 4242}, "followed": "s0",
              "sessions": [_session(i, name, laps) for i, (name, laps) in enumerate(sessions)]}
    text = render(status, tty=False, columns=columns)
    lines = text.split("\n")
    words = text.split()
    assert words == " ".join(_lines(status, False, None, narrow=True)).split()  # wrapped between words only
    assert all(len(line) <= columns or " " not in line.strip() for line in lines)


def test_wrapping_never_cuts_a_word_and_indents_what_follows():
    (first, second) = fit(["  Billed: $3.63 = written calls $3.37 + requests billed without writing them"], 40)[:2]
    assert first.startswith("  Billed:") and second.startswith("    ") and len(first) <= 40


def _no_line_over(text: str, columns: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > columns]


def test_status_and_report_fit_80_columns(tmp_path):
    from tests.support.servicectl import running_service

    home, env = one_session_home(tmp_path, 30)
    narrow = {**env, "COLUMNS": "80"}
    report = ctl(narrow, "report", "--no-service")
    assert report.returncode == 0, report.stderr
    assert _no_line_over(report.stdout, 80) == []
    assert "Total tokens" in report.stdout and "Cache read" not in report.stdout
    wide = ctl({k: v for k, v in env.items() if k != "COLUMNS"}, "report", "--no-service")
    assert "Cache read" in wide.stdout  # a pipe without COLUMNS: the full table a script may read
    with running_service(env, Path(home)):
        status = ctl(narrow, "status", "--once")
    assert status.returncode == 0, status.stderr
    assert _no_line_over(status.stdout, 80) == []
    assert "rent so far" in status.stdout and "sweet spot" in status.stdout


def test_without_columns_a_pipe_is_not_limited(monkeypatch):
    from service.client.terminal import width

    monkeypatch.delenv("COLUMNS", raising=False)
    with open(os.devnull, "w") as pipe:
        assert width(pipe) is None
    monkeypatch.setenv("COLUMNS", "80")
    assert width() == 80
