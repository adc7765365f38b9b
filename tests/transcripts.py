"""Build synthetic Claude Code transcript entries for engine tests.

Shapes follow ../shared/spec/TRANSCRIPTS.md (2.1.x style). Each helper returns
plain dicts; `to_bytes` writes them as JSONL.
"""
from __future__ import annotations

import json
import random
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


def with_sidechain_copies(entries: list[dict], draw, extra: list[dict] = ()) -> list[dict]:
    """`entries` with 1 to 8 sidechain copies of drawn entries (or of `extra`) inserted at drawn places
    (`draw` is hypothesis's data.draw); copied calls get keys of their own."""
    from hypothesis import strategies as st

    noisy = list(entries)
    for _ in range(draw(st.integers(1, 8))):
        src = draw(st.sampled_from(entries + list(extra)))
        pos = draw(st.integers(0, len(noisy)))
        copy = sidechain(src)
        if copy.get("message", {}).get("id"):
            copy["message"]["id"] = "side-" + copy["message"]["id"]
        noisy.insert(pos, copy)
    return noisy


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


class Branching:
    """Writes a transcript step by step, keeping Claude Code's parent links."""

    def __init__(self, revisions: bool = False, seed: int = 0) -> None:
        self.entries: list[dict] = []
        self.tip: str | None = None
        self.t = 0.0
        self.n = 0
        self.keys = 0  # calls made (keys do not depend on revision lines)
        self.stock = 20_000
        self.prev = 0
        self.revisions, self.rnd = revisions, random.Random(seed)
        self.prompts: list[dict] = []  # prompts after the open segment's first call, on the live branch
        self.leaves: list[str] = []    # tips left behind by rewinds
        self.prompt("start")
        self.call()
        self.prompts = []  # the segment's first call (the floor) is never rewound past

    def _add(self, entry: dict, parent: str | None = "tip", uuid: bool = True) -> dict:
        self.n += 1
        if uuid:
            entry["uuid"] = f"e{self.n:05d}"
            entry["parentUuid"] = self.tip if parent == "tip" else parent
            self.tip = entry["uuid"]
        else:
            entry.pop("uuid", None)
        self.entries.append(entry)
        return entry

    def _tick(self) -> float:
        self.t += 5
        return self.t

    def _usage(self) -> dict:
        self.stock += 700
        cr = min(self.prev, self.stock)
        self.prev = self.stock
        return {"inn": 3, "cw5": max(0, self.stock - cr - 3), "cr": cr}

    def prompt(self, text: str, parent: str | None = "tip") -> None:
        entry = self._add(prompt(f"{text} {self.n}", self._tick()), parent)
        self.prompts.append(entry)

    def _key(self) -> str:
        self.keys += 1
        return f"m{self.keys}"

    def call(self, tools: list[dict] | None = None, uuid: bool = True) -> dict:
        key = self._key()
        usage = self._usage()
        if self.revisions:  # one line per content block, output growing
            for out in sorted(self.rnd.sample(range(1, 50), k=2)):
                self._add(call(key, self._tick(), out=out, **usage), uuid=uuid)
        return self._add(call(key, self._tick(), out=60, tools=tools, **usage), uuid=uuid)

    def tool(self, name: str, uuid: bool = True, **inp) -> None:
        tid = f"t{self.keys}"
        self.call([tool(tid, name, **inp)], uuid=uuid)
        self._add(result(tid, f"done {tid}", self._tick()), uuid=uuid)

    def read(self, path: str, size: int, uuid: bool = True) -> None:
        tid = f"t{self.keys}"
        self.call([tool(tid, "Read", file_path=path)], uuid=uuid)
        self._add(result(tid, f"v = {self.keys}\n" * size, self._tick()), uuid=uuid)

    def read_turn(self, path: str, size: int) -> None:
        """A turn that reads `path`, then a short turn after it."""
        self.prompt("read it")
        self.read(path, size)
        self.prompt("more")
        self.call()

    def parallel(self, a: str, b: str, size: int) -> None:
        """Two Reads in one response: each result hangs off its own tool_use entry."""
        key, t1, t2 = self._key(), f"pa{self.keys}", f"pb{self.keys}"
        usage = self._usage()
        first = self._add(call(key, self._tick(), out=30, tools=[tool(t1, "Read", file_path=a)], **usage))
        second = self._add(call(key, self._tick(), out=60, tools=[tool(t2, "Read", file_path=b)], **usage))
        self._add(result(t1, "a = 1\n" * size, self._tick()), parent=first["uuid"])
        self._add(result(t2, "b = 2\n" * (size + 3), self._tick()), parent=second["uuid"])
        # Claude Code writes parentUuid first: the line is parsed (only type-first lines are skipped unread)
        self._add({"parentUuid": None, "isSidechain": False, "attachment": {"type": "hook_success"},
                   "type": "attachment", "timestamp": ts(self._tick())})

    def rewind(self, k: int) -> None:
        """A prompt continuing from the entry before an earlier prompt (double-Esc, Restore conversation)."""
        if not self.prompts:  # nothing to rewind to yet: this turn becomes one
            self.prompt("next")
            return
        target = self.prompts[k % len(self.prompts)]
        self.leaves.append(self.tip)
        del self.prompts[self.prompts.index(target):]
        self.prompt("again", parent=target["parentUuid"])

    def reenter(self, k: int) -> None:
        """A prompt continuing from a leaf left behind earlier (a resume of the other branch)."""
        if not self.leaves:
            return
        leaf = self.leaves[k % len(self.leaves)]
        self.leaves.append(self.tip)
        self.prompts = []  # its earlier prompts are not tracked: no rewind targets them
        self.prompt("back", parent=leaf)

    def echo(self) -> None:
        """A command echo that the next prompt leaves aside (no rewind: no prompt, no response left)."""
        before = self.tip
        self._add({**prompt("<command-name>/clear</command-name>", self._tick())})
        self.prompt("after echo", parent=before)

    def compact(self) -> None:
        boundary = compact(self._tick())
        boundary["logicalParentUuid"] = self.tip
        self._add(boundary, parent=None)
        self._add(summary_user(self._tick()))
        self.stock, self.prev, self.prompts, self.leaves = 20_000, 0, [], []
        self.call()
