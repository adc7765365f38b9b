"""Turn one transcript line into a dict, or say why not.

Only lines that are not JSON objects count as malformed. Entry types the engine
never reads (attachments, request blobs, snapshots) are recognised from the
line's opening bytes and skipped before a full JSON parse. Attachment lines, most of a
transcript's bytes, matter to every reader only as links of the conversation's tree: they are
checked as JSON whole and decoded for those fields alone (`_link_entry`).
"""
from __future__ import annotations

import re
from typing import Any

import msgspec
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


# The fields any reader takes from an attachment line (its place on the tree, its time). Made with
# defstruct, not a class body: msgspec reads a class's annotations, which the compiled engine (mypyc)
# does not keep as Python sees them, and this way both builds decode with the same struct.
_Link = msgspec.defstruct("_Link", [(name, Any, msgspec.UNSET) for name in (
    "type", "uuid", "parentUuid", "isSidechain", "timestamp", "sessionId")])
_LINK_FIELDS: tuple[str, ...] = _Link.__struct_fields__
_decode_link = msgspec.json.Decoder(_Link).decode
_LINK_VALUES = (str, bool, type(None))
# Claude Code writes `parentUuid`, `isSidechain`, then the attachment object, its type after it.
_ATTACHMENT_KEY, _ATTACHMENT_WITHIN = b'"attachment":{', 512


def _link_entry(line: bytes) -> Entry | None:
    """An attachment line's entry with its link fields only, or None: the full decoder decides.

    msgspec validates the whole line as JSON while building nothing of the fields it skips. It
    does not check the UTF-8 of what it skips, which orjson does, so a line that is not ASCII is
    checked by Python's strict decoder first (together a half of orjson's time on these lines).
    A line either refuses, of another type, or whose link fields are not plain strings, booleans
    or null is left to orjson, so a line counts as malformed exactly when orjson refuses it,
    except valid JSON orjson cannot hold (a number beyond a double's range in the attachment's
    body), which is read as the JSON it is.
    """
    if line.find(_ATTACHMENT_KEY, 0, _ATTACHMENT_WITHIN) < 0:
        return None
    try:
        if not line.isascii():
            line.decode("utf-8")
        link = _decode_link(line)
    except (UnicodeDecodeError, msgspec.DecodeError, RecursionError):
        return None
    if getattr(link, "type") != "attachment":  # noqa: B009  # a struct made at run time: no attribute to type
        return None
    entry: Entry = {}
    for name in _LINK_FIELDS:
        value = getattr(link, name)
        if value is msgspec.UNSET:
            continue
        if not isinstance(value, _LINK_VALUES):
            return None
        entry[name] = value
    return entry


def parse_line(line: bytes) -> Entry | None:
    """The entry of one line; None for a line of a type no reader needs."""
    if _SKIP_PREFIX.match(line):
        return None
    return decode_line(line)


def decode_line(line: bytes) -> Entry:
    """The entry of a line whose opening bytes SKIP_AT did not match (parse_line's work after that test)."""
    entry = _link_entry(line)
    if entry is not None:
        return entry
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
        texts = []
        for block in content:  # most user entries are tool results: one pass, left at the first
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "tool_result":
                    return None
                if kind == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
        if not texts:
            return None
        text = "\n".join(texts)
    else:
        return None
    head = text.lstrip()[:400]
    if not head or any(echo in head for echo in COMMAND_ECHOES):
        return None
    return text
