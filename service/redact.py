"""The one redaction of database URLs: every message that can carry one goes through `redact` first.

A password reaches a message in more ways than the parsed URL: a URL libpq
cannot parse comes back whole (or its bad token alone) in the driver's error,
a traceback quotes it, a `password=` key/value pair travels in a query string.
`redact` removes the passwords of the URLs it is given in every form they take
(as written, percent-decoded, percent-encoded), and any `scheme://user:...@`
userinfo and `password=...` pair it meets, known or not. The service log's
formatter, the team commands' errors, every error the API answers, `GET /api/v1/team`,
the settings the API serves (`redact_settings`) and the Team tab's text all use it.
"""
from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import quote, unquote

MASK = "***"

# scheme://user:password@ : the password runs to the last "@" before white space or a quote
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*):[^\s'\"]*@")
# password=value in a key/value connection string or a query (quoted or bare)
_PAIR = re.compile(r"(?P<head>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&'\"]+)", re.IGNORECASE)


def url_passwords(url: str) -> set[str]:
    """Every form the password of `url` may take in a message (empty when it holds none).

    Read without a URL parser, so a URL no parser accepts (a bare `%` in the
    password) still gives its password up to redaction.
    """
    text = str(url or "")
    password = _userinfo_password(text)
    found: set[str] = {password} if password else set()
    for m in _PAIR.finditer(text):
        value = m.group(0)[len(m.group("head")):]
        found.add(value.strip("'"))
    for pw in list(found):
        found.add(unquote(pw))
        found.add(quote(pw, safe=""))
    return {pw for pw in found if pw}


def redact(text: object, *urls: str) -> str:
    """`text` without the passwords of `urls` and without any URL userinfo password or `password=` value."""
    out = str(text)
    for pw in sorted({p for u in urls for p in url_passwords(u)}, key=len, reverse=True):
        out = out.replace(pw, MASK)
    out = _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", out)
    return _PAIR.sub(lambda m: f"{m.group('head')}{MASK}", out)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose every line (message, arguments, traceback) passed through `redact`."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def redact_settings(settings: Any) -> Any:
    """A copy of settings (nested dicts and lists) whose every text went through `redact`: what an answer
    may carry of config.toml ([database] url and [team] url may hold a password)."""
    if isinstance(settings, dict):
        return {k: redact_settings(v) for k, v in settings.items()}
    if isinstance(settings, list):
        return [redact_settings(v) for v in settings]
    return redact(settings) if isinstance(settings, str) else settings


def restore_masked(changes: Any, current: Any) -> Any:
    """Changes sent back as the user saw them, with each masked password put back from `current`.

    A settings form shows a URL redacted; saving it unchanged, or with only its host or database
    edited, must keep the stored password rather than store the mask.
    """
    if isinstance(changes, dict):
        here = current if isinstance(current, dict) else {}
        return {k: restore_masked(v, here.get(k)) for k, v in changes.items()}
    if not isinstance(changes, str) or not isinstance(current, str) or MASK not in changes:
        return changes
    if changes == redact(current):
        return current
    password = _userinfo_password(current)
    return changes.replace(f":{MASK}@", f":{password}@", 1) if password else changes


def _userinfo_password(url: str) -> str | None:
    """The password of `scheme://user:password@host...` as written (None without one)."""
    _scheme, sep, rest = url.partition("://")
    at = rest.rfind("@")
    if not sep or at <= 0:
        return None
    _user, colon, password = rest[:at].partition(":")
    return password if colon and password else None
