"""Members' passwords in a libpq password file (the `.pgpass` format), never in a URL.

A URL with a password sits in shell history, the process list and every
message that quotes it; a 0600 password file does not, and libpq (so psql
too) finds the password there by host, port, database and user.
`team member add` writes the member's line here; `server.connect` points
libpq at the file.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

FIELDS = 5  # host:port:database:user:password


def _escape(field: str) -> str:
    return field.replace("\\", "\\\\").replace(":", "\\:")


def _split(line: str) -> list[str]:
    """A password-file line's fields, unescaped (libpq's reading: `\\` escapes the next character)."""
    fields: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur.append(line[i + 1])
            i += 2
            continue
        if ch == ":" and len(fields) < FIELDS - 1:
            fields.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    fields.append("".join(cur))
    return fields


def entry(host: str, port: str, database: str, user: str, password: str) -> str:
    """One line of the file (without its newline)."""
    return ":".join(_escape(f) for f in (host, port, database, user, password))


def put(path: Path, host: str, port: str, database: str, user: str, password: str) -> None:
    """Write the entry for (host, port, database, user), replacing an older one; the file stays 0600.

    Written to a new 0600 file beside it and renamed over it, so a reader sees
    the old file or the new one, and the password is never readable by others.
    """
    path = Path(path).expanduser()
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = [host, port, database, user]
    try:
        old = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        old = []
    kept = [line for line in old if line.startswith("#") or _split(line)[:4] != key]
    text = "\n".join([*kept, entry(host, port, database, user, password)]) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".pgpass-", dir=path.parent)  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def lookup(path: Path, host: str, port: str, database: str, user: str) -> str | None:
    """The password libpq would take from the file for these (first matching line; `*` matches anything)."""
    try:
        lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    want = [host, port, database, user]
    for line in lines:
        if not line or line.startswith("#"):
            continue
        fields = _split(line)
        if len(fields) == FIELDS and all(f in ("*", w) for f, w in zip(fields[:4], want)):
            return fields[4]
    return None
