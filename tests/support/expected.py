"""What the fixture transcripts hold, counted from the scenarios that made them (tests/fakeapi/scenarios/) and,
for the third-party transcripts, from their sources: edits, misses, compactions, searches, calls."""
from __future__ import annotations

from pathlib import Path

from tests.support.corpus import CC, REAL_FIXTURES, scenario_session, scenario_sessions

# fixture -> (edits ok, not_found, ambiguous, other errors, compactions, Grep, Glob, calls, placeholder calls)
EXPECTED = {
    "clear:1": (0, 0, 0, 0, 0, 0, 0, 2, 0),
    "clear:2": (0, 0, 0, 0, 0, 0, 0, 2, 0),
    "long-session": (4, 0, 0, 0, 1, 19, 0, 67, 0),
    "model-switch": (1, 0, 0, 0, 0, 0, 0, 8, 0),
    "subagent-and-compact": (2, 0, 0, 0, 1, 0, 0, 9, 0),
    "subagent-and-compact:subagent": (0, 0, 0, 0, 0, 0, 1, 3, 0),
    "tools-and-edits": (2, 1, 1, 1, 0, 2, 1, 12, 0),
}
REAL_EXPECTED = {
    "real/chiphuyen-sniffly/d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl": (16, 1, 0, 0, 0, 0, 0, 62, 6),
    "real/d-kimuson-claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (3, 0, 0, 8, 0, 0, 2, 170, 2),
    "real/iansherr-claude-code-log/-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl": (16, 1, 0, 1, 0, 3, 2, 36, 0),
    "real/iansherr-claude-code-log/-Users-dain-workspace-claude-code-log-sample/937c6e6b-27e7-4edd-86f1-ad28f9731841.jsonl": (10, 0, 3, 0, 0, 2, 0, 28, 9),
    "real/iansherr-claude-code-log/-Users-dain-workspace-coderabbit-review-helper/agent-ea02459f.jsonl": (0, 0, 0, 0, 0, 0, 7, 5, 0),
    "real/iansherr-claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl": (0, 0, 0, 0, 0, 0, 0, 17, 0),
    "real/iansherr-claude-code-log/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl": (4, 0, 0, 0, 0, 0, 0, 20, 1),
}


def fixture_path(key: str, corpus: Path = CC) -> Path:
    """A fixture transcript by its name in EXPECTED / REAL_EXPECTED (the scenarios from `corpus`, a CLI version's)."""
    if key.startswith("real/"):
        return REAL_FIXTURES / key.removeprefix("real/")
    name, _, part = key.partition(":")
    if part == "subagent":
        (path,) = (corpus / name / "projects").glob("*/*/subagents/agent-*.jsonl")
        return path
    return scenario_sessions(name, corpus)[int(part) - 1] if part else scenario_session(name, corpus)
