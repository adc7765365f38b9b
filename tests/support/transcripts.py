"""Build synthetic Claude Code transcript entries for engine tests.

The small helpers write 2.1.x-style entries; `versioned_story` writes one session in the shape of an
older or newer Claude Code (1.0.x, 2.0.x, 2.1.x: see docs/claude-code.md). Each helper returns plain
dicts; `to_bytes` writes them as JSONL.
"""
from __future__ import annotations

import json
import math
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


def idle_note(t: float = 0, *, away: bool = False) -> dict:
    """The `system` `informational` line Claude Code 2.1.332 writes after an idle compaction's summary
    (`away`: the summary was prepared while the user was away)."""
    text = ("Compacted using a summary written while you were away" if away
            else "Compacted while idle to save the cost of re-reading 212k tokens when you return")
    return {"type": "system", "subtype": "informational", "content": text, "isMeta": False, "level": "info",
            "sessionId": SID, "cwd": CWD, "isSidechain": False, "timestamp": ts(t), "uuid": f"i-{t}",
            "parentUuid": f"u-This ses-{t - 1}", "userType": "external", "entrypoint": "cli", "version": "2.1.332"}


def idle_compaction(t: float = 0, pre: int = 212_000, post: int = 9_000, *, precomputed: bool = False,
                    trigger: str = "auto", note: bool = True) -> list[dict]:
    """An idle compaction as Claude Code writes it: the boundary (trigger auto; 2.1.285-2.1.300 wrote manual),
    the summary, then the note (a precomputed summary also marks its boundary)."""
    boundary = compact(t, pre=pre, post=post)
    boundary["compactMetadata"]["trigger"] = trigger
    if precomputed:
        boundary["compactMetadata"]["precomputed"] = True
    return [boundary, summary_user(t + 1)] + ([idle_note(t + 2, away=precomputed)] if note else [])


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


def switched_session(models: list[str], growth: int = 4000, reads: int = 0) -> list[dict]:
    """A growing session whose i-th call runs on models[i]; the first call on a new model reads no cache."""
    entries = [prompt("plan it", 0)]
    stock, cached, prev_model = 20_000, 0, None
    for i, model in enumerate(models):
        t = 10.0 * (i + 1)
        cr = cached if model == prev_model else 0  # the cache is per model: a switch writes the prompt anew
        tools = [tool(f"t{i}", "Read", file_path=f"{CWD}/f{i}.py")] if i < reads else []
        entries.append(call(f"m{i}", t, inn=3, cw5=stock - cr - 3, cr=cr, out=60, model=model, tools=tools))
        if tools:
            entries.append(result(f"t{i}", "value = compute(x)\n" * 120, t + 1))
        cached, prev_model = stock, model
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


def write_big_tool_session(path, mb: int) -> None:
    """A valid transcript of about `mb` MB: calls each answered by a 256 KB tool result (slow to ingest)."""
    text = "line of code\n" * 20_000
    with open(path, "wb") as fh:
        i = 0
        while fh.tell() < mb << 20:
            fh.write(to_bytes([call(f"h{i}", i, cw5=3000, out=20, tools=[tool(f"ht{i}", "Read", file_path="/x")]),
                               result(f"ht{i}", text + str(i), i + 1)]))
            i += 1


# ---- one session as each Claude Code generation wrote it ---------------------------------------
VERSIONS = {  # what changed between the generations (facts read from real transcripts of each)
    "1.0": {"version": "1.0.17", "model": "claude-sonnet-4-20250514", "breakdown": False, "wrap_errors": False,
            "subagents": "inline", "agent_tool": "Task", "extra_usage": {}},
    "2.0": {"version": "2.0.42", "model": "claude-sonnet-4-5-20250929", "breakdown": True, "wrap_errors": False,
            "subagents": "flat", "agent_tool": "Task", "extra_usage": {}},
    "2.1": {"version": "2.1.114", "model": "claude-opus-4-7", "breakdown": True, "wrap_errors": True,
            "subagents": "folder", "agent_tool": "Agent",
            "extra_usage": {"service_tier": "standard", "inference_geo": "", "iterations": [], "speed": "standard",
                            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}}},
}


class _Story:
    """Writes entries in one generation's shape and keeps the facts a test expects, by construction."""

    def __init__(self, gen: str, sid: str, cwd: str):
        self.gen, self.shape, self.sid, self.cwd = gen, VERSIONS[gen], sid, cwd
        self.t = 0.0
        self.main: list[dict] = []
        self.agent: list[dict] = []
        self.facts = {"edits_ok": 0, "not_found": 0, "ambiguous": 0, "other": 0, "grep": 0, "glob": 0,
                      "main_calls": [], "sub_calls": [], "placeholders": 0}
        self.stock = 12_000
        self.n = 0

    def _base(self, kind: str, side: bool) -> dict:
        self.t += 5
        e = {"type": kind, "sessionId": self.sid, "cwd": self.cwd, "isSidechain": side, "timestamp": ts(self.t),
             "uuid": f"{self.gen}-{kind[0]}{self.n}-{int(self.t)}", "version": self.shape["version"],
             "userType": "external"}
        if self.gen != "1.0":
            e["gitBranch"] = "main"
        if side and self.shape["subagents"] != "inline":
            e["agentId"] = "ab12cd34" if self.gen == "2.0" else "a0123456789abcdef"
        return e

    def _put(self, entry: dict, side: bool) -> None:
        (self.agent if side and self.shape["subagents"] != "inline" else self.main).append(entry)

    def usage(self, out: int) -> dict:
        cr, cw = self.stock - 900, 900
        u = {"input_tokens": 4, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr, "output_tokens": out}
        if self.shape["breakdown"]:
            u["cache_creation"] = {"ephemeral_5m_input_tokens": cw, "ephemeral_1h_input_tokens": 0}
        u.update(self.shape["extra_usage"])
        self.stock += 900
        return u

    def respond(self, blocks: list[dict], side: bool = False, out: int = 40, placeholder: bool = False) -> str:
        """One API response: 1.0 writes lines whose output_tokens grow, 2.x lines with the same usage."""
        self.n += 1
        mid, rid = f"msg_{self.sid[:8]}_{self.n:03d}", f"req_{self.sid[:8]}_{self.n:03d}"
        usage = self.usage(1 if placeholder else out)
        (self.facts["sub_calls"] if side else self.facts["main_calls"]).append({"id": mid, "usage": usage})
        self.facts["placeholders"] += placeholder
        lines = blocks if self.gen != "1.0" or placeholder else [blocks[0]] + blocks  # 1.0: a first line again
        if self.gen == "2.0":  # a thinking line first, then one line per block, the usage repeated
            lines = [{"type": "thinking", "thinking": "Let me look.", "signature": "sig"}] + blocks
        for k, block in enumerate(lines):
            u = dict(usage)
            if self.gen == "1.0" and not placeholder and k < len(lines) - 1:
                u["output_tokens"] = 3  # the streaming placeholder of an early line
            entry = self._base("assistant", side)
            entry.update(requestId=rid, message={"id": mid, "type": "message", "role": "assistant",
                                                 "model": self.shape["model"], "content": [block], "usage": u,
                                                 "stop_reason": None})
            self._put(entry, side)
        return mid

    def result(self, tool_id: str, text: str, result, side: bool = False, error: bool = False) -> None:
        if error and self.shape["wrap_errors"]:
            text = f"<tool_use_error>{text}</tool_use_error>"
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
        if error:
            block["is_error"] = True
        entry = self._base("user", side)
        entry.update(message={"role": "user", "content": [block]}, toolUseResult=f"Error: {text}" if error else result)
        self._put(entry, side)

    def tool_id(self, short: str) -> str:
        """Tool-use ids are unique across sessions, as the API makes them."""
        return f"toolu_{self.sid[:8]}_{short}"

    def prompt(self, text: str, side: bool = False) -> None:
        entry = self._base("user", side)
        entry["message"] = {"role": "user", "content": text}
        self._put(entry, side)

    def call(self, tool_id: str, name: str, inp: dict, outcome: str, result=None, side: bool = False,
             placeholder: bool = False) -> None:
        """A tool call and its result; `outcome` is ok, not_found, ambiguous, not_read or rejected."""
        tool_id = self.tool_id(tool_id)
        self.respond([{"type": "tool_use", "id": tool_id, "name": name, "input": inp}], side, placeholder=placeholder)
        texts = {"not_found": f"String to replace not found in file.\nString: {inp.get('old_string', '')}",
                 "ambiguous": "Found 2 matches of the string to replace, but replace_all is false. To replace all "
                              "occurrences, set replace_all to true.",
                 "not_read": "File has not been read yet. Read it first before writing to it.",
                 "rejected": "The user doesn't want to proceed with this tool use. The tool use was rejected."}
        if outcome == "ok":
            self.result(tool_id, "ok", result if result is not None else {"type": "text"}, side)
        else:
            self.result(tool_id, texts[outcome], None, side, error=True)
        edit = name in ("Edit", "MultiEdit")
        if edit:
            self.facts[{"ok": "edits_ok", "not_found": "not_found", "ambiguous": "ambiguous"}.get(outcome, "other")] += 1
        if name in ("Grep", "Glob") and outcome == "ok":
            self.facts[name.lower()] += 1


# USD per million tokens (input, output, cache read, 5-minute write) of the versioned stories' models,
# from Anthropic's price page: the figures a test expects are priced by hand with these.
STORY_RATES = {"claude-sonnet-4-20250514": (3, 15, 0.3, 3.75), "claude-sonnet-4-5-20250929": (3, 15, 0.3, 3.75),
               "claude-opus-4-7": (5, 25, 0.5, 6.25)}


def priced_by_hand(model: str, calls: list[dict]) -> float:
    """USD of these calls (each with its `usage`) at STORY_RATES."""
    i, o, r, w = STORY_RATES[model]
    return math.fsum((i * u["input_tokens"] + o * u["output_tokens"] + r * u["cache_read_input_tokens"]
                      + w * u["cache_creation_input_tokens"]) / 1e6 for u in (c["usage"] for c in calls))


def versioned_story(gen: str, sid: str = "22222222-3333-4444-5555-666666666666", cwd: str = "/home/u/old") -> dict:
    """One session in the shape Claude Code `gen` ("1.0", "2.0", "2.1") wrote: a Read, a good Edit, a miss of
    each kind, a Write refused (not an edit), a rejected Edit, Grep, Glob, a subagent (inline sidechain,
    flat agent file or subagents/ folder) that reads and edits, and a last answer.

    Returns {"main": entries, "agent": entries (empty for inline), "meta": the 2.1 meta.json or None,
    "facts": what a reader must find, by construction}."""
    st = _Story(gen, sid, cwd)
    f = f"{cwd}/app.py"
    if gen == "2.0":
        st.main.append({"type": "queue-operation", "operation": "enqueue", "sessionId": sid, "timestamp": ts(1)})
    if gen == "2.1":
        st.main.append({"type": "permission-mode", "permissionMode": "default", "sessionId": sid})
    st.prompt("fix the app")
    st.call("t1", "Read", {"file_path": f}, "ok", {"type": "text", "file": {"filePath": f, "content": "x = 1\n",
                                                                          "numLines": 1, "startLine": 1, "totalLines": 1}})
    st.call("t2", "Edit", {"file_path": f, "old_string": "x = 1", "new_string": "x = 2"}, "ok",
            {"filePath": f, "oldString": "x = 1", "newString": "x = 2", "originalFile": "x = 1\n",
             "structuredPatch": [], "userModified": False, "replaceAll": False})
    st.call("t3", "Edit", {"file_path": f, "old_string": "y = 9", "new_string": "y = 8"}, "not_found")
    if gen == "1.0":  # MultiEdit existed then
        st.call("t4", "MultiEdit", {"file_path": f, "edits": [{"old_string": "x", "new_string": "z"}]}, "ambiguous")
        st.main.append({**st._base("system", False), "content": "Running PostToolUse:MultiEdit...", "level": "info"})
    else:
        st.call("t4", "Edit", {"file_path": f, "old_string": "x", "new_string": "z"}, "ambiguous")
    st.call("t5", "Write", {"file_path": f"{cwd}/new.py", "content": "pass\n"}, "not_read")
    st.call("t6", "Edit", {"file_path": f, "old_string": "x = 2", "new_string": "x = 3"}, "rejected")
    st.call("t7", "Grep", {"pattern": "x", "path": cwd}, "ok", {"mode": "files_with_matches", "numFiles": 1,
                                                                "filenames": [f]}, placeholder=gen == "1.0")
    st.call("t8", "Glob", {"pattern": "*.py", "path": cwd}, "ok", {"filenames": [f], "durationMs": 3, "numFiles": 1,
                                                                   "truncated": False})
    st.respond([{"type": "tool_use", "id": st.tool_id("t9"), "name": st.shape["agent_tool"],
                 "input": {"description": "look around", "prompt": "SUB: read the app", "subagent_type": "general-purpose"}}])
    st.prompt("SUB: read the app", side=True)
    st.call("s1", "Read", {"file_path": f}, "ok", side=True)
    st.call("s2", "Edit", {"file_path": f, "old_string": "x = 2", "new_string": "x = 4"}, "ok", side=True)
    st.respond([{"type": "text", "text": "The app sets x."}], side=True)
    st.result(st.tool_id("t9"), "The app sets x.", {"status": "completed", "agentId": "ab12cd34", "totalTokens": 900})
    st.respond([{"type": "text", "text": "Done."}])
    if gen == "1.0":
        st.main.append({"type": "summary", "summary": "Fixing the app", "leafUuid": st.main[-1]["uuid"]})
    if gen == "2.1":
        st.main += [{"type": "last-prompt", "lastPrompt": "fix the app", "sessionId": sid},
                    {**st._base("system", False), "subtype": "turn_duration", "durationMs": 5000}]
    meta = {"agentType": "general-purpose", "description": "look around"} if gen == "2.1" else None
    return {"main": st.main, "agent": st.agent, "meta": meta, "facts": st.facts}


def write_story(projects, gen: str, story: dict, project: str = "-home-u-old") -> dict:
    """Lay a versioned story out as that generation did under `projects`; returns {"main": path, "agent": path}."""
    folder = projects / project
    folder.mkdir(parents=True, exist_ok=True)
    sid = story["main"][-1].get("sessionId") or "s"
    main = folder / f"{sid}.jsonl"
    main.write_bytes(to_bytes(story["main"]))
    agent = None
    if VERSIONS[gen]["subagents"] == "flat":
        agent = folder / "agent-ab12cd34.jsonl"
    elif VERSIONS[gen]["subagents"] == "folder":
        agent = folder / sid / "subagents" / "agent-a0123456789abcdef.jsonl"
        agent.parent.mkdir(parents=True)
        agent.with_suffix(".meta.json").write_text(json.dumps(story["meta"]))
    if agent is not None:
        agent.write_bytes(to_bytes(story["agent"]))
    return {"main": main, "agent": agent}
