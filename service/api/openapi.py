"""The OpenAPI 3.1 document of the local API (docs/api.md in machine form).

Written by hand, except the snapshot and its lamp, which are made from their
types in service/client/payloads.py so the two cannot drift apart.
tests/integration/daemon/test_service_process.py checks that every route the server dispatches is here.
"""
from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from service import __version__
from service.client import payloads


def _obj(props: dict | None = None, required: list[str] | None = None, extra: bool = True) -> dict:
    out: dict = {"type": "object"}
    if props:
        out["properties"] = props
    if required:
        out["required"] = required
    if extra:
        out["additionalProperties"] = True
    return out


NUM = {"type": ["number", "null"]}
ZONE = "an IANA time zone (default: [report] timezone, else the machine's); 400 when unknown"
INT = {"type": "integer"}
STR = {"type": "string"}
NSTR = {"type": ["string", "null"]}

_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}
_REFS: dict[Any, str] = {payloads.Lamp: "Lamp", payloads.RestartSavings: "RestartSavings",
                         payloads.Advice: "Advice"}  # types that have a schema of their own


def _schema_of(tp: Any) -> dict:
    """The JSON schema of a field's type: scalars, `X | None`, Literal, lists, and TypedDicts (an object)."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) != 1:
            raise TypeError(f"no schema for {tp!r}")
        inner = _schema_of(members[0])
        if "type" not in inner or not isinstance(inner["type"], str):
            return {"anyOf": [inner, {"type": "null"}]}
        return {**inner, "type": [inner["type"], "null"]}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin is list:
        return {"type": "array"}
    if tp in _REFS:
        return {"$ref": f"#/components/schemas/{_REFS[tp]}"}
    if is_typeddict(tp):
        return {"type": "object", "additionalProperties": True}
    if tp in _JSON_TYPES:
        return {"type": _JSON_TYPES[tp]}
    raise TypeError(f"no schema for {tp!r}")


def _typed(td: type, required: list[str]) -> dict:
    """An object schema from a TypedDict: one property per field, in the order the type declares them."""
    hints = get_type_hints(td)
    return _obj({name: _schema_of(hint) for name, hint in hints.items()}, required)

SCHEMAS = {
    "Error": _obj({"error": STR}, ["error"], extra=False),
    "Lamp": _typed(payloads.Lamp, ["state", "colour"]),
    "Snapshot": _typed(payloads.Snapshot, ["session_id", "segment", "calls", "lamp"]),
    "RestartSavings": _typed(payloads.RestartSavings, []),
    "Advice": _typed(payloads.Advice, ["move", "horizon_calls", "continue_usd", "compact_usd", "restart_usd",
                                       "saves_usd", "label", "pays_twice"]),
    "Service": _obj({
        "version": STR, "started_at": STR, "pid": INT,
        "scan": _obj({"state": {"enum": ["idle", "catching_up", "scanning"]}, "done": INT, "total": INT}),
        "db": _obj({"ok": {"type": "boolean"}, "error": NSTR}),
        "observer": {"enum": ["inotify", "fsevents", "kqueue", "windows", "polling", None]}, "observer_reason": NSTR,
        "checkpoint": _obj({"loaded": {"type": ["integer", "null"]}, "rejected": {"type": "array"}}),
        "skipped_files": {"type": "array", "items": _obj({"path": STR, "reason": STR}, ["path", "reason"])},
    }),
    "LimitWindow": {"type": ["object", "null"], "properties": {
        "used_percentage": {"type": "number"}, "resets_at": NSTR, "seen_at": NSTR, "pct_per_usd": NUM},
        "additionalProperties": True},
    "Limits": _obj({w: {"$ref": "#/components/schemas/LimitWindow"} for w in ("five_hour", "seven_day", "spend_limit")},
                   ["five_hour", "seven_day", "spend_limit"]),
    "Status": _obj({"sessions": {"type": "array", "items": {"$ref": "#/components/schemas/Snapshot"}},
                    "followed": NSTR, "service": {"$ref": "#/components/schemas/Service"},
                    "limits": {"$ref": "#/components/schemas/Limits"},
                    "claude_code": _obj({"idle_compaction": {"type": "boolean"}})},
                   ["sessions", "followed", "service", "limits"]),
    "StatuslineInput": _obj({"session_id": STR, "transcript_path": STR, "cwd": STR, "version": STR, "model": _obj(),
                             "cost": _obj(), "context_window": _obj(), "prompt_cache": _obj(), "rate_limits": _obj()}),
    "StatuslineAnswer": _obj({"known": {"type": "boolean"}, "session": {"type": ["object", "null"]},
                              "limits": _obj(), "turn": {"type": ["object", "null"]}, "cache_expires_at": NUM,
                              "format": NSTR}, ["known", "session", "limits", "turn"]),
    "Series": _obj({"session_id": STR, "calls": {"type": "array", "items": _obj()},
                    "resets": {"type": "array", "items": _obj()}, "reminders": {"type": "array", "items": _obj()},
                    "rewinds": {"type": "array", "items": _obj()},
                    "skeleton": {"type": ["object", "null"]},
                    "paths": {"type": "array", "items": _obj({"path": STR, "tokens": INT,
                                                              "selected": {"type": "boolean"}, "why": NSTR})}}),
    "Profile": _obj({"session_id": STR, "segment": INT, "end_reason": NSTR, "model": NSTR, "path_totals": _obj(),
                     "models": {"type": "array", "items": _obj({"model": STR, "calls": INT, "bill_in_usd": NUM,
                                                                "bill_out_usd": NUM})},
                     "restart_savings": {"oneOf": [{"$ref": "#/components/schemas/RestartSavings"},
                                                   {"type": "null"}]}}),
    "Reminder": _obj({"session_id": STR, "segment": INT, "lap": INT, "call": {"type": ["integer", "null"]},
                      "at": NSTR, "restart_usd": NUM, "payback_calls": NUM, "rent_usd": NUM,
                      "restart_now": {"type": ["object", "null"], "properties": {
                          "label": STR, "calls_ahead": {"type": "number"}, "history_segments": INT,
                          "saving_usd": {"type": "number"}, "payback_calls": NUM}}},
                     ["session_id", "segment", "lap"]),
    "Channel": _obj({"channel": STR, "label": {"enum": ["measured", "estimated"]}, "bucket": STR,
                     "buckets": {"type": "array"}, "totals": _obj(), "sources": {"type": "array"}}),
    "Handoff": _obj({"token": STR, "task": STR, "body": STR, "paths": {"type": "array"}, "project": NSTR}),
    "Config": _obj({s: _obj() for s in ("engine", "selection", "reminders", "history", "sessions",
                                         "database", "tokenizer", "team", "statusline", "limits")}),
}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _ok(schema: dict, desc: str = "OK") -> dict:
    return {"200": {"description": desc, "content": {"application/json": {"schema": schema}}}}


def _q(name: str, schema: dict = STR, required: bool = False, desc: str = "") -> dict:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": desc}


def _p(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": STR}


def _body(schema: dict) -> dict:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _op(summary: str, responses: dict, params: list | None = None, body: dict | None = None) -> dict:
    op = {"summary": summary, "responses": {**responses, **COMMON}}
    if params:
        op["parameters"] = params
    if body:
        op["requestBody"] = body
    return op


COMMON = {
    "401": {"description": "missing or wrong bearer token", "content": {"application/json": {"schema": _ref("Error")}}},
    "403": {"description": "Host header is not loopback", "content": {"application/json": {"schema": _ref("Error")}}},
    "413": {"description": "body over 1 MiB", "content": {"application/json": {"schema": _ref("Error")}}},
}
E503 = {"503": {"description": "database unavailable", "content": {"application/json": {"schema": _ref("Error")}}}}
E404 = {"404": {"description": "not found", "content": {"application/json": {"schema": _ref("Error")}}}}

PATHS = {
    "/api/v1/proof": {"get": {"summary": "this service's proof for a client's nonce (asked before the token is "
                                         "sent; service/client/proof.py)", "security": [],
                              "parameters": [_q("nonce", {"type": "string", "pattern": "^[0-9a-f]{32,128}$"}, True)],
                              "responses": {**_ok(_obj({"proof": STR})), "400": {
                                  "description": "not a nonce", "content": {"application/json": {
                                      "schema": _ref("Error")}}}}}},
    "/api/v1/health": {"get": _op("liveness", _ok(_obj({"ok": {"type": "boolean"}, "version": STR, "pid": INT,
                                                        "started_at": STR})))},
    "/api/v1/status": {"get": _op("every live session's snapshot, the followed session, the service",
                                  _ok(_ref("Status")))},
    "/api/v1/sessions/{id}/series": {"get": _op("per-call series of a live session", {**_ok(_ref("Series")), **E404},
                                                [_p("id")])},
    "/api/v1/sessions/{id}/selection": {"post": _op(
        "revaluation: exclude or include paths", {**_ok(_ref("Snapshot")), **E404}, [_p("id")],
        _body(_obj({"exclude": {"type": "array", "items": STR}, "include": {"type": "array", "items": STR}})))},
    "/api/v1/segments": {"get": _op("archived segment profiles, newest first",
                                    {**_ok(_obj({"segments": {"type": "array", "items": _ref("Profile")}})), **E503},
                                    [_q("session"), _q("limit", INT)])},
    "/api/v1/reminders": {"get": _op("reminders raised (one per session, segment and lap)",
                                     _ok(_obj({"reminders": {"type": "array", "items": _ref("Reminder")}})),
                                     [_q("session"), _q("since", desc="ISO time")])},
    "/api/v1/channels/{channel}": {"get": _op(
        "edit, pinch or retrieval channel in time buckets", {**_ok(_ref("Channel")), **E503},
        [{"name": "channel", "in": "path", "required": True, "schema": {"enum": ["edit", "pinch", "retrieval"]}},
         _q("since"), _q("until"), _q("bucket", {"enum": ["hour", "day"]})])},
    "/api/v1/spend": {"get": _op("spend and data quality", {**_ok(_obj()), **E503},
                                 [_q("since"), _q("until"), _q("timezone", desc=ZONE)])},
    "/api/v1/report": {"get": _op("the whole `ctxlamp report --json` for the period (days in `timezone`)", _ok(_obj()),
                                  [_q("since"), _q("until"), _q("timezone", desc=ZONE)])},
    "/api/v1/overview": {"get": _op("the window's overview: spend per day by model and project, dearest sessions, "
                                    "rent and what restarting at the reminders would have saved (days in `timezone`)",
                                    {**_ok(_obj()), **E503}, [_q("days", INT), _q("timezone", desc=ZONE),
                                                              _q("devices", {"enum": ["all"]},
                                                                 desc="all: every device of the sync folder "
                                                                      "summed, in UTC days (docs/sync.md)")])},

    "/api/v1/team": {"get": _op("the team report (`ctxlamp team report --json`), this member, the last push",
                                {**_ok(_obj()), **E404, **E503}, [_q("since"), _q("until")])},
    "/api/v1/team/push": {"post": _op(
        "push this member's figures now (what `ctxlamp team push` asks a running service)",
        {**_ok(_obj({"ok": {"type": "boolean"}, "exit_code": INT, "sent": INT, "message": STR})), **E404}, None,
        _body(_obj({"url": STR, "member": STR})))},
    "/api/v1/sync": {"get": _op("the sync folder (docs/sync.md): on, this device, every device's figures over the "
                                "period in UTC days (`devices`: id, name, last_seen, total_usd, calls, this, "
                                "stale), the files left out (`skipped`), the last sync", _ok(_obj()),
                                [_q("since"), _q("until")])},
    "/api/v1/sync/now": {"post": _op(
        "write this device's figures to the sync folder and read the others' now (what Settings' Sync now asks)",
        {**_ok(_obj()), **E503, "409": {"description": "sync is off, or the folder cannot be written"}}, None,
        _body(_obj({})))},
    "/api/v1/rotate": {"post": _op(
        "follow another session of a project (SessionStart hook)",
        _ok(_obj({"ok": {"type": "boolean"}, "following": STR, "pending": {"type": "boolean"}})), None,
        _body(_obj({"session_id": STR, "transcript_path": STR, "cwd": STR}, ["session_id"])))},
    "/api/v1/handoffs": {
        "post": _op("save a handoff", {**_ok(_ref("Handoff")), **E503}, None,
                    _body(_obj({"task": STR, "body": STR, "paths": {"type": "array", "items": STR},
                                "project": STR, "session_id": STR}, ["task", "body", "project"]))),
        "get": _op("handoffs, newest first", {**_ok(_obj({"handoffs": {"type": "array", "items": _ref("Handoff")}})),
                                              **E503}, [_q("project"), _q("undelivered", {"enum": ["0", "1"]})]),
    },
    "/api/v1/handoffs/{token}/load": {"post": _op("deliver a handoff into a session",
                                                  {**_ok(_ref("Handoff")), **E404, **E503}, [_p("token")],
                                                  _body(_obj({"session_id": STR}, ["session_id"])))},
    "/api/v1/history/page": {"get": _op("a page of the caller's lineage", {**_ok(_obj()), **E503},
                                        [_q("session_id", required=True), _q("page", INT)])},
    "/api/v1/history/search": {"get": _op("search the caller's lineage", {**_ok(_obj()), **E503},
                                          [_q("session_id", required=True), _q("q", required=True)])},
    "/api/v1/history/locate": {"get": _op("turns that read or changed a path", {**_ok(_obj()), **E503},
                                          [_q("session_id", required=True), _q("path", required=True)])},
    "/api/v1/config": {
        "get": _op("the effective configuration", _ok(_ref("Config"))),
        "post": _op("merge settings and persist them to config.toml (check=1: validate only, save nothing)",
                    _ok(_ref("Config")), [_q("check", {"enum": ["0", "1"]})], _body(_ref("Config"))),
    },
    "/api/v1/config/defaults": {"get": _op("the default of every setting", _ok(_ref("Config")))},
    "/api/v1/events": {"get": _op("SSE stream: service, snapshot, limits, reminder, rotated events", {
        "200": {"description": "text/event-stream", "content": {"text/event-stream": {"schema": STR}}}})},
    "/api/v1/openapi.json": {"get": _op("this document", _ok(_obj()))},
    "/api/v1/statusline": {"post": _op(
        "what Claude Code's status line reported (kept per session and account); the line's facts back",
        _ok(_ref("StatuslineAnswer")), None, _body(_ref("StatuslineInput")))},
    "/api/v1/limits": {"get": _op(
        "plan limits last seen, the account's readings, and with ?session= its readings and per-turn window cost",
        _ok(_obj({"limits": _ref("Limits"), "account": {"type": "array", "items": _obj()},
                  "session": _obj({"session_id": STR, "readings": {"type": "array", "items": _obj()},
                                   "turns": {"type": "array", "items": _obj()}})}, ["limits", "account"])),
        [_q("session")])},
}


def document(port: int | None = None) -> dict:
    servers = [{"url": f"http://127.0.0.1:{port}"}] if port else []
    return {
        "openapi": "3.1.0",
        "info": {"title": "ctxlamp local API", "version": __version__,
                 "description": "The service's API for the desktop, MCP server and hook. See docs/api.md."},
        "servers": servers,
        "security": [{"bearer": []}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}, "schemas": SCHEMAS},
        "paths": PATHS,
    }
