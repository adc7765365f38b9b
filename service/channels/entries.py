"""Small, defensive readers of transcript entry dicts (docs/claude-code.md, "Transcripts").

Every field has been absent in some Claude Code version, so each helper
returns an empty value instead of raising.
"""
from __future__ import annotations

from typing import Any, Iterator, NamedTuple

MCP_PREFIX = "mcp__"


def base_tool_name(name: str) -> str:
    """`mcp__<server>__cl_search` -> `cl_search`; built-in names unchanged."""
    if name.startswith(MCP_PREFIX):
        rest = name[len(MCP_PREFIX):]
        i = rest.find("__")
        if i >= 0:
            return rest[i + 2:]
    return name


class Parts(NamedTuple):
    """What the meters read from one entry, taken out once and shared by all of them."""

    type: Any
    message: dict
    uses: list            # tool_use blocks with a string id (assistant entries)
    results: list         # (tool_result block, toolUseResult or None) pairs (user entries)
    key: str | None       # call_key (assistant entries)
    tokens: tuple | None  # usage_tokens(message.usage) (assistant entries with a usage)


def parts(entry: dict) -> Parts:
    """`toolUseResult` belongs to the entry, so it is handed out only when the entry answers exactly one call."""
    t = entry.get("type")
    m = entry.get("message")
    if not isinstance(m, dict):
        m = {}
    c = m.get("content")
    blocks = c if isinstance(c, list) else []
    uses: list = []
    results: list = []
    key = tokens = None
    if t == "assistant":
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)]
        key = call_key(entry, m)
        u = m.get("usage")
        if isinstance(u, dict):
            tokens = usage_tokens(u)
    elif t == "user":
        answered = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if answered:
            tur = entry.get("toolUseResult") if len(answered) == 1 else None
            results = [(b, tur) for b in answered]
    return Parts(t, m, uses, results, key, tokens)


class CallPairs:
    """Tool calls waiting for their tool_result; each is answered once (a copied result is no second answer)."""

    def __init__(self) -> None:
        self.pending: dict[str, Any] = {}
        self.done: set[str] = set()

    def wait(self, tool_use_id: str, call: Any) -> None:
        if tool_use_id not in self.done:
            self.pending[tool_use_id] = call

    def answered(self, results: list) -> Iterator[tuple[dict, Any, str, Any]]:
        """(tool_result block, toolUseResult, tool_use_id, the waiting call) for each result that answers one."""
        for block, tur in results:
            tid = block.get("tool_use_id")
            call = self.pending.pop(tid, None) if isinstance(tid, str) else None
            if call is not None:
                self.done.add(tid)
                yield block, tur, tid, call


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


def call_key(entry: dict, msg: dict) -> str | None:
    """The API response an assistant line belongs to: message.id, else requestId."""
    mid = msg.get("id")
    if isinstance(mid, str) and mid:
        return mid
    rid = entry.get("requestId")
    return rid if isinstance(rid, str) and rid else None


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
    inp, cw, cr, out = (u.get("input_tokens"), u.get("cache_creation_input_tokens"), u.get("cache_read_input_tokens"),
                        u.get("output_tokens"))
    if not (type(inp) is int and type(cw) is int and type(cr) is int and type(out) is int  # the usual case, fast
            and inp >= 0 and cw >= 0 and cr >= 0 and out >= 0):
        inp, cw, cr, out = _int(inp), _int(cw), _int(cr), _int(out)
    cc = u.get("cache_creation")
    if isinstance(cc, dict) and ("ephemeral_5m_input_tokens" in cc or "ephemeral_1h_input_tokens" in cc):
        w1, w5 = cc.get("ephemeral_1h_input_tokens"), cc.get("ephemeral_5m_input_tokens")
        if not (type(w1) is int and type(w5) is int and w1 >= 0 and w5 >= 0):
            w1, w5 = _int(w1), _int(w5)
        if w1 + w5 != cw:  # trust the total; put any remainder in the 5m bucket
            w5 = max(0, cw - w1)
        return inp, w5, w1, cr, out
    return inp, cw, 0, cr, out


def is_sidechain(entry: dict) -> bool:
    return entry.get("isSidechain") is True


def progress_call(entry: dict) -> dict | None:
    """The subagent's assistant line a `progress` line carries, as a sidechain line; else None.

    Claude Code 2.1.9 to 2.1.39 reported a running subagent's calls to the main transcript as
    `{"type": "progress", "data": {"type": "agent_progress", "message": <assistant line>}}`; where the
    subagent's own file is missing, that line is the only record of a billed request.
    """
    data = entry.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    inner = data.get("message")
    if not isinstance(inner, dict) or inner.get("type") != "assistant" or not isinstance(inner.get("message"), dict):
        return None
    return {**inner, "isSidechain": True}
