"""What the hooks tell the user at Claude Code's own moves: a resume onto a cold cache, a model switch.

Both answer with a `systemMessage` (shown to the user, never sent to the model) and inform: a cache
notice, not a restart reminder (docs/measurement.md section 16). Standard library only, like the hook.

- SessionStart with `source` resume or fork and `prompt_cache_likely_expired`: the next message rewrites
  the whole prompt; a fresh session writes the useful part. Priced with the service's snapshot of the
  session (both amounts at ctxlamp's prices), else Claude Code's own estimate of the rewrite alone. The
  handoff's load command is given only for a handoff the session saved before its break.
- PreModelSwitch: what the switch rewrites (Claude Code's own figures), and whether it forfeits a warm
  cache.

Every input is outside text: a figure out of its range is dropped, a name passes the text filter.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from service.client.breaks import handoff_before_break
from service.client.figures import tokens, usd
from service.client.textsafe import printable
from service.client.words import cold_cache_lines, model_name

RESUME_SOURCES = ("resume", "fork")
MAX_TOKENS = 1e8     # a context of more than 100M tokens is no reading of a real session
MAX_USD = 1e5
MAX_BREAK_S = 366 * 86400


def _figure(payload: dict, key: str, hi: float) -> float | None:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value <= hi else None


def _break_words(seconds: float | None) -> str:
    if seconds is None:
        return ""
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f" after {n} {unit}{'s' if unit == 'day' and n > 1 else ''}"
    return ""


def cold_resume_message(payload: dict, snapshot: dict | None, handoffs: list[dict] | None,
                        now: float | None = None) -> str | None:
    """The systemMessage for a resume (or fork) onto a cold cache, else None.

    `snapshot`: the service's snapshot of the session (None when it is down or does not know it);
    `handoffs`: the project's undelivered handoffs (None when unknown)."""
    if payload.get("source") not in RESUME_SOURCES or payload.get("prompt_cache_likely_expired") is not True:
        return None
    now = time.time() if now is None else now
    away = _figure(payload, "seconds_since_last_response", MAX_BREAK_S)
    cache = (snapshot or {}).get("cache") if isinstance((snapshot or {}).get("cache"), dict) else None
    if cache is None or not isinstance(cache.get("cold_rewrite_usd"), (int, float)):
        cache = {"cold_rewrite_usd": _figure(payload, "estimated_cache_write_usd", MAX_USD),
                 "cold_rewrite_tokens": _figure(payload, "context_tokens", MAX_TOKENS)}
    sid = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    last = (snapshot or {}).get("updated_at") or (now - away if away is not None else None)
    handoff = handoff_before_break(handoffs or [], sid, last)
    lines = cold_cache_lines(cache, handoff is not None)
    lines[0] = f"ctxlamp: cache cold{_break_words(away)}:{lines[0].removeprefix('Cache cold:')}"
    token = handoff.get("token") if handoff else None
    if isinstance(token, str) and token.replace("-", "").replace("_", "").isascii() \
            and token.replace("-", "").replace("_", "").isalnum() and len(token) <= 64:
        lines.append(f"To start fresh with it: /clear, then load token {token}.")
    return "\n".join(lines)


def model_switch_message(payload: dict) -> str | None:
    """The systemMessage for a PreModelSwitch: what the switch rewrites, and what it forfeits."""
    context = _figure(payload, "context_tokens", MAX_TOKENS)
    cost = _figure(payload, "estimated_cache_write_usd", MAX_USD)
    if not context or cost is None:
        return None  # before the first response: nothing to rewrite
    to = payload.get("to_model")
    name = printable(model_name(to), 60) if isinstance(to, str) and 0 < len(to) <= 200 else "the new model"
    text = f"ctxlamp: switching to {name} rewrites {tokens(context)} tokens ({usd(cost)}) into its cache"
    warm = payload.get("prompt_cache_warm")
    if warm is True:
        text += "; the current model's warm cache is left behind."
    elif warm is False:
        text += "; the cache is cold anyway, so the next message pays a rewrite either way."
    else:
        text += "."
    return text


def cold_resume(payload: dict, call: Callable[[str, str], Any] | None,
                db_handoffs: Callable[[str], list[dict]] | None) -> str | None:
    """The resume message, asking the service (`call(method, path)`) for the session's snapshot and the
    project's handoffs, else reading the handoffs from the database (`db_handoffs(project)`)."""
    if payload.get("source") not in RESUME_SOURCES or payload.get("prompt_cache_likely_expired") is not True:
        return None
    import urllib.parse

    sid, cwd = payload.get("session_id"), payload.get("cwd")
    snapshot, handoffs = None, None
    if call is not None:
        try:
            status = call("GET", "/api/v1/status")
            snapshot = next((s for s in status.get("sessions") or [] if isinstance(s, dict)
                             and s.get("session_id") == sid), None)
            if isinstance(cwd, str) and cwd:
                rows = call("GET", "/api/v1/handoffs?" + urllib.parse.urlencode({"project": cwd, "undelivered": 1}))
                handoffs = [r for r in rows.get("handoffs") or [] if isinstance(r, dict)]
        except Exception:  # the service went away or answered oddly: what Claude Code said is enough
            pass
    if handoffs is None and db_handoffs is not None and isinstance(cwd, str) and cwd:
        try:
            handoffs = db_handoffs(cwd)
        except Exception:  # locked, missing table, corrupt: no handoff to offer
            handoffs = None
    return cold_resume_message(payload, snapshot, handoffs)
