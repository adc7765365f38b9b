"""`ctxlamp mcp`: the stdio MCP server Claude Code starts (official `mcp` SDK 2.x).

A thin client of the service API: every tool is one or two HTTP calls, and the
answer is text written for the agent. When the service is not running, each
tool says so and how to start it.

Which session is calling: Claude Code starts this process with
`CLAUDE_CODE_SESSION_ID` and is its parent. After `/clear` the same process
serves a new session, so the caller is resolved on every call:
  1. `<runtime>/sessions/<parent pid>.json`, written by the SessionStart hook of
     that Claude Code process on startup, resume, clear and compact, when it was
     written after this process started (minus a minute of slack: the startup
     hook and the spawn race), or when it names the same session as the env;
  2. else `CLAUDE_CODE_SESSION_ID`.
The project is the hook's `cwd` for that session, else `CLAUDE_PROJECT_DIR`,
else this process's working directory.
"""
from __future__ import annotations

import json
import os
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from service.client.textsafe import printable

SERVER_NAME = "ctxlamp"
FRESH_SLACK_S = 60.0
INSTRUCTIONS = (
    "ctxlamp keeps what a session leaves for the next one (handoffs) and the history of the sessions "
    "linked by them. Before a restart or /clear, save a handoff with handoff_save; a new session loads "
    "it with handoff_load and its load token, then browses the earlier sessions with history_page, "
    "history_search (words you remember) and history_locate (a file you remember)."
)
MAX_ANSWER_CHARS = 200_000  # a tool's text: a handoff's body (100 kB at most) and its paths fit
NOT_RUNNING = ("The ctxlamp service is not running ({why}). Start it with `ctxlamp serve` in a terminal "
               "(or open the ctxlamp tray app, which starts it), then call this tool again.")


@dataclass(frozen=True)
class Caller:
    session_id: str | None
    project: str
    source: str  # "hook" or "env": where the session id came from


def resolve_caller(runtime: Path, started_at: float, *, env: Mapping[str, str] | None = None, parent_pid: int | None = None) -> Caller:
    """The session calling now (see the module docstring for the rule)."""
    env = os.environ if env is None else env
    from_env = env.get("CLAUDE_CODE_SESSION_ID") or None
    project = env.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    ppid = os.getppid() if parent_pid is None else parent_pid
    try:
        noted = json.loads((runtime / "sessions" / f"{ppid}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        noted = None
    if isinstance(noted, dict) and isinstance(noted.get("session_id"), str):
        fresh = float(noted.get("at") or 0) >= started_at - FRESH_SLACK_S
        if fresh or noted["session_id"] == from_env:
            cwd = noted["cwd"] if isinstance(noted.get("cwd"), str) and noted.get("cwd") else project
            return Caller(noted["session_id"], cwd, "hook")
    return Caller(from_env, project, "env")


class ServiceDown(Exception):
    pass


class Backend:
    """HTTP to the service; api.json is read on every call (the service may have restarted)."""

    def __init__(self, timeout: float = 20.0) -> None:
        from service.client.paths import app_paths

        self.paths = app_paths()
        self.timeout = timeout
        self.started_at = time.time()

    def caller(self) -> Caller:
        return resolve_caller(self.paths.runtime, self.started_at)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        from service.client.api import ApiClient, ApiError

        try:
            return ApiClient(timeout=self.timeout, api_file=self.paths.api_file).exchange(method, path, body)
        except ApiError as exc:
            raise ServiceDown(NOT_RUNNING.format(why=str(exc))) from None


def _error_text(status: int, obj: Any) -> str:
    detail = printable(obj.get("error") if isinstance(obj, dict) else obj, 500)
    if status == 503:
        return f"ctxlamp's database is unavailable right now ({detail}). Try again in a moment."
    return f"ctxlamp answered {status}: {detail}"


def _no_session() -> str:
    return ("ctxlamp cannot tell which Claude Code session is calling (no CLAUDE_CODE_SESSION_ID and no "
            "SessionStart hook record). Run `ctxlamp install` and start a new session.")


# -- rendering (text for the agent) -------------------------------------------------------


def render_handoff(h: dict) -> str:
    """A loaded handoff as the agent gets it: what the earlier session wrote (its task, notes and paths)
    fenced as data, each path and id on one line of its own; ctxlamp's own words outside the fence."""
    from service.client.textsafe import as_notes, text_block

    when = printable(h.get("created_at") or "?", 40)
    by = f" by session {printable(h['from_session'], 100)}" if h.get("from_session") else ""
    notes = [f"Task: {printable(h.get('task') or '', 1000)}", "", text_block(h.get("body") or "", MAX_ANSWER_CHARS // 2)]
    paths = h.get("paths") or []
    if paths:
        notes += ["", "Files that matter:"] + [f"- {printable(p, 300)}" for p in paths[:200]]
    lines = [f"Handoff {printable(h.get('token'), 64)} (saved {when}{by})", as_notes("\n".join(notes)), "",
             "This session is now linked to the earlier ones: history_page(1) pages through their turns, "
             "history_search(query) finds words you remember, history_locate(path) finds the turns that "
             "read or changed a file."]
    return "\n".join(lines)


def render_history(obj: Any) -> str:
    """The service's history answer as text. It already says what to do next (`next`);
    this only lays the turns out, fenced as notes of earlier sessions, one line each."""
    from service.client.textsafe import as_notes, text_block

    if isinstance(obj, str):
        return text_block(obj, MAX_ANSWER_CHARS)
    if not isinstance(obj, dict):
        return printable(json.dumps(obj), 2000)
    if isinstance(obj.get("text"), str):
        return as_notes(text_block(obj["text"], MAX_ANSWER_CHARS))
    out: list[str] = []
    message = obj.get("message")
    if message:
        out.append(printable(message, 1000))
    head = []
    if obj.get("page") is not None and obj.get("pages") is not None:
        head.append(f"page {printable(obj['page'], 12)} of {printable(obj['pages'], 12)}")
    if obj.get("total") is not None and obj.get("loaded", True):
        if "turns" in obj:
            head.append(f"{printable(obj['total'], 12)} turn(s) in all")
        else:
            shown = obj.get("shown", len(obj.get("hits") or []))
            head.append(f"{printable(obj['total'], 12)} match(es)"
                        + (f", {printable(shown, 12)} shown" if shown != obj["total"] else ""))
    if head:
        out.append("History: " + ", ".join(head))
    turns = [_render_turn(item) for item in obj.get("turns") or obj.get("hits") or []]
    if turns:
        out.append(as_notes("\n".join(turns)))
    nxt = obj.get("next")
    if isinstance(nxt, str) and nxt and nxt != message:
        out.append("Next: " + printable(nxt, 1000))
    elif isinstance(nxt, list):
        out.extend("Next: " + printable(n, 1000) for n in nxt)
    return "\n".join(out) if out else printable(json.dumps(obj), 2000)


def _render_turn(t: Any) -> str:
    """One turn on one line: every text in it (a path, a snippet, a prompt) filtered, none can add a line."""
    if not isinstance(t, dict):
        return f"- {printable(t, 500)}"
    bits = []
    where = " ".join(printable(x, 60) for x in (
        f"page {t['page']}" if t.get("page") is not None else None,
        f"session {str(t['session_id'])[:8]}" if t.get("session_id") else None,
        f"turn {t['turn']}" if t.get("turn") is not None else None,
        t.get("at")) if x)
    bits.append(f"- [{where}]" if where else "-")
    preview = t.get("prompt_preview") or t.get("preview")
    if preview:
        bits.append(json.dumps(printable(preview, 500), ensure_ascii=False))
    if t.get("snippet") and t.get("snippet") != preview:
        bits.append("match: " + printable(t["snippet"], 500))
    for key, label in (("paths_changed", "changed"), ("paths_read", "read")):
        paths = t.get(key)
        if isinstance(paths, list) and paths:
            more = t.get(f"{key}_more")
            bits.append(f"{label}: " + ", ".join(printable(p, 300) for p in paths[:40])
                        + (f" (and {printable(more, 12)} more)" if more else ""))
    if t.get("tokens"):
        bits.append(f"{printable(t['tokens'], 20)} tokens")
    if t.get("cost_usd") and isinstance(t["cost_usd"], (int, float)):
        bits.append(f"${float(t['cost_usd']):.4f}")
    return " ".join(bits)


# -- the tools ----------------------------------------------------------------------------


def agent_text(text: str) -> str:
    """A tool's answer as the agent gets it: transcripts and handoffs are outside text, so no control
    character but line breaks and tabs (no ESC, BEL or OSC sequence reaches a terminal), and bounded."""
    from service.client.textsafe import text_block

    return text_block(text, MAX_ANSWER_CHARS)


class Tools:
    """What each MCP tool does; plain methods so tests can call them without a transport."""

    def __init__(self, backend: Backend | None = None) -> None:
        self.backend = backend or Backend()

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return self.backend.request(method, path, body)

    def handoff_save(self, task: str, body: str, paths: list[str] | None = None) -> str:
        caller = self.backend.caller()
        try:
            status, obj = self._call("POST", "/api/v1/handoffs", {
                "task": task, "body": body, "paths": list(paths or []), "project": caller.project,
                "session_id": caller.session_id})
        except ServiceDown as exc:
            return str(exc)
        if status != 200 or not isinstance(obj, dict) or not obj.get("token"):
            return "The handoff was not saved: " + _error_text(status, obj)
        token = printable(obj["token"], 64)
        return (f"Handoff saved. load token: {token}\n"
                f"The next session of this project ({caller.project}) is reminded of it when it starts "
                f"(after /clear too) and picks it up with handoff_load(\"{token}\").")

    def handoff_load(self, token: str) -> str:
        caller = self.backend.caller()
        if not caller.session_id:
            return _no_session()
        token = token.strip()
        try:
            status, obj = self._call("POST", f"/api/v1/handoffs/{urllib.parse.quote(token, safe='')}/load",
                                     {"session_id": caller.session_id})
        except ServiceDown as exc:
            return str(exc)
        if status == 404:
            return (f"No handoff has the load token {token!r}. Check the token in the reminder at the start "
                    "of this session (it looks like `load token: ...`).")
        if status != 200 or not isinstance(obj, dict):
            return "The handoff was not loaded: " + _error_text(status, obj)
        return agent_text(render_handoff(obj))

    def rotate_session(self) -> str:
        caller = self.backend.caller()
        if not caller.session_id:
            return _no_session()
        try:
            status, obj = self._call("POST", "/api/v1/rotate", {"session_id": caller.session_id, "cwd": caller.project})
        except ServiceDown as exc:
            return str(exc)
        if status != 200 or not isinstance(obj, dict) or not obj.get("ok", False):
            return "ctxlamp could not switch: " + _error_text(status, obj)
        pending = " (it starts measuring as soon as the transcript appears)" if obj.get("pending") else ""
        return f"ctxlamp now measures this session ({printable(obj.get('following') or caller.session_id, 200)}){pending}."

    def _history(self, what: str, **params: Any) -> str:
        caller = self.backend.caller()
        if not caller.session_id:
            return _no_session()
        query = urllib.parse.urlencode({"session_id": caller.session_id, **params})
        try:
            status, obj = self._call("GET", f"/api/v1/history/{what}?{query}")
        except ServiceDown as exc:
            return str(exc)
        if status in (404, 409) and isinstance(obj, dict) and obj.get("error"):
            return agent_text(str(obj["error"]))
        if status != 200:
            return _error_text(status, obj)
        return agent_text(render_history(obj))

    def history_page(self, page: int = 1) -> str:
        return self._history("page", page=max(1, int(page)))

    def history_search(self, query: str) -> str:
        if not query.strip():
            return "Give the words you remember (history_search needs a query); to browse instead, use history_page(1)."
        return self._history("search", q=query)

    def history_locate(self, path: str) -> str:
        if not path.strip():
            return "Give a file path or a part of one (history_locate needs a path); to browse, use history_page(1)."
        return self._history("locate", path=path)


def build_server(tools: Tools | None = None):
    from mcp.server.mcpserver import MCPServer

    from service import __version__

    tools = tools or Tools()
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    @server.tool(structured_output=False)
    def handoff_save(task: str, body: str, paths: list[str] | None = None) -> str:
        """Save a handoff for the next session of this project: `task` is one line (what the work is),
        `body` says what was done, what is next and what to watch out for, `paths` lists the files that
        matter. Returns the load token the next session uses with handoff_load."""
        return tools.handoff_save(task, body, paths)

    @server.tool(structured_output=False)
    def handoff_load(token: str) -> str:
        """Load a handoff by its load token: returns its notes and links this session to the sessions
        before it, so that history_page, history_search and history_locate can look through them."""
        return tools.handoff_load(token)

    @server.tool(structured_output=False)
    def rotate_session() -> str:
        """Tell ctxlamp that this session is the one to measure now (use it when the session start
        reminder says ctxlamp could not switch)."""
        return tools.rotate_session()

    @server.tool(structured_output=False)
    def history_page(page: int = 1) -> str:
        """Page through the turns of the sessions linked to this one by the handoff it loaded, oldest
        first (page 1 is the oldest). Needs a handoff loaded into this session."""
        return tools.history_page(page)

    @server.tool(structured_output=False)
    def history_search(query: str) -> str:
        """Find the earlier turns that mention words you remember (prompts and file paths) in the
        sessions linked to this one by its loaded handoff. Says which page to open next."""
        return tools.history_search(query)

    @server.tool(structured_output=False)
    def history_locate(path: str) -> str:
        """Find the earlier turns that read or changed a file (a full path or a part of one) in the
        sessions linked to this one by its loaded handoff. Says which page to open next."""
        return tools.history_locate(path)

    return server


def main() -> int:
    build_server().run()  # stdio
    return 0
