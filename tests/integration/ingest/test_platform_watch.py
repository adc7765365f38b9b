"""The watcher seam: watchdog's native observer for the system, polling only where it fails,
and then the reason in the log, on stderr and in `kind`/`reason` (which the status shows)."""
from __future__ import annotations

import errno
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from watchdog.observers.polling import PollingObserver

from service.ingest import watch
from service.ingest.watch import Watcher, native_observer
from tests.support.harness import wait_for


def _follow(w: Watcher, folder: Path, seen: list[tuple[str, bool]]) -> None:
    (folder / "a.jsonl").write_text("{}\n")
    wait_for(lambda: ("a.jsonl", True) in seen, timeout=10, what="the observer to see the file")


def test_the_native_observer_of_this_system_is_used(tmp_path):
    cls, why = native_observer()
    if cls is None:
        pytest.skip(f"no native observer in this interpreter: {why}")
    seen: list[tuple[str, bool]] = []
    w = Watcher(tmp_path, lambda p, created: seen.append((p.name, created)))
    w.start()
    try:
        assert w.kind == watch.KINDS[cls.__name__] and w.reason is None
        if sys.platform.startswith("linux"):
            assert w.kind == "inotify"
        _follow(w, tmp_path, seen)
    finally:
        w.stop()


def test_no_native_observer_polls_and_says_why(tmp_path, capsys, caplog):
    seen: list[tuple[str, bool]] = []
    w = Watcher(tmp_path, lambda p, created: seen.append((p.name, created)),
                native=lambda: (None, "watchdog has no native observer on this system (testos)"))
    with caplog.at_level(logging.WARNING, logger="ctxlamp.service"):
        w.start()
    try:
        assert (w.kind, w.reason) == ("polling", "watchdog has no native observer on this system (testos)")
        assert capsys.readouterr().err.count("testos") == 1
        assert [r.getMessage() for r in caplog.records if "testos" in r.getMessage()]
        _follow(w, tmp_path, seen)
    finally:
        w.stop()


class _RefusingObserver:
    """A native observer whose start fails as FSEvents or ReadDirectoryChangesW may (access denied)."""
    __name__ = "FSEventsObserver"
    stopped = False

    def schedule(self, *a: Any, **k: Any) -> None:
        pass

    def start(self) -> None:
        raise PermissionError(errno.EACCES, "access denied")

    def stop(self) -> None:
        _RefusingObserver.stopped = True


def test_a_native_observer_that_fails_to_start_falls_back_with_its_error(tmp_path, capsys):
    refusing = type("FSEventsObserver", (_RefusingObserver,), {})
    w = Watcher(tmp_path, lambda p, created: None, native=lambda: (refusing, None))
    w.start()
    try:
        assert w.kind == "polling" and w.reason == "fsevents failed: [Errno 13] access denied"
        assert _RefusingObserver.stopped
        assert "fsevents failed" in capsys.readouterr().err
    finally:
        w.stop()


def test_out_of_inotify_watches_names_the_setting():
    assert "max_user_watches" in watch.why_failed(OSError(errno.ENOSPC, "x"), "inotify")
    assert watch.why_failed(OSError(errno.ENOSPC, "x"), "windows") == "windows failed: [Errno 28] x"


def test_when_watchdog_picks_polling_the_reason_names_the_system(monkeypatch):
    import watchdog.observers

    monkeypatch.setattr(watchdog.observers, "Observer", PollingObserver)
    cls, why = native_observer()
    assert cls is None and why == f"watchdog has no native observer on this system ({sys.platform})"


def test_when_the_native_module_cannot_load_the_reason_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "watchdog.observers", None)
    cls, why = native_observer()
    assert cls is None and why is not None and "cannot be loaded" in why


def test_forced_polling_says_so(tmp_path):
    w = Watcher(tmp_path, lambda p, created: None, force_polling=True)
    w.start()
    try:
        assert (w.kind, w.reason) == ("polling", "polling forced (CTXLAMP_POLLING)")
    finally:
        w.stop()


def test_readers_of_a_transcript_cost_the_watcher_nothing_and_writers_still_reach_it(tmp_path, monkeypatch):
    """Every reader of a transcript (the first pass's workers, `ctxlamp report`, Claude Code itself) opens and
    closes it: those events must not be asked of the system at all, while a write, a new file, a move and a
    removal still are."""
    dispatched: list[str] = []
    real_dispatch = watch._Handler.dispatch
    monkeypatch.setattr(watch._Handler, "dispatch", lambda self, ev: (dispatched.append(ev.event_type),
                                                                       real_dispatch(self, ev)))
    (tmp_path / "p").mkdir()
    transcript = tmp_path / "p" / "a.jsonl"
    transcript.write_text("{}\n")
    seen: list[tuple[str, bool]] = []
    w = Watcher(tmp_path, lambda p, created: seen.append((p.name, created)))
    w.start()
    try:
        for _ in range(50):
            transcript.read_bytes()
        with transcript.open("a") as fh:
            fh.write("{}\n")
        wait_for(lambda: ("a.jsonl", False) in seen, timeout=10, what="the write to reach the watcher")
        transcript.rename(tmp_path / "p" / "b.jsonl")
        wait_for(lambda: ("b.jsonl", True) in seen, timeout=10, what="the move to reach the watcher")
        (tmp_path / "p" / "b.jsonl").unlink()
        wait_for(lambda: ("b.jsonl", False) in seen, timeout=10, what="the removal to reach the watcher")
    finally:
        w.stop()
    assert not {"opened", "closed_no_write", "closed"} & set(dispatched), dispatched
