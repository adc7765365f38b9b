"""The command line in the window's words, and seeing what `make run` plays.

`make run` on a machine without a display and without transcripts plays the demo with its own service
in a folder of its own; a user then types `ctxlamp status` and `ctxlamp report` in a second terminal,
with no CTXLAMP_HOME. Both must show the demo's session and spend, in docs/glossary.md's words. The
processes are the real ones (`python -m service.cli start --headless`, as `make run` runs `ctxlamp
start` without a display), paced faster than a person watches.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.corpus import ROOT

# identifiers that stay in --json, the API and docs/measurement.md (docs/glossary.md, its last section)
INTERNAL = ("critical", "xSweet", "laps", "@call", "old_string", "str_replace", "cost-state", "d3m0d3m0",
            "Pinch", "Retrieval", "segment", "bill_cycle", "dhat")
FIXTURES = ROOT / "tests" / "fixtures"


def internal_words(text: str) -> list[str]:
    return [w for w in INTERNAL if re.search(re.escape(w), text, re.IGNORECASE)]


def user_env(tmp: Path) -> dict:
    """A user's shell: their own home and folders, no display, no CTXLAMP_ or CLAUDE_ settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CTXLAMP_", "CLAUDE_", "XDG_")) and k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {**env, "HOME": str(home), "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}


def ctxlamp(args: list[str], env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service.cli", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


class Run:
    """`ctxlamp start --headless` as `make run` starts it without a display, its output kept."""

    def __init__(self, env: dict, tmp: Path, name: str) -> None:
        self.out_path, self.err_path = tmp / f"{name}.out", tmp / f"{name}.err"
        self.proc = subprocess.Popen([sys.executable, "-m", "service.cli", "start", "--headless", "--pace", "0.05"],
                                     env=env, cwd=ROOT, stdout=open(self.out_path, "w"),
                                     stderr=open(self.err_path, "w"), start_new_session=True)

    @property
    def out(self) -> str:
        return self.out_path.read_text()

    @property
    def err(self) -> str:
        return self.err_path.read_text()

    def wait_for(self, text: str, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.out:
            assert self.proc.poll() is None, (self.proc.returncode, self.out[-3000:], self.err[-3000:])
            assert time.monotonic() < deadline, (text, self.out[-3000:], self.err[-3000:])
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # as a closing terminal does: the service and the view stop too
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture
def played(tmp_path):
    env = user_env(tmp_path)
    runs: list[Run] = []

    def play(name: str) -> Run:
        run = Run(env, tmp_path, name)
        runs.append(run)
        return run

    yield env, play
    for run in runs:
        run.stop()


def test_status_and_report_in_a_second_shell_show_the_demo_make_run_plays(played):
    env, play = played
    run = play("first")
    run.wait_for("demo-project")  # the terminal view shows the demo's session
    deadline = time.monotonic() + 60
    while True:
        status = ctxlamp(["status", "--once"], env)
        if status.returncode == 0 and re.search(r"\$0\.\d*[1-9]", status.stdout):
            break  # some rent already
        assert time.monotonic() < deadline, (status.returncode, status.stdout, status.stderr)
        time.sleep(0.3)
    assert "demo-project" in status.stdout
    assert re.search(r"● (white|green|amber|red) ", status.stdout), status.stdout  # the lamp by its colour
    assert not internal_words(status.stdout), status.stdout
    run.wait_for("The demo has written its last call.")

    report = ctxlamp(["report"], env)
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert re.search(r"Date +Models +Input +Output +Cache write +Cache read +Total tokens +Cost", text), text
    day = re.search(r"^\d{4}-\d{2}-\d{2}  Sonnet 4\.5 .* \$(\d+\.\d\d)$", text, re.MULTILINE)  # as the window names it
    assert day and float(day.group(1)) > 1, text  # the demo's spend, on the day it played
    assert re.search(r"^Rent on dead weight: \$[1-9]", text, re.MULTILINE), text
    assert "Following every notice would have saved" in text and "Budgets:" in text
    assert "at the notice" not in text  # one figure for following the notices (decision 458)
    assert text.index("Rent on dead weight") < text.index("Savings channels")  # the channels after
    assert not internal_words(text), internal_words(text)

    ending = run.out[run.out.index("The demo has written its last call."):].splitlines()[0]
    assert re.search(r"Following every notice would have saved \$\d.*of the best in hindsight", ending), ending
    assert not internal_words(run.out), internal_words(run.out)
    assert not internal_words(run.err), run.err
    assert "Ctrl-C stops it" in run.err and "ctxlamp status" in run.err


def test_a_second_make_run_shows_the_demo_notice_again(played):
    _env, play = played
    # named as the window names it: the folder and when the session started (docs/glossary.md)
    notice = re.compile(r"Notice · demo-project · started today \d\d:\d\d: restart at your next break\.")
    for name in ("first", "second"):
        run = play(name)
        run.wait_for("The demo has written its last call.")
        assert notice.search(run.out), (name, run.out[-3000:])
        assert len(notice.findall(run.out)) == 1  # later reminders move the figures, they do not speak again
        run.stop()


def test_status_without_a_service_says_in_one_line_where_it_looked(tmp_path):
    proc = ctxlamp(["status", "--once"], user_env(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "make run" in proc.stderr and "demo" in proc.stderr, proc.stderr


def test_report_text_on_real_transcripts_says_the_glossary_words(tmp_path):
    """Claude Code's own transcripts (a compaction, subagents, edits, a model switch): the text says the
    glossary's words, and none of the identifiers."""
    env = user_env(tmp_path)
    found = sorted(FIXTURES.glob("claude-code-*/*/projects"))
    if not found:
        pytest.skip("tests/fixtures holds no Claude Code transcripts")
    config = Path(env["HOME"]) / ".config" / "ctxlamp" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[budgets]\ndaily_usd = 20\nmonthly_usd = 300\n")
    rents = []
    for projects in found:
        proc = ctxlamp(["report", "--no-service", "--no-cache", "--projects", str(projects)], env)
        assert proc.returncode == 0, proc.stderr
        assert not internal_words(proc.stdout), (projects, internal_words(proc.stdout))
        for word in ("Cache write", "Billed", "Rent on dead weight", "stretch", "Edits", "Trimming", "Search"):
            assert word in proc.stdout, (projects, word)
        assert re.search(r"^Budgets: daily \$\d+\.\d\d of \$20\.00 today \(\d+ %\); monthly \$\d+\.\d\d of "
                         r"\$300\.00 this month", proc.stdout, re.MULTILINE), proc.stdout
        rents.append(float(re.search(r"^Rent on dead weight: \$(\d+\.\d\d)", proc.stdout, re.MULTILINE).group(1)))
    assert max(rents) > 0  # the replay keeps each stretch's rent (no service here)


def test_every_help_text_says_the_glossary_words():
    from service.cli import COMMANDS

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    texts = {"ctxlamp": ctxlamp(["--help"], env).stdout}
    for name in COMMANDS:
        proc = ctxlamp([name, "--help"], env)
        assert proc.returncode == 0, (name, proc.stderr)
        texts[name] = proc.stdout
    for name, text in texts.items():
        assert not internal_words(text), (name, internal_words(text))
    assert "doctor" in texts["ctxlamp"]
    report = " ".join(texts["report"].split())
    for explained in ("lean-ctx (an editing tool", "code-search index", "rent on dead weight", "Trimming (tool"):
        assert explained in report, explained


def test_doctor_is_a_subcommand():
    proc = ctxlamp(["doctor", "--for-tests"], {**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("state, colour", [("warming", "white"), ("insufficient_data", "white"), ("good", "green"),
                                           ("warning", "amber"), ("critical", "red")])
def test_the_status_line_says_the_glossary_words(state, colour):
    from service.statusline.line import render

    line = render({"session": {"lamp": {"colour": colour, "state": state}, "dhat": -3.2, "bill_cycle_usd": 0.5},
                   "service": "up"}, color=False, now=0)
    assert line.startswith(f"{'●' if colour != 'white' else '○'} {colour}") and not internal_words(line), line
    if state in ("warming", "insufficient_data"):
        assert "warming up" in line, line  # the window's words for a white lamp


def test_the_demo_folder_is_emptied_for_each_run_and_a_planted_link_is_not_followed(tmp_path, monkeypatch):
    from service.cli.start import fresh_demo_home

    monkeypatch.setenv("CTXLAMP_HOME", str(tmp_path / "home"))
    old = tmp_path / "home" / "demo" / "ctxlamp"
    old.mkdir(parents=True)
    (old / "ctxlamp.db").write_text("the reminders of the last run")
    home = fresh_demo_home()
    assert home == tmp_path / "home" / "demo" and not home.exists()

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    home.symlink_to(precious, target_is_directory=True)
    assert fresh_demo_home() == home and not home.exists()
    assert (precious / "keep.txt").read_text() == "mine"
