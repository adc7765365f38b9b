"""Channel counts on the shared real and 2.1.328 fixtures, asserted exactly.

The expected numbers were counted with an independent script (plain `json`,
no ctxlamp code): pair every tool_use id with its tool_result block; an
Edit/MultiEdit result without is_error is a success; an error whose text has
"to replace not found" is not_found, "matches of the string" ambiguous, any
other error "other"; Grep/Glob calls are tool_use blocks that got a result;
compactions are system entries with subtype compact_boundary; calls are the
distinct message.id (fallback requestId) of non-<synthetic> assistant lines
with usage; placeholder calls fold lines by key keeping the largest total and
count output_tokens <= 1 with a non-empty text/thinking/tool_use block.
The edit error columns agree with fixtures/real/SOURCES.md ("Edit errors";
Write errors are not edits).
"""
from __future__ import annotations

from collections import Counter
import pytest

from service.report.scan import SizeMemo, TranscriptFile, scan_bytes
from service.channels.spend import is_placeholder_output
from service.measure.tokenizer import encode_len
from tests.conftest import FIXTURES

# file -> (edits ok, not_found, ambiguous, other errors, compactions, Grep, Glob, calls, placeholder calls)
EXPECTED = {
    "claude-code-2.1.328/clear-then-continue/projects/-home-user-demo-project/0799481d-2f4a-40f9-a837-d4cf1008277d.jsonl": (0, 0, 0, 0, 0, 0, 0, 2, 0),
    "claude-code-2.1.328/clear-then-continue/projects/-home-user-demo-project/a5420407-aa5d-48b8-989d-91cdaadddc96.jsonl": (0, 0, 0, 0, 0, 0, 0, 2, 0),
    "claude-code-2.1.328/long-session/projects/-home-user-demo-project/1cc6a7d3-f584-4511-8ff4-16733b67a4a0.jsonl": (6, 0, 0, 5, 1, 7, 4, 65, 0),
    "claude-code-2.1.328/refactor-with-compact/projects/-home-user-demo-project/f3439bd2-d8ed-4517-8f6c-f5ba1893a2b2.jsonl": (2, 1, 1, 0, 1, 1, 1, 15, 0),
    "claude-code-2.1.328/refactor-with-compact/projects/-home-user-demo-project/f3439bd2-d8ed-4517-8f6c-f5ba1893a2b2/subagents/agent-a0c8021545334895e.jsonl": (0, 0, 0, 0, 0, 0, 1, 3, 0),
    "real/chiphuyen-sniffly/d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl": (16, 1, 0, 0, 0, 0, 0, 62, 6),
    "real/d-kimuson-claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (3, 0, 0, 8, 0, 0, 2, 170, 2),
    "real/iansherr-claude-code-log/-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl": (16, 1, 0, 1, 0, 3, 2, 36, 0),
    "real/iansherr-claude-code-log/-Users-dain-workspace-claude-code-log-sample/937c6e6b-27e7-4edd-86f1-ad28f9731841.jsonl": (10, 0, 3, 0, 0, 2, 0, 28, 9),
    "real/iansherr-claude-code-log/-Users-dain-workspace-coderabbit-review-helper/agent-ea02459f.jsonl": (0, 0, 0, 0, 0, 0, 7, 5, 0),
    "real/iansherr-claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl": (0, 0, 0, 0, 0, 0, 0, 17, 0),
    "real/iansherr-claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl": (4, 0, 0, 0, 0, 0, 0, 20, 1),
}


def scan_fixture(rel: str) -> dict:
    p = FIXTURES / rel
    sub = "subagents" in p.parts or p.name.startswith("agent-")
    return scan_bytes(p.read_bytes(), TranscriptFile(str(p), "p", sub, p.stem), SizeMemo(), encode_len)


def test_every_fixture_transcript_is_listed():
    found = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.jsonl")
             if p.name not in ("api.jsonl", "results.jsonl")}
    assert found == set(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_fixture_counts(rel):
    r = scan_fixture(rel)
    ok, nf, amb, other, comp, grep, glob, calls, placeholder = EXPECTED[rel]
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


def test_refactor_fixture_compaction_and_old_string_tokens():
    r = scan_fixture("claude-code-2.1.328/refactor-with-compact/projects/-home-user-demo-project/"
                     "f3439bd2-d8ed-4517-8f6c-f5ba1893a2b2.jsonl")
    comp = [e["data"] for e in r["events"] if e["kind"] == "compaction"]
    # compactMetadata: preTokens 60634, postTokens 2872 -> 57762 saved (equals its cumulativeDroppedTokens)
    assert [(c["original_tokens"], c["final_tokens"], c["tokens_saved"]) for c in comp] == [(60634, 2872, 57762)]
    # the two successful edits quote these old_strings (read from the fixture by hand)
    olds = ["def clamp(v, lo, hi):\n    return max(lo, min(hi, v))", "    return {'size': size}"]
    edits = [e["data"]["old_string_tokens"] for e in r["events"] if e["kind"] == "str_replace"]
    assert edits == [encode_len(s) for s in olds]


def test_misses_total_matches_sources_md_edit_errors():
    # SOURCES.md: not found 1 (JSSoundRecorder) + 1 (sniffly); ambiguous 3 (claude-code-log-sample);
    # 2.1.328 refactor-with-compact adds one of each.
    totals = Counter()
    for rel in EXPECTED:
        for e in scan_fixture(rel)["events"]:
            if e["kind"] == "str_replace_miss":
                totals[e["data"]["miss"]] += 1
    assert totals == {"not_found": 3, "ambiguous": 4}

