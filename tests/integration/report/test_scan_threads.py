"""Scans on several threads of one process keep their own settings.

The service scans on several threads: its first pass on its own, a served report, the budgets or the
Overview on others. What one of them set up for its scans (`scan.init_worker`: the longest line it reads,
whether it replays, whether it counts its texts) was a module global, so another thread's set-up changed
what the first one read meanwhile.
"""
from __future__ import annotations

import threading

from service.engine.lines import DEFAULT_MAX_LINE
from service.report import scan
from tests.support.corpus import all_transcripts


def _longest_line(path) -> int:
    return max(len(line) for line in path.read_bytes().split(b"\n"))


def test_a_scan_keeps_its_own_settings_while_another_thread_sets_up_its_own():
    path = max(all_transcripts(), key=_longest_line)
    assert _longest_line(path) > 4096
    tf = scan.TranscriptFile(str(path), path.parent.name, False, path.stem)
    both_set_up = threading.Barrier(2)
    seen: dict[str, int] = {}

    def scan_with(name: str, max_line: int) -> None:
        scan.init_worker({}, max_line)
        both_set_up.wait(10)  # the other thread has set up its own scans by now
        _, result, _, _ = scan.scan_one(tf)
        seen[name] = result["long_lines"]

    threads = [threading.Thread(target=scan_with, args=("short", 4096)),
               threading.Thread(target=scan_with, args=("default", DEFAULT_MAX_LINE))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen["short"] > 0 and seen["default"] == 0
