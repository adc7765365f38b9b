"""Edit channel from transcripts.

str_replace path: Claude Code's Edit and MultiEdit calls. A call counts when
its tool_result comes back without error; its old_string tokens are the
tokens the model actually paid as output to quote the preimage (priced later
at the model's output price). Misses are split into `not_found` and
`ambiguous`; other refusals (file not read yet, user rejection) are counted
apart as `other` and are not misses.

Anchored path: calls of tools whose name ends in `ctx_patch` (lean-ctx's MCP
tool under any server prefix). A transcript cannot see the replaced span, so
transcripts book 0 avoided tokens (nothing extrapolated); lean-ctx's own
ledger carries the measured figure.
"""
from __future__ import annotations

import re
from typing import Callable

from service.channels.entries import CallPairs, Parts, base_tool_name, parts, result_text
from service.channels.events import ChannelEvent

STR_REPLACE_TOOLS = frozenset({"Edit", "MultiEdit"})
_NOT_FOUND = re.compile(r"string to replace not found|old_string not found|not found in file", re.I)
_AMBIGUOUS = re.compile(r"found \d+ matches of the string|replace_all is false|matches? more than once|not unique", re.I)


def is_anchored_tool(name: str) -> bool:
    return base_tool_name(name).endswith("ctx_patch")


def watches(name: str) -> bool:
    """Whether the edit meter pairs this tool's calls with their results (str_replace or anchored)."""
    return base_tool_name(name) in STR_REPLACE_TOOLS or is_anchored_tool(name)


def classify_miss(text: str) -> str:
    """'not_found', 'ambiguous' or 'other' for a failed str_replace."""
    if _AMBIGUOUS.search(text):
        return "ambiguous"
    if _NOT_FOUND.search(text):
        return "not_found"
    return "other"


def _old_strings(name: str, tool_input: dict) -> list[str]:
    if name == "MultiEdit":
        edits = tool_input.get("edits")
        if not isinstance(edits, list):
            return []
        return [e.get("old_string") or "" for e in edits if isinstance(e, dict)]
    old = tool_input.get("old_string")
    return [old if isinstance(old, str) else ""]


def _anchored_ops(tool_input: dict) -> tuple[int, int]:
    """(ops, create ops) in a ctx_patch call; a call without an op list is one op."""
    for key in ("ops", "patches", "edits", "operations"):
        ops = tool_input.get(key)
        if isinstance(ops, list):
            creates = sum(1 for o in ops if isinstance(o, dict) and str(o.get("op") or o.get("kind") or "").lower() == "create")
            return len(ops), creates
    creates = 1 if str(tool_input.get("op") or "").lower() == "create" else 0
    return 1, creates


def _is_error(block: dict, tur) -> bool:
    if block.get("is_error") is True:
        return True
    return isinstance(tur, str) and tur.lstrip().lower().startswith("error")


class EditMeter:
    """Pairs Edit/MultiEdit/ctx_patch tool_use blocks with their results."""

    def __init__(self, count_tokens: Callable[[str], int] | None, session_id: str | None = None):
        self.count_tokens = count_tokens  # None: leave the texts in the event for `settle_tokens`
        self.session_id = session_id
        self.calls = CallPairs()  # id -> (name, base, input, model)

    def feed(self, entry: dict, p: Parts | None = None) -> list[ChannelEvent]:
        p = p or parts(entry)
        if p.type == "assistant":
            if not p.uses:
                return []
            model = p.message.get("model")
            for b in p.uses:
                name = b.get("name") or ""
                if watches(name):
                    inp = b.get("input") if isinstance(b.get("input"), dict) else {}
                    self.calls.wait(b["id"], (name, base_tool_name(name), inp, model if isinstance(model, str) else None))
            return []
        if not p.results or not self.calls.pending:
            return []
        out: list[ChannelEvent] = []
        ts = entry.get("timestamp")
        sid = entry.get("sessionId") or self.session_id
        for block, tur, tid, (name, base, inp, model) in self.calls.answered(p.results):
            err = _is_error(block, tur)
            if base in STR_REPLACE_TOOLS:
                if err:
                    text = result_text(block) or (tur if isinstance(tur, str) else "")
                    kind = classify_miss(text)
                    out.append(ChannelEvent("edit", "str_replace_miss" if kind != "other" else "str_replace_error",
                                            ts, sid, "transcript", {"tool": base, "miss": kind, "id": tid}))
                else:
                    olds = _old_strings(base, inp)
                    data = {"tool": base, "ops": len(olds), "old_string_tokens": None, "model": model, "id": tid}
                    if self.count_tokens is None:
                        data["old_strings"] = [s for s in olds if s]
                    else:
                        data["old_string_tokens"] = sum(self.count_tokens(s) for s in olds if s)
                    out.append(ChannelEvent("edit", "str_replace", ts, sid, "transcript", data))
            else:
                text = result_text(block)
                if err or "CONFLICT" in text:
                    out.append(ChannelEvent("edit", "anchored_conflict", ts, sid, "transcript", {"tool": name, "id": tid}))
                else:
                    ops, creates = _anchored_ops(inp)
                    out.append(ChannelEvent("edit", "anchored", ts, sid, "transcript",
                                            {"tool": name, "ops": ops, "create_ops": creates, "avoided_output_tokens": 0,
                                             "id": tid}))
        return out


def settle_tokens(events: list[dict], count_tokens: Callable[[str], int]) -> None:
    """Count the old_strings a meter built without a tokenizer left in its events (in place).

    A scan defers them (`defer_tokens`) so that they are counted once per distinct text by whoever
    settles the result: the worker that read the file, or the report's parent (service/report/scan.py).
    """
    for ev in events:
        olds = ev["data"].pop("old_strings", None)
        if olds is not None:
            ev["data"]["old_string_tokens"] = sum(count_tokens(s) for s in olds)
