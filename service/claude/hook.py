"""`ctxlamp hook session-start`: Claude Code's SessionStart hook.

Bounded best effort: whatever happens (service down, database locked, garbage on
stdin) it exits 0 within DEADLINE_S, so a session starts with or without ctxlamp.
Only the standard library is imported here (no peewee, tiktoken or Qt): Claude
Code waits for this process before the session starts.

What it does, from the hook JSON on stdin:
- remembers which session the calling Claude Code process (CLAUDE_PID) runs now,
  in `<runtime>/sessions/<pid>.json`, so the MCP server that process spawned
  follows `/clear` (see service/claude/mcp_server.py);
- when the service follows another session for this project (or none), asks it to
  rotate (POST /api/v1/rotate); if that fails, tells the agent to call
  `rotate_session`;
- on `startup` and `clear` (not `resume`, not `compact`), finds the project's
  undelivered handoffs (from the service, else read-only from the database) and
  injects a reminder: `load token: <token>`, age and task preview, newest first,
  at most MAX_SHOWN;
- on `resume` and `fork` injects nothing; onto a cold cache it tells the user (a `systemMessage`)
  what the next message rewrites and what a fresh session writes (service/claude/hook_moves.py).

`ctxlamp hook pre-model-switch` (Claude Code's PreModelSwitch) tells the user what the switch rewrites.
"""
from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import urllib.parse
from datetime import datetime, timezone

from service.client.api import ApiClient, ApiError, read_api_info
from service.client.privdir import write_private
from service.client.textsafe import as_notes, printable

DEADLINE_S = 1.5          # the whole hook; Claude Code's own timeout for it is 5 s
REQUEST_TIMEOUT_S = 0.6   # one HTTP request at most
MAX_STDIN = 1 << 20
MAX_SHOWN = 3
PREVIEW_CHARS = 120
DISCOVERY_SOURCES = ("startup", "clear")
RESUME_SOURCES = ("resume", "fork")  # a resume injects nothing into the context; a cold cache is told the user
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_started = time.monotonic()
_writing = threading.Event()
_ready: list[str] = []  # an answer already made (the resume's message): the watchdog still gives it


def _left() -> float:
    return DEADLINE_S - (time.monotonic() - _started)


def _watchdog() -> threading.Timer:
    """Hard stop: exit 0 unless the answer is already being written; an answer already made (the message for
    the user on a resume) is written first, so a slow rotation after it does not lose it."""
    def fire() -> None:
        if not _writing.is_set():
            _writing.set()
            if _ready:
                try:
                    sys.stdout.write(_ready[0] + "\n")
                    sys.stdout.flush()
                except BaseException:
                    pass
            os._exit(0)
    timer = threading.Timer(max(0.05, _left()), fire)
    timer.daemon = True
    timer.start()
    return timer


# -- where the service and its files are --------------------------------------------


def _paths():
    from service.client.paths import app_paths  # stdlib only (platformdirs when CTXLAMP_HOME is unset)

    return app_paths()


class ServiceDown(Exception):
    """Why the service cannot help, in one of the hook's own fixed sentences (never the service's text,
    which would reach the new session's context)."""


NOT_RUNNING = "the ctxlamp service is not running"
NO_ANSWER = "the ctxlamp service did not answer in time"
REFUSED = "the ctxlamp service refused to switch"


class Api:
    """The service, every call bounded by what is left of the hook's deadline."""

    def __init__(self, api_file) -> None:
        if read_api_info(api_file) is None:
            raise ServiceDown(NOT_RUNNING)
        self.client = ApiClient(api_file=api_file)  # a stale file whose listener is not ours is removed

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        timeout = min(REQUEST_TIMEOUT_S, _left() - 0.1)
        if timeout <= 0.05:
            raise ServiceDown(NO_ANSWER)
        try:
            answer = self.client.request(method, path, body, timeout=timeout)
        except ApiError as exc:
            if exc.down:
                raise ServiceDown(NO_ANSWER if "did not answer" in str(exc) else NOT_RUNNING) from exc
            raise ServiceDown(REFUSED) from exc
        return answer if isinstance(answer, dict) else {}


# -- the pieces -------------------------------------------------------------------------


def remember_session(paths, claude_pid: str | None, session_id: str, cwd: str | None) -> None:
    """`<runtime>/sessions/<claude pid>.json`: the session that Claude Code process runs now."""
    if not claude_pid or not claude_pid.isdigit():
        return
    folder = paths.runtime / "sessions"
    target = folder / f"{claude_pid}.json"
    note = json.dumps({"session_id": session_id, "cwd": cwd, "at": time.time()}).encode("utf-8")
    write_private(target, note, durable=False)  # never through a planted link; rebuilt at the next start
    for stale in folder.glob("*.json"):  # files of Claude Code processes that are gone
        pid = stale.stem
        if pid.isdigit() and pid != claude_pid and not _alive(int(pid)):
            try:
                stale.unlink()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def followed_in_project(status: dict, cwd: str | None) -> str | None:
    """The session the service follows for `cwd`: its own per-project answer when it gives
    one, else the tray's session if it is in this project, else the project's most recently
    active live session."""
    by_project = status.get("followed_by_project")
    if isinstance(by_project, dict) and cwd in by_project:
        return by_project[cwd]
    sessions = [s for s in status.get("sessions") or [] if isinstance(s, dict)]
    mine = [s for s in sessions if cwd and s.get("project") == cwd]
    followed = status.get("followed")
    if followed and any(s.get("session_id") == followed for s in mine):
        return followed
    return mine[0].get("session_id") if mine else None


def rotate_if_needed(api: Api | None, down: str | None, session_id: str, payload: dict) -> str | None:
    """None when the service follows this session (now); else why it could not switch."""
    if api is None:
        return down or NOT_RUNNING
    try:
        if followed_in_project(api.call("GET", "/api/v1/status"), payload.get("cwd")) == session_id:
            return None
        answer = api.call("POST", "/api/v1/rotate", {
            "session_id": session_id, "transcript_path": payload.get("transcript_path"),
            "cwd": payload.get("cwd"), "claude_pid": os.environ.get("CLAUDE_PID")})
    except ServiceDown as exc:
        return str(exc)
    if not answer.get("ok", True):
        return REFUSED  # its reason stays out of the session's context
    return None


def handoffs_from_api(api: Api, project: str) -> list[dict]:
    query = urllib.parse.urlencode({"project": project, "undelivered": 1})
    rows = api.call("GET", f"/api/v1/handoffs?{query}").get("handoffs") or []
    return [r for r in rows if isinstance(r, dict)]


def handoffs_from_database(db_path, project: str) -> list[dict]:
    """Read-only, never creating the file, giving up quickly when it is locked."""
    import sqlite3

    if not db_path.exists():
        return []
    uri = "file:" + urllib.parse.quote(str(db_path), safe="/") + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=max(0.05, min(0.5, _left() - 0.2)))
    try:
        con.execute("PRAGMA query_only = 1")
        rows = con.execute(
            "SELECT token, task, created_at, from_session FROM handoff WHERE project = ? AND delivered_at IS NULL "
            "ORDER BY created_at DESC, id DESC LIMIT 20", (project,)).fetchall()
    finally:
        con.close()
    return [{"token": t, "task": task, "created_at": c, "from_session": f} for t, task, c, f in rows]


def age_text(created_at: str | None, now: datetime | None = None) -> str:
    try:
        then = datetime.fromisoformat(str(created_at).replace("Z", "+00:00"))
        if then.tzinfo is None:
            then = then.replace(tzinfo=timezone.utc)
    except ValueError:
        return "saved at an unknown time"
    seconds = max(0, int(((now or datetime.now(timezone.utc)) - then).total_seconds()))
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"saved {n} {unit}{'s' if unit == 'day' and n > 1 else ''} ago"
    return "saved just now"


def handoff_reminder(handoffs: list[dict], now: datetime | None = None) -> str | None:
    usable = [h for h in handoffs if isinstance(h.get("token"), str) and TOKEN_RE.match(h["token"])]
    if not usable:
        return None
    usable.sort(key=lambda h: str(h.get("created_at") or ""), reverse=True)
    shown = usable[:MAX_SHOWN]
    head = ("ctxlamp: an earlier session of this project left a handoff for you"
            if len(usable) == 1 else
            f"ctxlamp: earlier sessions of this project left {len(usable)} handoffs"
            + (f" (the {len(shown)} newest shown)" if len(usable) > len(shown) else "") + ", newest first")
    head += (". To pick one up, call the MCP tool handoff_load (mcp__ctxlamp__handoff_load) with its token; it "
             "brings the notes and links this session to the earlier ones so the history tools work.")
    lines = []
    for h in shown:
        task = " ".join(printable(h.get("task") or "", 10 * PREVIEW_CHARS).split())
        if len(task) > PREVIEW_CHARS:
            task = task[: PREVIEW_CHARS - 1] + "…"
        lines.append(f"- load token: {h['token']} ({age_text(h.get('created_at'), now)}) task: {task or '(none given)'}")
    return head + "\n" + as_notes("\n".join(lines))  # the tasks are an earlier session's words: data


def rotation_fallback(session_id: str, why: str) -> str:
    """The fixed words telling the agent to call rotate_session; `why` is one of the hook's own sentences."""
    why = why if why in (NOT_RUNNING, NO_ANSWER, REFUSED) else NOT_RUNNING
    return (f"ctxlamp: the lamp could not switch to this session ({printable(session_id, 100)}): {why}. "
            "Call the MCP tool rotate_session (mcp__ctxlamp__rotate_session) once so that ctxlamp "
            "measures this session.")


# -- the hook ------------------------------------------------------------------------


def answer(payload: dict) -> str | None:
    """The additionalContext to inject, or None (everything here may raise: the caller absorbs it)."""
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return None
    source = payload.get("source")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else os.environ.get("CLAUDE_PROJECT_DIR")
    payload = dict(payload, cwd=cwd)
    paths = _paths()
    parts: list[str] = []
    try:
        remember_session(paths, os.environ.get("CLAUDE_PID"), session_id, cwd)
    except OSError:
        pass
    api, down = None, None
    try:
        api = Api(paths.api_file)
    except ServiceDown as exc:
        down = str(exc)
    why = rotate_if_needed(api, down, session_id, payload)
    if why is not None:
        parts.append(rotation_fallback(session_id, why))
        if api is not None and why == NO_ANSWER:
            api = None  # the service hangs: do not spend the rest of the deadline on it
    if source in DISCOVERY_SOURCES and cwd:
        handoffs = None
        if api is not None:
            try:
                handoffs = handoffs_from_api(api, cwd)
            except ServiceDown:
                handoffs = None
        if handoffs is None:
            try:
                handoffs = handoffs_from_database(paths.db, os.path.normpath(cwd))
            except Exception:  # locked, missing table, corrupt: nothing to show
                handoffs = []
        reminder = handoff_reminder(handoffs)
        if reminder:
            parts.insert(0, reminder)
    return "\n\n".join(parts) if parts else None


def user_message(payload: dict) -> str | None:
    """The systemMessage for the user: on a resume onto a cold cache, both prices (service/claude/hook_moves.py)."""
    from service.claude.hook_moves import cold_resume

    if payload.get("source") not in RESUME_SOURCES:
        return None
    paths = _paths()
    try:
        api: Api | None = Api(paths.api_file)
    except ServiceDown:
        api = None
    return cold_resume(payload, api.call if api is not None else None,
                       lambda project: handoffs_from_database(paths.db, os.path.normpath(project)))


def main(stdin=None, stdout=None, event: str = "session-start") -> int:
    global _started
    _started = time.monotonic()
    timer = _watchdog()
    try:
        return _run(stdin, stdout, event)
    finally:
        timer.cancel()


def _run(stdin, stdout, event: str = "session-start") -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    text = message = None
    try:
        raw = stdin.buffer.read(MAX_STDIN) if hasattr(stdin, "buffer") else stdin.read(MAX_STDIN)
        payload = json.loads(raw)
        if isinstance(payload, dict) and event == "pre-model-switch":
            from service.claude.hook_moves import model_switch_message

            message = model_switch_message(payload)
        elif isinstance(payload, dict) and payload.get("source") in RESUME_SOURCES:
            message = user_message(payload)  # first: the user's message must not wait on the rotation
            if message:
                _ready.append(json.dumps({"systemMessage": message}))
            answer(payload)  # the rotation; nothing goes into the session's context on a resume (the spec)
        elif isinstance(payload, dict):
            text = answer(payload)
    except BaseException:  # garbage, a broken pipe, a bug: the session starts anyway
        return 0
    if not text and not message:
        return 0
    doc: dict = {"systemMessage": message} if message else {}
    if text:
        doc["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": text}
    out = json.dumps(doc)
    _writing.set()
    try:
        stdout.write(out + "\n")
        stdout.flush()
    except BaseException:
        pass
    return 0
