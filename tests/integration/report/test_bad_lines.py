"""Bad transcript lines (garbage, torn writes, JSON that is not an object) are counted the same by the
report (with its replay, and without: a subagent's file) and by `ctxlamp replay`, and named by file in the
report and the service's log (issue 51)."""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st

from service.engine_setup.engines import load_prices, replay_file
from service.engine_setup.tokenizer import encode_len
from service.report.restart import Replay
from service.report.scan import SizeMemo, TranscriptFile, scan_chunks
from tests.support import transcripts as T
from tests.support.procs import ctl

GOOD = T.to_bytes(T.growing_session(8)).splitlines()
BAD = [b"garbage here", b"[1, 2, 3]", b'"a string"', b"42", b'{"type":"assistant", broken', b"{not json",
       b'{"message": {"id": "x"', b"null"]
PRICES = load_prices()


def _with_bad(picks: list[tuple[int, bytes]]) -> bytes:
    lines = list(GOOD)
    for at, bad in sorted(picks, key=lambda p: -p[0]):
        lines.insert(at % (len(lines) + 1), bad)
    return b"\n".join(lines) + b"\n"


def _replay_count(path: Path) -> int:
    return next(ev for ev in replay_file(str(path), PRICES) if ev["event"] == "end")["skipped_lines"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.sampled_from(BAD)), max_size=5))
def test_the_report_counts_what_replay_counts(tmp_path_factory, picks):
    path = tmp_path_factory.mktemp("bad") / "s.jsonl"
    data = _with_bad(picks)
    path.write_bytes(data)
    main = TranscriptFile(str(path), "-p", False, "s")
    with_replay = scan_chunks([data], main, SizeMemo(), encode_len, replay=Replay(str(path), PRICES))
    subagent = TranscriptFile(str(path), "-p", True, "s")
    alone = scan_chunks([data], subagent, SizeMemo(), encode_len)
    assert with_replay["malformed"] == alone["malformed"] == _replay_count(path) == len(picks)


def test_the_report_names_the_file_and_the_service_s_log_too(tmp_path):
    from tests.support.harness import one_session_home, wait_for
    from tests.support.servicectl import running_service

    home, env = one_session_home(tmp_path, 6)
    (session,) = (tmp_path / "claude" / "projects").rglob("*.jsonl")
    session.write_bytes(_with_bad([(3, b"garbage here"), (5, b"[1, 2, 3]")]))
    out = ctl(env, "report", "--no-service")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "lines that are not JSON objects, skipped: 2 in transcripts" in text
    assert f"2 lines in {session}" in text
    log = home / "service.log"
    with running_service(env, home):
        wait_for(lambda: str(session) in log.read_text() and "not JSON objects" in log.read_text(), 30,
                 "the log naming the file")
