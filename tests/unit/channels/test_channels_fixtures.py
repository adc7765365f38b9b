"""Channel counts on the project's own 2.1.328 fixtures (and the third-party ones when present), exactly.

Expected numbers for our fixtures come from the scenarios that made them (tests/fakeapi/scenarios/*.json),
counted by hand from their steps, not from ctxlamp's output:
- tools-and-edits: step 3 edits util.py (ok), step 4 quotes `def median(xs):` (not found), step 6 quotes
  `    x = 0`, which dup.py holds twice (ambiguous), step 7 is the same with replace_all (ok), step 8 edits
  core.py, never read (refused: other); Grep at steps 1 and 2, Glob at step 1; 12 steps = 12 calls.
- subagent-and-compact: one Edit in TASK-A and one in TASK-B (ok), one /compact; TASK-A's 5 steps plus one
  answer to the subagent's completion notice, and TASK-B's 3 steps: 9 calls; the subagent: Glob, 3 calls.
- long-session: one Edit of config.py and six Grep calls in each of three turns of 21 steps, /compact, then
  a fourth turn of 4 steps with one Grep and one Edit: 4 edits, 19 Grep, 1 compaction, 67 calls.
- model-switch: one Edit, 3 + 3 + 2 steps; clear: 2 steps on each side of /clear.
The calls also agree with the fake API's own log (test_calls_agree_with_the_fake_apis_log).
Placeholder calls fold lines by key keeping the largest total, output_tokens <= 1 with a non-empty block:
the fake API never answers with fewer than 2 output tokens, so there are none.

The third-party rows were counted with an independent script (plain `json`): pair every tool_use id with
its tool_result; an Edit/MultiEdit result without is_error is a success; an error whose text has "to
replace not found" is not_found, "matches of the string" ambiguous, any other error "other"; calls are
the distinct message.id (fallback requestId) of non-<synthetic> assistant lines with usage.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from service.report.scan import SizeMemo, TranscriptFile, scan_bytes
from service.channels.spend import is_placeholder_output
from service.engine_setup.tokenizer import encode_len
from tests.support.corpus import CC, CLI_CORPORA, FIXTURES, all_transcripts, needs_real_fixtures, scenario_session
from tests.support.expected import EXPECTED, REAL_EXPECTED, fixture_path

def scan_fixture(key: str, corpus: Path = CC) -> dict:
    p = fixture_path(key, corpus)
    sub = "subagents" in p.parts or p.name.startswith("agent-")
    return scan_bytes(p.read_bytes(), TranscriptFile(str(p), "p", sub, p.stem), SizeMemo(), encode_len)


def test_every_fixture_transcript_is_listed():
    found = set(all_transcripts())
    assert found == {fixture_path(key) for key in EXPECTED}


def assert_counts(key: str, expected: tuple, corpus: Path = CC) -> None:
    r = scan_fixture(key, corpus)
    ok, nf, amb, other, comp, grep, glob, calls, placeholder = expected
    kinds = Counter((e["kind"], e["data"].get("miss") or e["data"].get("tool")) for e in r["events"])
    assert sum(v for (k, _), v in kinds.items() if k == "str_replace") == ok
    assert kinds[("str_replace_miss", "not_found")] == nf
    assert kinds[("str_replace_miss", "ambiguous")] == amb
    assert kinds[("str_replace_error", "other")] == other
    assert kinds[("compaction", None)] == comp
    assert kinds[("tool", "Grep")] == grep and kinds[("tool", "Glob")] == glob
    assert len(r["calls"]) == calls
    assert sum(is_placeholder_output(c) for c in r["calls"]) == placeholder
    assert r["malformed"] == 0


@pytest.mark.parametrize("version", sorted(CLI_CORPORA))
@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_fixture_counts(key, version):
    """The counts follow from the scenario alone, so every Claude Code version must give the same."""
    assert_counts(key, EXPECTED[key], CLI_CORPORA[version])


@needs_real_fixtures
@pytest.mark.parametrize("key", sorted(REAL_EXPECTED))
def test_third_party_fixture_counts(key):
    assert_counts(key, REAL_EXPECTED[key])


def read_api_log(name: str, corpus: Path = CC) -> list[dict]:
    return [json.loads(line) for line in (corpus / name / "api.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("version", sorted(CLI_CORPORA))
@pytest.mark.parametrize("name", sorted({key.partition(":")[0] for key in EXPECTED}))
def test_calls_agree_with_the_fake_apis_log(name, version):
    """Every answer the fake API gave is a call in a transcript, but the compaction summary (Claude Code
    keeps that as the next user entry, not as an assistant message)."""
    corpus = CLI_CORPORA[version]
    log = read_api_log(name, corpus)
    answered = {line["id"] for line in log if line["kind"] != "compaction"}
    calls = {c[0] for key in EXPECTED if key.partition(":")[0] == name  # c[0]: the message id
             for c in scan_fixture(key, corpus)["calls"]}
    assert calls == answered
    assert sum(EXPECTED[key][7] for key in EXPECTED if key.partition(":")[0] == name) == len(answered)


def test_compaction_and_old_string_tokens_follow_the_scenario():
    r = scan_fixture("subagent-and-compact")
    path = scenario_session("subagent-and-compact")
    (meta,) = [e["compactMetadata"] for e in map(json.loads, path.read_text().splitlines())
               if e.get("type") == "system" and e.get("subtype") == "compact_boundary"]
    comp = [e["data"] for e in r["events"] if e["kind"] == "compaction"]
    assert [(c["original_tokens"], c["final_tokens"], c["tokens_saved"]) for c in comp] == \
        [(meta["preTokens"], meta["postTokens"], meta["preTokens"] - meta["postTokens"])]
    scenario = json.loads((FIXTURES.parent / "fakeapi" / "scenarios" / "subagent-and-compact.json").read_text())
    olds = [step["input"]["old_string"] for conv in scenario["script"]["conversations"] for step in conv["steps"]
            if step.get("tool") == "Edit"]
    edits = [e["data"]["old_string_tokens"] for e in r["events"] if e["kind"] == "str_replace"]
    assert edits == [encode_len(s) for s in olds] and len(olds) == 2


def test_misses_total_matches_the_scenarios_edit_misses():
    totals = Counter()
    for key in EXPECTED:
        for e in scan_fixture(key)["events"]:
            if e["kind"] == "str_replace_miss":
                totals[e["data"]["miss"]] += 1
    assert totals == {"not_found": 1, "ambiguous": 1}  # tools-and-edits, steps 4 and 6


@needs_real_fixtures
def test_third_party_misses_match_sources_md_edit_errors():
    # SOURCES.md: not found 1 (JSSoundRecorder) + 1 (sniffly); ambiguous 3 (claude-code-log-sample)
    totals = Counter()
    for key in REAL_EXPECTED:
        for e in scan_fixture(key)["events"]:
            if e["kind"] == "str_replace_miss":
                totals[e["data"]["miss"]] += 1
    assert totals == {"not_found": 2, "ambiguous": 3}
