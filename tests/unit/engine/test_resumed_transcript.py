"""A transcript an older Claude Code wrote on `--resume` opens with the earlier session's entries, copied under that
session's id, and goes on under its own (real-wild holds a chain of four). It is its own session, and the copies
are no calls of it: they were billed, and are measured, in the file they came from (decision 498)."""
from __future__ import annotations

import json
from pathlib import Path

from service.engine.session import own_session_id
from service.engine_setup.engines import replay_file
from tests.support.corpus import scenario_session
from tests.support.engine_runs import PRICES

RESUMED = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"


def _entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _resumed(original: Path, folder: Path, name: str) -> Path:
    """The original's entries as copies, then the same conversation again as the resumed session's own."""
    copies = _entries(original)
    own = []
    last_uuid = next(e["uuid"] for e in reversed(copies) if "uuid" in e)
    for e in _entries(original):
        e = json.loads(json.dumps(e).replace(original.stem, RESUMED))
        if "uuid" in e:
            e["uuid"] = "r-" + e["uuid"]
            e["parentUuid"] = "r-" + e["parentUuid"] if e.get("parentUuid") else last_uuid
        msg = e.get("message")
        if isinstance(msg, dict) and isinstance(msg.get("id"), str):
            msg["id"] = "r-" + msg["id"]
        if isinstance(e.get("requestId"), str):
            e["requestId"] = "r-" + e["requestId"]
        own.append(e)
    path = folder / name
    path.write_text("".join(json.dumps(e) + "\n" for e in copies + own), encoding="utf-8")
    return path


def _end(path: Path) -> dict:
    (end,) = [e for e in replay_file(path, PRICES) if e["event"] == "end"]
    return end


def _calls(path: Path) -> int:
    return sum(p["calls"] for p in _end(path)["segments"])


def test_a_resumed_transcript_is_its_own_session_and_counts_only_its_own_calls(tmp_path):
    original = scenario_session("long-session")
    assert own_session_id(str(original)) == original.stem  # the real CLI names its files this way
    resumed = _resumed(original, tmp_path, f"{RESUMED}.jsonl")
    end = _end(resumed)
    assert {p["session_id"] for p in end["segments"]} == {RESUMED}
    assert _calls(resumed) == _calls(original) > 0  # the copies add no call, the own ones all count


def test_a_file_not_named_as_a_session_keeps_its_first_entrys_session_and_every_call(tmp_path):
    original = scenario_session("long-session")
    renamed = _resumed(original, tmp_path, "exported-copy.jsonl")
    assert own_session_id(str(renamed)) is None
    end = _end(renamed)
    assert {p["session_id"] for p in end["segments"]} == {original.stem}
    assert _calls(renamed) == 2 * _calls(original)


def test_the_session_name_is_read_from_either_separator_and_only_in_claude_codes_form():
    assert own_session_id(rf"C:\Users\a\.claude\projects\p\{RESUMED}.jsonl") == RESUMED
    assert own_session_id(f"/home/a/.claude/projects/p/{RESUMED}.jsonl") == RESUMED
    assert own_session_id(f"/p/{RESUMED.upper()}.jsonl") is None
    assert own_session_id(f"/p/{RESUMED}.jsonl.bak") is None
    assert own_session_id(f"/p/agent-{RESUMED[:8]}.jsonl") is None


def test_before_its_first_entry_a_session_is_named_by_its_file_with_either_separator():
    """A live session's file can be read before Claude Code has written an entry naming it: its status then
    names the session its file name says, never a whole Windows path (decision 502)."""
    from service.engine_setup.engines import new_engine

    for folder in (r"C:\Users\a\.claude\projects\p", "/home/a/.claude/projects/p"):
        sep = "\\" if folder.startswith("C:") else "/"
        for name, expected in ((f"{RESUMED}.jsonl", RESUMED), ("exported-copy.jsonl", "exported-copy")):
            engine = new_engine(folder + sep + name, PRICES)
            assert engine.snapshot()["session_id"] == expected, (folder, name)
