"""Build synthetic Claude Code transcript entries for engine tests.

Shapes follow ../shared/spec/TRANSCRIPTS.md (2.1.x style). Each helper returns
plain dicts; `to_bytes` writes them as JSONL.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc)
CWD = "/home/user/proj"
SID = "11111111-2222-3333-4444-555555555555"


def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def prompt(text: str, t: float = 0, **extra) -> dict:
    return {"type": "user", "sessionId": SID, "cwd": CWD, "isSidechain": False, "timestamp": ts(t),
            "uuid": f"u-{text[:8]}-{t}", "message": {"role": "user", "content": text}, **extra}


def call(mid: str, t: float = 0, *, inn: int = 3, cw5: int = 0, cw1h: int = 0, cr: int = 0, out: int = 10,
         model: str = "claude-sonnet-4-5", tools: list[dict] | None = None, request_id: str | None = None,
         breakdown: bool = True) -> dict:
    usage = {"input_tokens": inn, "cache_creation_input_tokens": cw5 + cw1h, "cache_read_input_tokens": cr,
             "output_tokens": out}
    if breakdown:
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": cw5, "ephemeral_1h_input_tokens": cw1h}
    content = [{"type": "tool_use", "id": tu["id"], "name": tu["name"], "input": tu["input"]} for tu in tools or []]
    if not content:
        content = [{"type": "text", "text": "ok"}]
    msg = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content, "usage": usage}
    if mid is None:
        del msg["id"]
    entry = {"type": "assistant", "sessionId": SID, "cwd": CWD, "isSidechain": False, "timestamp": ts(t),
             "uuid": f"a-{mid}-{t}", "message": msg}
    if request_id:
        entry["requestId"] = request_id
    return entry


def tool(tool_id: str, name: str, **inp) -> dict:
    return {"id": tool_id, "name": name, "input": inp}


def result(tool_id: str, text: str, t: float = 0, is_error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
    if is_error:
        block["is_error"] = True
    return {"type": "user", "sessionId": SID, "cwd": CWD, "isSidechain": False, "timestamp": ts(t),
            "uuid": f"r-{tool_id}-{t}", "message": {"role": "user", "content": [block]},
            "toolUseResult": text if is_error else {"type": "text"}}


def compact(t: float = 0, pre: int = 100_000, post: int = 20_000) -> dict:
    return {"type": "system", "subtype": "compact_boundary", "sessionId": SID, "cwd": CWD, "isSidechain": False,
            "parentUuid": None, "timestamp": ts(t), "content": "Conversation compacted", "uuid": f"c-{t}",
            "compactMetadata": {"trigger": "auto", "preTokens": pre, "postTokens": post}}


def summary_user(t: float = 0) -> dict:
    return {**prompt("This session is being continued from a previous conversation.", t), "isCompactSummary": True}


def sidechain(entry: dict) -> dict:
    return {**json.loads(json.dumps(entry)), "isSidechain": True}


def to_bytes(entries: list[dict]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def growing_session(n_calls: int, growth: int = 3000, floor: int = 20_000, *, reads: int = 0,
                    model: str = "claude-sonnet-4-5", start: float = 0, prefix: str = "m") -> list[dict]:
    """A plausible session: one prompt, then calls whose context grows by `growth` each,
    cache reads trailing one call behind (as the provider confirms them)."""
    entries = [prompt("do the task", start)]
    stock = floor
    prev = 0
    for i in range(n_calls):
        t = start + 10 * (i + 1)
        cr = prev
        cw = max(0, stock - cr - 3)
        tools = []
        if i < reads:
            tools = [tool(f"{prefix}t{i}", "Read", file_path=f"{CWD}/src/f{i}.py")]
        entries.append(call(f"{prefix}{i}", t, inn=3, cw5=cw, cr=cr, out=50, model=model, tools=tools))
        if tools:
            entries.append(result(f"{prefix}t{i}", ("line of code\n" * 40) + f"# file {i}\n", t + 1))
        prev = stock
        stock += growth
    return entries


def read_jsonl(path) -> list[dict]:
    """The entries of a JSONL file, skipping lines that are not JSON (a torn last line)."""
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def write_big_tool_session(path, mb: int) -> None:
    """A valid transcript of about `mb` MB: calls each answered by a 256 KB tool result (slow to ingest)."""
    text = "line of code\n" * 20_000
    with open(path, "wb") as fh:
        i = 0
        while fh.tell() < mb << 20:
            fh.write(to_bytes([call(f"h{i}", i, cw5=3000, out=20, tools=[tool(f"ht{i}", "Read", file_path="/x")]),
                               result(f"ht{i}", text + str(i), i + 1)]))
            i += 1

