"""Read the --demo screenshots as a user would: rendered on a real X server (Xvfb), read back with tesseract.

No field names, reprs or JSON may show on screen: snake_case words that are not
part of a file path, a dict's `{'` or `":`, `[]`, `{}`, None, True, False, and
the API's own field names. The pictures must also say what the window is for
(the Overview's captions are read back), so an OCR that reads nothing fails.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from service.cli.doctor import diagnose
from tests.support.corpus import ROOT

MISSING = [tool for tool in ("Xvfb", "tesseract") if shutil.which(tool) is None]
XCB = diagnose("xcb", try_qt=False)  # the system libraries Qt's xcb plugin needs, named by the doctor
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"{' and '.join(MISSING)} not installed "
                                             "(.ci/run installs xvfb and tesseract-ocr)"),
    pytest.mark.skipif(not XCB.ok, reason=f"the screenshots need Qt's xcb platform: {XCB.text()}"),
]

FIELD_NAMES = ("totalStock", "xSweet", "bill_cycle", "share_pinched", "bytes_saved", "bytes_served", "eps_amber",
               "eps_crit", "g_floor", "old_string", "min_gap", "store_prompts", "live_hours", "str_replace",
               "tokens_saved", "L_peak", "end_reason", "rent_usd", "kind:")
REPRS = (re.compile(r"\{\s*['\"]"), re.compile(r"['\"]\s*:\s"), re.compile(r"\[\]"), re.compile(r"\{\}"),
         re.compile(r"\b(None|True|False)\b"))
SNAKE = re.compile(r"^[A-Za-z]+(?:_[A-Za-z0-9]+)+$")


@pytest.fixture(scope="module")
def ocr(tmp_path_factory) -> dict[str, str]:
    """OCR text of every window tab (light and dark) and the reminder popups, by file name."""
    out = tmp_path_factory.mktemp("xshots")
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as fh:
            display = fh.readline().strip()
        assert display, "Xvfb did not report its display"
        env = {**os.environ, "DISPLAY": f":{display}", "QT_QPA_PLATFORM": "xcb", "CTXLAMP_HOME": str(out / "home")}
        r = subprocess.run([sys.executable, "-m", "service.cli", "screenshot", "--out", str(out), "--demo"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    finally:
        xvfb.send_signal(signal.SIGTERM)
        xvfb.wait(10)
    texts = {}
    for png in sorted(out.glob("window-*.png")) + sorted(out.glob("reminder-popup*.png")):
        r = subprocess.run(["tesseract", str(png), "-"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        texts[png.name] = r.stdout
    return texts


def identifiers(text: str) -> list[str]:
    """What on screen reads like code rather than words."""
    found = []
    for token in text.split():
        word = token.strip(".,;:()[]{}'\"|!?")
        if SNAKE.match(word) and "/" not in token and "." not in word:
            found.append(word)
    for pattern in REPRS:
        found += pattern.findall(text)
    found += [name for name in FIELD_NAMES if name in text]
    return found


def test_every_tab_light_and_dark_was_read(ocr):
    tabs = ("overview", "session", "edits", "pinch", "retrieval", "history", "files", "settings")
    assert {f"window-{t}{m}.png" for t in tabs for m in ("", "-dark")} <= set(ocr)
    assert "reminder-popup-before-amber.png" in ocr


@pytest.mark.parametrize("mode", ["", "-dark"])
def test_the_overview_reads_as_words(ocr, mode):
    text = " ".join(ocr[f"window-overview{mode}.png"].split())
    for phrase in ("Spent", "Estimated", "Rent", "Notices save", "Most expensive sessions",
                   "Live sessions", "replace edits"):
        assert phrase in text, (phrase, text)


def test_no_identifiers_or_reprs_on_screen(ocr):
    bad = {name: identifiers(text) for name, text in ocr.items()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_notice_before_amber_agrees_with_the_green_lamp(ocr):
    text = " ".join(ocr["reminder-popup-before-amber.png"].split())
    # OCR may read a stray mark where a line wraps ("The lamp is. green"): the words are what is checked
    assert "restart at your next break" in text and re.search(r"The lamp is\W{0,3} green", text) and "sweet spot" in text
