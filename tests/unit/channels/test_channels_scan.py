"""The transcript scanner: layout discovery, byte-level skipping, the process pool and the cache."""
from __future__ import annotations

import io

import pytest

from service.report.scan import (ProgressPrinter, ScanCache, SizeMemo, TranscriptFile, discover, scan,
                                   scan_bytes)
from service.engine_setup.tokenizer import encode_len
from tests.support.channels import every_line_reference, fixture_file
from tests.support.corpus import fixture_tree, needs_real_fixtures, scenario_session
from tests.support.expected import EXPECTED, fixture_path, REAL_EXPECTED

# Every fixture transcript; the third-party ones run when they are beside the checkout.
KEYS = sorted(EXPECTED) + [pytest.param(k, marks=needs_real_fixtures) for k in sorted(REAL_EXPECTED)]


@pytest.mark.parametrize("key", KEYS)
def test_skipping_lines_before_parsing_changes_nothing(key):
    p = fixture_path(key)
    tf = fixture_file(p)
    got = scan_bytes(p.read_bytes(), tf, SizeMemo(), encode_len)
    events, calls, cost_state = every_line_reference(p.read_bytes(), tf)
    assert got["events"] == events
    assert got["calls"] == calls
    assert got["cost_state"] == cost_state


# Lines no Claude Code version wrote, but a line filter must not be fooled by: a nested message
# that looks like an assistant call, type keys inside strings, braces inside strings, junk.


def test_discover_knows_the_three_subagent_layouts(tmp_path):
    proj = tmp_path / "projects" / "-home-u-p"
    (proj / "sess1" / "subagents").mkdir(parents=True)
    for name in ("sess1.jsonl", "agent-ab12.jsonl", "sess1/subagents/agent-cd34.jsonl", "sess1/subagents/agent-cd34.meta.json"):
        (proj / name).write_text("")
    got = {(f.path.split("projects/")[1], f.subagent, f.session_hint, f.project) for f in discover(tmp_path / "projects")}
    assert got == {("-home-u-p/sess1.jsonl", False, "sess1", "-home-u-p"),
                   ("-home-u-p/agent-ab12.jsonl", True, "agent-ab12", "-home-u-p"),
                   ("-home-u-p/sess1/subagents/agent-cd34.jsonl", True, "sess1", "-home-u-p")}
    assert discover(tmp_path / "absent") == []


def test_cache_hits_unchanged_files_and_rescans_changed_ones(tmp_path):
    projects = fixture_tree(tmp_path)
    files = discover(projects)
    cache_file = tmp_path / "cache.json"
    c1 = ScanCache(cache_file)
    first = scan(files, c1, workers=1)
    c1.save()
    c = ScanCache(cache_file)                                    # a later run loads what the first saved
    assert not c.dirty and len(c.files) == len(files)
    calls = []
    second = scan(files, c, workers=1, progress=lambda *a: calls.append(a))
    assert second == first and calls == [] and not c.dirty       # nothing read again
    target = next(f for f in files if f.path.endswith(scenario_session("model-switch").name))
    with open(target.path, "ab") as fh:
        fh.write(b'{"type":"assistant","message":{"id":"msg_x","model":"claude-sonnet-4-5","content":[],'
                 b'"usage":{"input_tokens":1,"output_tokens":2}},"timestamp":"2026-11-29T21:00:00Z"}\n')
    third = scan(files, c, workers=1, progress=lambda *a: calls.append(a))
    assert [a[:2] for a in calls] == [(1, 1)]                    # exactly one file re-read
    assert len(third[target.path]["calls"]) == len(first[target.path]["calls"]) + 1


def test_malformed_lines_are_counted_but_an_unfinished_last_line_is_not():
    tf = TranscriptFile("/x.jsonl", "p", False, "x")
    good = b'{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":1}}}'
    broken = b'{"type":"assistant","message":{"id":"m2",'
    assert scan_bytes(good + b"\n" + broken + b"\n" + good + b"\n", tf, SizeMemo(), encode_len)["malformed"] == 1
    assert scan_bytes(good + b"\n" + broken, tf, SizeMemo(), encode_len)["malformed"] == 0


class FakeTty(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal_or_a_long_scan():
    quiet = io.StringIO()
    p = ProgressPrinter(quiet, after_s=60)
    p(1, 2, 10, 20)
    p(2, 2, 20, 20)
    assert quiet.getvalue() == ""
    tty = FakeTty()
    p = ProgressPrinter(tty)
    p(2, 2, 2_000_000, 2_000_000)
    p.finish()
    assert "2/2 files" in tty.getvalue()
    late = io.StringIO()
    p = ProgressPrinter(late, after_s=0)
    p(1, 1, 1, 1)
    assert "1/1 files" in late.getvalue()


def test_reading_in_pieces_gives_the_same_result_as_reading_whole():
    from service.report.scan import complete_buffers, scan_chunks
    p = scenario_session("subagent-and-compact")
    data = p.read_bytes()
    tf = TranscriptFile(str(p), "p", False, p.stem)
    whole = scan_bytes(data, tf, SizeMemo(), encode_len)
    pieces = scan_chunks((data[i:i + 777] for i in range(0, len(data), 777)), tf, SizeMemo(), encode_len)
    assert pieces == whole and whole["bytes"] == len(data)
    assert list(complete_buffers([b"a\nb", b"c\n", b"d"])) == [(b"a\nb", 2, True), (b"bc\n", 3, True), (b"d", 1, False)]
