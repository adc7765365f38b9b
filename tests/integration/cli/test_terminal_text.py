"""Names from transcripts never reach a terminal raw, nor a rich-text label as markup (issue 25, attack 2).

A transcript whose project (cwd) and model hold a title-setting OSC (`ESC ] 0 ; … BEL`), a screen clear
(`ESC [ 2 J`), an OSC 52 clipboard write and a C1 CSI is read by `ctxlamp replay`, `report`, `status`;
the status line renders a format with control codes; the hook quotes a handoff's task.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import transcripts as T
from tests.support.corpus import ROOT
from tests.support.harness import service_env

TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
C1 = "\x9b2J"
EVIL_MODEL = f"claude-sonnet-4-5{TITLE}{CLEAR}"
EVIL_CWD = f"/home/u/proj{TITLE}{CLIPBOARD}{C1}{CLEAR}"
RAW = [b"\x1b", b"\x07", "\x9b".encode()]


def evil_transcript(path: Path) -> Path:
    entries = T.growing_session(12, model=EVIL_MODEL)
    for e in entries:
        if "cwd" in e:
            e["cwd"] = EVIL_CWD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(T.to_bytes(entries))
    return path


def assert_clean(out: bytes) -> None:
    for raw in RAW:
        assert raw not in out, (raw, out[:2000])


@pytest.fixture
def env(tmp_path):
    home, claude = tmp_path / "ctx", tmp_path / "claude"
    home.mkdir()
    evil_transcript(claude / "projects" / "-home-u-proj" / f"{T.SID}.jsonl")
    out = service_env(home, claude, NO_COLOR="1")
    return out


def ctxlamp(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT, capture_output=True,
                          timeout=120, check=False)


def test_replay_table_prints_the_model_without_its_escape_codes(env):
    path = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-u-proj" / f"{T.SID}.jsonl"
    proc = ctxlamp(["replay", str(path)], env)
    assert proc.returncode == 0, proc.stderr
    assert b"claude-sonnet-4-5]0;owned[2J" in proc.stdout  # the name is shown, its controls are not
    assert_clean(proc.stdout)
    assert_clean(proc.stderr)


@pytest.mark.parametrize("form", [[], ["--csv"]])
def test_report_prints_model_names_without_their_escape_codes(env, form):
    proc = ctxlamp(["report", *form], env)
    assert proc.returncode == 0, proc.stderr
    # the CSV keeps the id (its controls removed); the text names the model as the window does
    assert (b"claude-sonnet-4-5]0;owned[2J" if form else b"Sonnet 4 ") in proc.stdout
    assert_clean(proc.stdout)


def test_status_prints_the_project_without_its_escape_codes(env):
    from tests.support.servicectl import running_service

    with running_service(env, Path(env["CTXLAMP_HOME"])):
        proc = ctxlamp(["status", "--once"], env)
    assert proc.returncode == 0, proc.stderr
    assert b"proj]0;owned]52;c;cm0gLXJmIH4=2J[2J" in proc.stdout  # the project folder: shown, its controls not
    assert_clean(proc.stdout)


def test_status_render_strips_controls_from_every_field():
    from service.cli.status import render

    status = {"service": {"pid": 1, "observer": f"inotify{CLEAR}", "db": {"ok": False, "error": f"x{TITLE}"}},
              "sessions": [{"session_id": f"{CLEAR}abc", "project": EVIL_CWD, "lamp": {"colour": "red",
                            "state": f"critical{CLEAR}"}, "laps": 1}]}
    text = render(status, tty=False)
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "critical[2J" in text


def test_the_status_line_never_prints_control_codes_of_its_format():
    from service.statusline.line import render

    facts = {"session": {"lamp": {"colour": "green", "state": "good"}, "dhat": 3, "bill_cycle_usd": 0.5},
             "service": "up"}
    line = render(facts, f"{{lamp}} {CLIPBOARD}{CLEAR}{C1} | rent {{rent}}", color=False)
    assert line.startswith("● green") and "rent $0.50" in line
    assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line
    coloured = render(facts, "{lamp}" + CLEAR, color=True)  # its own colour codes stay, the format's go
    assert coloured == "\x1b[32m● green\x1b[0m[2J"


def test_the_hook_quotes_a_handoff_task_without_control_codes():
    from service.claude.hook import handoff_reminder, rotation_fallback

    text = handoff_reminder([{"token": "tok_1", "task": f"fix it{CLIPBOARD}{CLEAR}", "created_at": None}])
    assert "tok_1" in text and "fix it" in text and "\x1b" not in text and "\x07" not in text
    text = rotation_fallback(f"sid{CLEAR}", f"the service said {TITLE}")
    assert "\x1b" not in text and "\x07" not in text


# ---- the window: a name with markup shows as written -------------------------------------------

NAME = "<b>bold<b><img src='hosts.png'>"   # a folder name: no slash
MARKUP = "/home/u/" + NAME


def rendered(label) -> str:
    """What a label shows: its text as Qt lays it out (rich text parsed, plain text as is)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QTextDocument

    if label.textFormat() == Qt.PlainText:
        return label.text()
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def test_a_project_with_markup_shows_literally_in_the_session_title(qtbot):
    from desktop.window import SessionTab

    tab = SessionTab()
    qtbot.addWidget(tab)
    snap = {"session_id": T.SID, "project": MARKUP + TITLE, "lamp": {"colour": "green", "state": "good"},
            "x": 1.2, "xSweet": 2.0, "dhat": 3, "started_at": "2026-11-29T09:00:00Z"}
    tab.show_snapshot(snap)
    shown = rendered(tab.title)
    assert f"{NAME}]0;owned · started " in shown and "\x1b" not in shown
    tab.show_ended({"session_id": T.SID, "project": MARKUP, "usd": 1.0, "calls": 3}, [])
    assert NAME in rendered(tab.title)


def test_the_reminder_popup_shows_markup_as_written(qtbot):
    from desktop.widgets.popup import ReminderPopup

    popup = ReminderPopup()
    qtbot.addWidget(popup)
    popup.show_message(f"Restart pays in {MARKUP}", f"<i>{MARKUP}</i>")
    assert rendered(popup.title) == f"Restart pays in {MARKUP}"
    assert rendered(popup.body) == f"<i>{MARKUP}</i>"


def test_html_text_escapes_and_strips():
    from service.client.textsafe import html_text, printable

    assert html_text("<b>x</b>" + CLEAR) == "&lt;b&gt;x&lt;/b&gt;[2J"
    assert printable("a\u202eb\nc") == "ab c"
    assert json.dumps(printable("x" * 500)).count("x") == 199


def test_a_project_with_markup_shows_literally_in_the_overviews_tooltip(qtbot):
    from PySide6.QtGui import QTextDocument

    from desktop.connection.datasource import DemoSource
    from desktop.tabs.overview import OverviewTab

    src = DemoSource()
    tab = OverviewTab(src)
    qtbot.addWidget(tab)
    doc = src.overview(7)
    doc["sessions"][0]["project"] = MARKUP + CLEAR
    tab.show_overview(doc, src.status())
    tip = QTextDocument()
    tip.setHtml(tab.sessions.item(0, 0).toolTip())
    assert f"In {MARKUP}[2J" in tip.toPlainText()
    assert tab.sessions.item(0, 0).text().startswith(NAME)  # the table cell: plain text as written


def test_status_ending_words_print_the_services_figures_without_escape_codes():
    """`first_reminder_call` and `best_call` come from the service: printed as text, they are filtered."""
    from service.cli.status import ending_words, render

    snap = {"session_id": "s", "restart_savings": {"first_reminder_call": f"3{CLIPBOARD}{TITLE}",
                                                   "first_reminder_usd": 1.5, "best_call": f"9{CLEAR}{C1}",
                                                   "best_usd": f"2{CLEAR}"}}
    for text in (ending_words(snap), render({"sessions": [snap], "followed": "s"}, tty=False)):
        assert_clean(text.encode())
    assert "after call 3" in ending_words(snap) and "after call 9" in ending_words(snap)
    # with the session's schedule: the report's words for following its notices (decision 458)
    snap["restart_savings"]["schedule"] = {"best_usd": 2.0, "followed_usd": 1.5}
    assert ending_words(snap) == "Following every notice would have saved $1.50, 75 % of the best in hindsight (estimate)."
    snap["restart_savings"]["schedule"] = {"best_usd": f"2{CLEAR}", "followed_usd": 1.5}
    assert_clean(ending_words(snap).encode())
    assert "after call 3" in ending_words(snap)


def test_calibrate_names_a_skipped_path_without_its_escape_codes(tmp_path, ctx_home):
    folder = tmp_path / f"proj{TITLE}{CLIPBOARD}{C1}"
    folder.mkdir()
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")  # unreadable: calibrate names it and goes on
    out = subprocess.run([sys.executable, "-m", "service.cli", "calibrate", str(folder)], cwd=ROOT,
                         capture_output=True, timeout=120)
    assert b"skipped" in out.stderr and b"loop.jsonl" in out.stderr
    assert_clean(out.stdout + out.stderr)
