"""Small, defensive readers of transcript entry dicts (TRANSCRIPTS.md).

Every field has been absent in some Claude Code version, so each helper
returns an empty value instead of raising.
"""
from __future__ import annotations

from typing import Any, Iterator

MCP_PREFIX = "mcp__"


def base_tool_name(name: str) -> str:
    """`mcp__<server>__cl_search` -> `cl_search`; built-in names unchanged."""
    if name.startswith(MCP_PREFIX):
        rest = name[len(MCP_PREFIX):]
        i = rest.find("__")
        if i >= 0:
            return rest[i + 2:]
    return name


def message(entry: dict) -> dict:
    m = entry.get("message")
    return m if isinstance(m, dict) else {}


def content_blocks(entry: dict) -> list:
    c = message(entry).get("content")
    return c if isinstance(c, list) else []


def tool_uses(entry: dict) -> Iterator[dict]:
    """tool_use blocks of an assistant entry."""
    if entry.get("type") != "assistant":
        return
    for b in content_blocks(entry):
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
            yield b


def tool_results(entry: dict) -> Iterator[tuple[dict, Any]]:
    """(tool_result block, toolUseResult or None) pairs of a user entry.

    `toolUseResult` belongs to the entry, so it is handed out only when the
    entry answers exactly one tool call.
    """
    if entry.get("type") != "user":
        return
    blocks = [b for b in content_blocks(entry) if isinstance(b, dict) and b.get("type") == "tool_result"]
    tur = entry.get("toolUseResult") if len(blocks) == 1 else None
    for b in blocks:
        yield b, tur


def result_text(block: dict) -> str:
    """The text the model received for a tool_result (string or text blocks)."""
    c = block.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        parts = []
        for p in c:
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str):
                parts.append(p["text"])
            elif isinstance(p, str):
                parts.append(p)
        return "\n".join(parts)
    return ""


def call_key(entry: dict) -> str | None:
    """The API response an assistant line belongs to: message.id, else requestId."""
    mid = message(entry).get("id")
    if isinstance(mid, str) and mid:
        return mid
    rid = entry.get("requestId")
    return rid if isinstance(rid, str) and rid else None


def usage(entry: dict) -> dict | None:
    u = message(entry).get("usage")
    return u if isinstance(u, dict) else None


def _int(v: Any) -> int:
    if type(v) is int:
        return v if v > 0 else 0
    try:
        return max(0, int(v or 0))
    except (TypeError, ValueError):
        return 0


def usage_tokens(u: dict) -> tuple[int, int, int, int, int]:
    """(input, cache_write_5m, cache_write_1h, cache_read, output).

    Without the 2.0+ `cache_creation` breakdown all cache writes are 5-minute
    writes (the only kind older clients asked for).
    """
    inp = _int(u.get("input_tokens"))
    cw = _int(u.get("cache_creation_input_tokens"))
    cr = _int(u.get("cache_read_input_tokens"))
    out = _int(u.get("output_tokens"))
    cc = u.get("cache_creation")
    if isinstance(cc, dict) and ("ephemeral_5m_input_tokens" in cc or "ephemeral_1h_input_tokens" in cc):
        w1 = _int(cc.get("ephemeral_1h_input_tokens"))
        w5 = _int(cc.get("ephemeral_5m_input_tokens"))
        if w1 + w5 != cw:  # trust the total; put any remainder in the 5m bucket
            w5 = max(0, cw - w1)
        return inp, w5, w1, cr, out
    return inp, cw, 0, cr, out


def total_stock(u: dict) -> int:
    """What the request carried: input + cache_creation + cache_read."""
    return _int(u.get("input_tokens")) + _int(u.get("cache_creation_input_tokens")) + _int(u.get("cache_read_input_tokens"))


def is_sidechain(entry: dict) -> bool:
    return entry.get("isSidechain") is True
