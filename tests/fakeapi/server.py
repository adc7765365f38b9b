"""A scripted Anthropic Messages API on 127.0.0.1 that the real Claude Code CLI can talk to.

What "the model" answers comes from a script (a scenario's `script` section):

    {"conversations": [{"match": "TEXT", "steps": [STEP, ...]}, ...],
     "summary": "what a compaction request gets back",
     "fallback": "what any other request gets back"}

A conversation answers when TEXT stands in a user prompt of the request (the latest prompt that names
one; tool results and the client's own tagged blocks, like <system-reminder>, are not prompts), so a subagent is a conversation matched by its own prompt. Step k
answers when k assistant messages follow that prompt. A STEP is `{"text": "..."}` (ends the turn),
`{"tool": NAME, "input": {...}}`, `{"tools": [{"tool": ..., "input": ...}, ...]}` (parallel calls), and
may add `"say": "..."` (a text block before the calls) and `"usage": {...}` (reported as is instead of the
figures below: to see how the client prices a given usage). A string `"{{re:PATTERN}}"` in an input becomes
the first group of PATTERN's last match in the request's text (to use what the client injected).

Usage follows the request's cache_control breakpoints, per model: `cache_read_input_tokens` is the
longest prefix (tools, system, messages, in that order) that an earlier request of the same model
cached and that has not expired; `cache_creation_input_tokens` the rest up to the last breakpoint
(split into 5m and 1h by each breakpoint's `ttl`); `input_tokens` what follows it. Tokens are
estimated from the text: every tool, system block and message block counts ceil(bytes / 4), so a
figure can be checked by hand from a dump.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BYTES_PER_TOKEN = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
# Claude Code asks for a compaction summary with a prompt that says this (checked in a dump of 2.1.328).
COMPACTION_MARKERS = ("create a detailed summary of the conversation", "your task is to create a detailed summary")
DEFAULT_SUMMARY = "Summary: the files named in the conversation were read and edited."
REFERENCE = re.compile(r"\{\{re:(.+?)\}\}")


def estimate_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: one token per started 4 bytes of UTF-8."""
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def _canonical(obj) -> str:
    if isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if k != "cache_control"}
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Piece:
    """One cacheable unit of a prompt: a tool, a system block or a message block."""
    text: str
    ttl: str | None  # the breakpoint's ttl ("5m" or "1h") when the block carries cache_control

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def prompt_pieces(body: dict) -> list[Piece]:
    """The request in cache order (tools, system, messages), one piece per block."""
    pieces = []

    def mark(block) -> str | None:
        cc = block.get("cache_control") if isinstance(block, dict) else None
        return (cc.get("ttl") or "5m") if isinstance(cc, dict) else None

    for tool in body.get("tools") or []:
        pieces.append(Piece("tool:" + _canonical(tool), mark(tool)))
    system = body.get("system")
    if isinstance(system, str):
        pieces.append(Piece("system:" + system, None))
    for block in system if isinstance(system, list) else []:
        pieces.append(Piece("system:" + _canonical(block), mark(block)))
    for message in body.get("messages") or []:
        role, content = message.get("role", ""), message.get("content")
        if isinstance(content, str):
            pieces.append(Piece(f"{role}:" + content, None))
            continue
        for block in content or []:
            pieces.append(Piece(f"{role}:" + _canonical(block), mark(block)))
    return pieces


@dataclass
class PromptCache:
    """Which prompt prefixes each model has cached, and until when."""
    clock: callable = time.monotonic
    entries: dict = field(default_factory=dict)  # prefix hash -> expiry
    lock: threading.Lock = field(default_factory=threading.Lock)

    def usage(self, model: str, pieces: list[Piece]) -> dict:
        """The input side of `usage` for one request, and the cache updated by it."""
        digest = hashlib.sha256(model.encode())
        keys, ends, total = [], [], 0
        for piece in pieces:
            digest.update(piece.text.encode("utf-8") + b"\x00")
            keys.append(digest.hexdigest())
            total += piece.tokens
            ends.append(total)
        breakpoints = [i for i, p in enumerate(pieces) if p.ttl]
        now = self.clock()
        with self.lock:
            last = breakpoints[-1] if breakpoints else -1
            hit = next((i for i in range(last, -1, -1) if self.entries.get(keys[i], -1.0) > now), -1)
            read = ends[hit] if hit >= 0 else 0
            created = {"5m": 0, "1h": 0}
            covered = read
            for i in breakpoints:
                if ends[i] > covered:
                    created["1h" if pieces[i].ttl == "1h" else "5m"] += ends[i] - covered
                    covered = ends[i]
                self.entries[keys[i]] = now + TTL_SECONDS.get(pieces[i].ttl, 300.0)
        cached_to = max(read, ends[last] if last >= 0 else 0)
        return {"input_tokens": total - cached_to,
                "cache_creation_input_tokens": created["5m"] + created["1h"],
                "cache_read_input_tokens": read,
                "cache_creation": {"ephemeral_5m_input_tokens": created["5m"],
                                   "ephemeral_1h_input_tokens": created["1h"]},
                "service_tier": "standard"}


def _texts(obj):
    """Every string inside a JSON value, in order."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _texts(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _texts(value)


def prompt_text(message: dict, typed_only: bool = False) -> str:
    """The text blocks of one message (tool results left out). `typed_only` also leaves out what the
    client wraps in a tag of its own (<system-reminder>, <command-name>, ...): what the user typed."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(t for t in texts if not (typed_only and t.lstrip().startswith("<")))


@dataclass
class Reply:
    """What the fake model says to one request, and why (for the log)."""
    blocks: list
    kind: str  # script, compaction, fallback, overrun
    match: str | None = None
    step: int | None = None
    usage: dict | None = None  # a step's own figures, reported instead of the cache rule's

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


class Script:
    """A scenario's script: which answer each request gets."""

    def __init__(self, data: dict | None = None):
        data = data or {}
        self.conversations = data.get("conversations") or []
        self.summary = data.get("summary") or DEFAULT_SUMMARY
        self.fallback = data.get("fallback") or "ok"

    def reply(self, body: dict) -> Reply:
        messages = body.get("messages") or []
        if messages and messages[-1].get("role") == "user" and self._asks_for_summary(messages[-1]):
            return Reply([_text(f"<summary>\n{self.summary}\n</summary>")], "compaction")
        for at in range(len(messages) - 1, -1, -1):
            if messages[at].get("role") != "user":
                continue
            said = prompt_text(messages[at], typed_only=True)
            conversation = next((c for c in self.conversations if c["match"] in said), None)
            if conversation is None:
                continue
            step = sum(1 for m in messages[at + 1:] if m.get("role") == "assistant")
            if step >= len(conversation["steps"]):
                return Reply([_text("Done.")], "overrun", conversation["match"], step)
            chosen = conversation["steps"][step]
            return Reply(self._blocks(chosen, body), "script", conversation["match"], step, chosen.get("usage"))
        return Reply([_text(self.fallback)], "fallback")

    @staticmethod
    def _asks_for_summary(message: dict) -> bool:
        said = prompt_text(message).lower()
        return any(marker in said for marker in COMPACTION_MARKERS)

    def _blocks(self, step: dict, body: dict) -> list:
        blocks = [_text(step["say"])] if step.get("say") else []
        if "text" in step:
            blocks.append(_text(step["text"]))
        calls = step.get("tools") or ([step] if "tool" in step else [])
        for call in calls:
            blocks.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": call["tool"],
                           "input": _resolve(call.get("input") or {}, body)})
        return blocks or [_text(self.fallback)]


def forced_usage(given: dict) -> dict:
    """A complete usage object from a step's figures (absent ones are 0; the cache split follows them)."""
    w5 = given.get("ephemeral_5m_input_tokens", 0)
    w1h = given.get("ephemeral_1h_input_tokens", 0)
    return {"input_tokens": given.get("input_tokens", 0), "cache_creation_input_tokens": w5 + w1h,
            "cache_read_input_tokens": given.get("cache_read_input_tokens", 0),
            "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
            "service_tier": "standard", "output_tokens": given.get("output_tokens", 0)}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _resolve(value, body: dict):
    """Replace {{re:PATTERN}} strings with what PATTERN last captured in the request."""
    if isinstance(value, dict):
        return {k: _resolve(v, body) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, body) for v in value]
    if not isinstance(value, str) or not REFERENCE.search(value):
        return value

    def found(ref: re.Match) -> str:
        pattern = re.compile(ref.group(1))
        hits = [m.group(1) for text in _texts(body.get("messages")) for m in pattern.finditer(text)]
        return hits[-1] if hits else ""

    return REFERENCE.sub(found, value)


class FakeAnthropic:
    """The HTTP server; use as a context manager or start()/stop(). `url` is ANTHROPIC_BASE_URL."""

    def __init__(self, script: dict | None = None, log: Path | None = None, dump: Path | None = None,
                 port: int = 0, clock=time.monotonic):
        self.script = Script(script)
        self.cache = PromptCache(clock=clock)
        self.log_path, self.dump_path = log, dump
        self.write_lock = threading.Lock()
        self.counter = itertools.count(1)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "FakeAnthropic":
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-anthropic", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread:
            self.thread.join(5)

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- what one request gets -------------------------------------------------------------
    def answer(self, body: dict) -> tuple[dict, Reply]:
        """The whole message (as a non-streamed response would carry it) for a Messages request."""
        model = body.get("model") or "claude-sonnet-4-5"
        reply = self.script.reply(body)
        if reply.usage is not None:
            usage = forced_usage(reply.usage)
        else:
            usage = self.cache.usage(model, prompt_pieces(body))
            usage["output_tokens"] = max(1, sum(estimate_tokens(_canonical(b)) for b in reply.blocks))
        message = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
                   "content": reply.blocks, "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": usage}
        return message, reply

    def count_tokens(self, body: dict) -> dict:
        return {"input_tokens": sum(p.tokens for p in prompt_pieces(body))}

    def record(self, body: dict, message: dict, reply: Reply, stream: bool) -> None:
        line = {"n": next(self.counter), "t": round(time.time(), 3), "id": message["id"], "model": message["model"],
                "stream": stream, "kind": reply.kind, "match": reply.match, "step": reply.step,
                "n_messages": len(body.get("messages") or []), "stop": reply.stop_reason, "usage": message["usage"]}
        with self.write_lock:
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(line) + "\n")
            if self.dump_path:
                with open(self.dump_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"n": line["n"], "request": body, "response": message}) + "\n")

    def dump_other(self, method: str, path: str, body: bytes) -> None:
        if self.dump_path:
            with self.write_lock, open(self.dump_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"other": method, "path": path, "body": body.decode("utf-8", "replace")}) + "\n")


def sse_events(message: dict):
    """The streamed form of `message`: (event name, data) pairs as the Messages API sends them."""
    usage = message["usage"]
    head = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    yield "message_start", {"type": "message_start", "message": head}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            text = block["text"]
            for part in (text[: len(text) // 2], text[len(text) // 2:]):
                if part:
                    yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "text_delta", "text": part}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": dict(block, input={})}
            raw = json.dumps(block["input"])
            for part in (raw[: len(raw) // 2], raw[len(raw) // 2:]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": part}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def _handler_for(api: FakeAnthropic):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet: the request log says what happened
            pass

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _json(self, status: int, obj) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self._body()
            path = self.path.split("?", 1)[0]
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if path.endswith("/v1/messages/count_tokens") and isinstance(body, dict):
                return self._json(200, api.count_tokens(body))
            if not path.endswith("/v1/messages") or not isinstance(body, dict):
                api.dump_other("POST", self.path, raw)
                return self._json(200, {})
            message, reply = api.answer(body)
            api.record(body, message, reply, bool(body.get("stream")))
            if not body.get("stream"):
                return self._json(200, message)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
            self.end_headers()
            self.close_connection = True
            for event, data in sse_events(message):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def do_GET(self) -> None:
            api.dump_other("GET", self.path, b"")
            self._json(200, {"data": []} if self.path.split("?", 1)[0].endswith("/v1/models") else {})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, help="a scenario file (its `script`) or a bare script")
    parser.add_argument("--log", type=Path, help="append one JSON line of usage per request")
    parser.add_argument("--dump", type=Path, help="append every request and answer in full")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    data = json.loads(args.script.read_text()) if args.script else {}
    api = FakeAnthropic(data.get("script", data), log=args.log, dump=args.dump, port=args.port)
    print(api.url, flush=True)
    try:
        api.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        api.httpd.server_close()


if __name__ == "__main__":
    main()
