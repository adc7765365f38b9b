"""Turn one transcript line into a dict, or say why not.

Only lines that are not JSON objects count as malformed. Entry types the engine
never reads (attachments, request blobs, snapshots) are recognised from the
line's opening bytes and skipped before a full JSON parse.
"""
from __future__ import annotations

import re
from typing import Any

import orjson

Entry = dict[str, Any]  # a transcript entry as Claude Code wrote it


class Malformed(ValueError):
    """A line that is not a JSON object (corrupt, truncated, binary)."""


# A line that *starts* with one of these top-level types carries no usage, no
# tool data and no reset, so its (often large) body need not be parsed.
_SKIP_PREFIX = re.compile(
    rb'^\s*\{\s*"type"\s*:\s*"(?:api-request(?:-shape|-blob)?|file-history-snapshot|queue-operation'
    rb'|progress|attachment|permission-mode|mode|last-prompt|tools-used|atis-latch|cost-state|summary)"'
)

# The same rule for a line that starts at `pos` inside a larger buffer (SKIP_AT.match(buffer, pos, end)):
# a reader that walks a buffer of lines need not copy out those it would hand to parse_line for nothing.
SKIP_AT = re.compile(_SKIP_PREFIX.pattern.removeprefix(b"^"))


def parse_line(line: bytes) -> Entry | None:
    """The entry of one line; None for a line of a type no reader needs."""
    if _SKIP_PREFIX.match(line):
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise Malformed(str(exc)) from None
    if not isinstance(obj, dict):
        raise Malformed(f"not a JSON object: {type(obj).__name__}")
    return obj


COMMAND_ECHOES = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-caveat>")


def human_prompt(entry: Entry) -> str | None:
    """The prompt text of a user entry that opens a turn (docs/measurement.md section 2), else None.

    Content is a string or has text blocks; not isMeta, not isCompactSummary, not a tool
    result, and not a slash-command echo (its markers near the start of the text).
    """
    if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    msg = entry.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        blocks = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        texts = [t for t in blocks if isinstance(t, str)]
        if not texts:
            return None
        text = "\n".join(texts)
    else:
        return None
    head = text.lstrip()[:400]
    if not head or any(echo in head for echo in COMMAND_ECHOES):
        return None
    return text
