"""The demo: a Claude Code session of our own making, written live so the lamp moves.

`generate()` makes a deterministic transcript in Claude Code 2.1's shapes: a
small project is read, edited and extended over a few turns while the context
grows, so the lamp walks white -> green -> amber -> red in about 70 calls.
`play()` appends it to a transcript file at a steady pace, the way Claude Code
writes, for the service to follow. Nothing here is copied from real sessions.
"""
from __future__ import annotations

import json
import random
from typing import Any
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

MODEL = "claude-sonnet-4-5"
SESSION = "d3m0d3m0-0000-4000-8000-000000000001"
PROMPTS = [
    "Add a --json flag to the report command and keep the table output as the default.",
    "The totals in the report are off by one day at midnight; find out why and fix it.",
    "Write tests for the date bucketing, including the DST change.",
    "Refactor the exporters so CSV and JSON share one row builder.",
    "Add a progress bar for scans longer than two seconds.",
    "Document the new flags in the README.",
    "Profile the scan on a big folder and make the slow part faster.",
    "Clean up: remove the old exporter and its tests.",
]
FILES = ["src/report.py", "src/buckets.py", "src/exporters/csv.py", "src/exporters/json.py", "src/scan.py",
         "tests/test_buckets.py", "tests/test_report.py", "README.md", "src/cli.py", "src/progress.py"]


def _code(path: str, rnd: random.Random, lines: int) -> str:
    words = ["total", "bucket", "row", "day", "scan", "export", "flag", "value", "path", "count", "span"]
    out = [f'"""{path}: part of the demo project."""', ""]
    for i in range(lines):
        a, b = rnd.choice(words), rnd.choice(words)
        out.append(f"def {a}_{b}_{i}(x):\n    return x.{a} + {rnd.randint(1, 99)}  # {b}")
    return "\n".join(out) + "\n"


def _numbered(text: str) -> str:
    return "".join(f"{i:>6}\u2192{line}\n" for i, line in enumerate(text.splitlines(), 1))


def _stamp(t: datetime) -> str:
    """A transcript timestamp as Claude Code writes it: UTC, milliseconds, Z."""
    return t.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def project_files(seed: int = 3) -> dict[str, str]:
    rnd = random.Random(seed)
    return {p: _code(p, rnd, rnd.randint(40, 160)) for p in FILES}


def generate(cwd: str, seed: int = 3, calls: int = 120, start: datetime | None = None,
             session: str = SESSION, compact_at: int | None = None, model: str = MODEL) -> list[dict]:
    """The demo session's entries, in file order (optionally with an auto-compaction)."""
    rnd = random.Random(seed)
    files = project_files(seed)
    t = start or datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
    uid = iter(uuid.UUID(int=rnd.getrandbits(128)) for _ in range(100_000))
    tag = "demo" + "".join(ch for ch in session if ch.isalnum())[:8]
    entries: list[dict] = []
    parent = None

    def base(kind: str) -> dict:
        nonlocal parent, t
        t += timedelta(seconds=rnd.uniform(4, 25))
        me = str(next(uid))
        e = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
             "version": "2.1.328", "type": kind, "uuid": me, "timestamp": _stamp(t)}
        parent = me
        return e

    stock, cached, n = 18_500, 0, 0
    prompt_i = 0
    while n < calls:
        entries.append({**base("user"), "message": {"role": "user", "content": PROMPTS[prompt_i % len(PROMPTS)]}})
        prompt_i += 1
        stock += 60
        for step in range(rnd.randint(6, 11)):
            if n >= calls:
                break
            if compact_at is not None and n == compact_at:
                meta: dict[str, Any] = {"trigger": "auto", "preTokens": stock, "postTokens": 9_000 + stock // 20}
                entries.append({**base("system"), "subtype": "compact_boundary", "parentUuid": None,
                                "content": "Conversation compacted", "compactMetadata": meta})
                entries.append({**base("user"), "isCompactSummary": True, "message": {
                    "role": "user", "content": "This session is being continued from a previous conversation."}})
                stock, cached = 18_500 + meta["postTokens"], 0
            n += 1
            path = rnd.choice(FILES)
            tool_id = f"toolu_{tag}{n:04d}"  # unique across demo sessions too: the report folds edits by it
            kind = rnd.choices(["Read", "Edit", "Write", "Grep", "Bash"], weights=[4, 3, 1, 2, 3])[0]
            inp: dict[str, Any]
            tur: dict[str, Any] | str
            if kind == "Read":
                inp = {"file_path": f"{cwd}/{path}"}
            elif kind == "Edit":
                lines = files[path].splitlines()
                old = lines[min(len(lines) - 1, rnd.randint(2, 30))]
                new = old.replace("return", "return int(") + ")" if "return" in old else old + "  # checked"
                inp = {"file_path": f"{cwd}/{path}", "old_string": old, "new_string": new, "replace_all": False}
            elif kind == "Write":
                path = f"src/new_{n}.py"
                inp = {"file_path": f"{cwd}/{path}", "content": _code(path, rnd, rnd.randint(10, 40))}
            elif kind == "Grep":
                inp = {"pattern": rnd.choice(["def total", "bucket", "export"]), "path": cwd}
            else:
                inp = {"command": rnd.choice(["pytest -q", "python -m src.cli report --json", "git diff"])}
            out_tokens = rnd.randint(60, 400)
            cw = max(0, stock - cached - 3)
            msg_id = f"msg_{tag}{n:04d}"  # unique across demo sessions: the report folds calls by message id
            usage = {"input_tokens": 3, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cached,
                     "output_tokens": out_tokens, "cache_creation": {"ephemeral_5m_input_tokens": cw,
                                                                     "ephemeral_1h_input_tokens": 0}}
            text_line = {**base("assistant"), "requestId": f"req_{tag}{n:04d}",
                         "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                     "content": [{"type": "text", "text": f"Step {step + 1}: {kind} {path}."}],
                                     "usage": {**usage, "output_tokens": 1}}}
            tool_line = {**base("assistant"), "requestId": f"req_{tag}{n:04d}",
                         "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                     "content": [{"type": "tool_use", "id": tool_id, "name": kind, "input": inp}],
                                     "usage": usage}}
            entries += [text_line, tool_line]
            cached = stock
            if kind == "Read":
                result = _numbered(files[path])
                tur = {"type": "text", "file": {"filePath": inp["file_path"], "content": files[path],
                                                "numLines": files[path].count("\n"), "startLine": 1,
                                                "totalLines": files[path].count("\n")}}
            elif kind == "Edit":
                ok = rnd.random() > 0.12
                result = (f"The file {inp['file_path']} has been updated." if ok
                          else "<tool_use_error>String to replace not found in file.</tool_use_error>")
                if ok:
                    files[path] = files[path].replace(inp["old_string"], inp["new_string"], 1)
                tur = ({"filePath": inp["file_path"], "oldString": inp["old_string"],
                        "newString": inp["new_string"], "replaceAll": False} if ok else f"Error: {result}")
                if not ok:
                    entries.append({**base("user"), "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": tool_id, "content": result, "is_error": True}]},
                        "toolUseResult": tur})
                    stock += 40 + out_tokens
                    continue
            elif kind == "Write":
                files[path] = inp["content"]
                result = f"File created successfully at: {inp['file_path']}"
                tur = {"type": "create", "filePath": inp["file_path"], "content": inp["content"]}
            elif kind == "Bash":  # test logs and diffs: context the next session will not need
                result = "\n".join(f"tests/test_{rnd.choice(['report', 'buckets', 'scan'])}.py::case_{i} PASSED "
                                   f"[{i}%] {rnd.random():.6f}s" for i in range(rnd.randint(40, 140)))
                tur = {"stdout": result, "stderr": "", "interrupted": False}
            else:
                hits = [f"{cwd}/{p}" for p in rnd.sample(FILES, 3)]
                result = "Found 3 files\n" + "\n".join(hits)
                tur = {"mode": "files_with_matches", "numFiles": 3, "filenames": hits}
            entries.append({**base("user"), "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": result}]}, "toolUseResult": tur})
            # the next prompt re-sends everything: the result (about 3.6 bytes a token) and the output
            stock += len(result) // 3 + out_tokens + 25
    return entries


def write_project(cwd: Path, seed: int = 3) -> None:
    """The demo project's files on disk, so the Files tab shows them as present."""
    for rel, text in project_files(seed).items():
        dest = cwd / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)


def _land(entry: dict, cwd: Path) -> None:
    """A file the session's Write created lands in the demo project, as Claude Code's would: the Files
    tab shows it present, not gone."""
    made = entry.get("toolUseResult")
    if isinstance(made, dict) and made.get("type") == "create":
        dest = Path(made["filePath"])
        if dest.is_relative_to(cwd):
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(made["content"])


def transcript_path(claude_dir: Path, cwd: str) -> Path:
    return claude_dir / "projects" / cwd.replace("/", "-") / f"{SESSION}.jsonl"


def stamped_now(entry: dict, last: datetime | None, now: datetime) -> tuple[dict, datetime]:
    """The entry dated `now` as it is written (a millisecond after the previous one at least, so the file's
    order is its time order), and that time."""
    at = now.astimezone(timezone.utc).replace(microsecond=now.microsecond // 1000 * 1000)
    if last is not None and at <= last:
        at = last + timedelta(milliseconds=1)
    return {**entry, "timestamp": _stamp(at)}, at


def play(claude_dir: Path, cwd: Path, seconds_per_call: float = 0.5, seed: int = 3,
         progress=None, clock=None) -> Path:
    """Append the demo session to its transcript, one API response at a time, each entry dated when it is
    written (`clock`, default the wall clock), as Claude Code dates its own: the live list, the cache's
    countdown and History's start time say what a user watching it sees."""
    now = clock or (lambda: datetime.now(timezone.utc))
    entries = generate(str(cwd), seed)
    path = transcript_path(claude_dir, str(cwd))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_project(cwd, seed)
    path.write_bytes(b"")
    last = None
    with open(path, "ab") as fh:
        for i, e in enumerate(entries):
            _land(e, cwd)
            e, last = stamped_now(e, last, now())
            fh.write(json.dumps(e).encode() + b"\n")
            fh.flush()
            if e["type"] == "user" and isinstance(e["message"]["content"], list):
                if progress:
                    progress(i + 1, len(entries))
                time.sleep(seconds_per_call)
    return path
