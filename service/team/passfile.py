"""Members' passwords in a libpq password file (the `.pgpass` format), never in a URL.

A URL with a password sits in shell history, the process list and every
message that quotes it; a 0600 password file does not, and libpq (so psql
too) finds the password there by host, port, database and user.
`team member add` writes the member's line here; `server.connect` points
libpq at the file.

The file may be named in a folder other users can write to, so it is never
written through a link: a link at its name is refused (another user's file would
be rewritten, or a dangling link would make folders and a file where it points),
the old file is read without following one, and the new file is created
exclusively beside it and renamed over the name.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from service.client.privdir import open_own

FIELDS = 5  # host:port:database:user:password


class Unsafe(OSError):
    """A password file name ctxlamp will not write: a link, or something other than a file."""


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
        raise _link(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # mkdir never creates through a dangling link
    key = [host, port, database, user]
    old = _read_lines(path)
    kept = [line for line in old if line.startswith("#") or _split(line)[:4] != key]
    text = "\n".join([*kept, entry(host, port, database, user, password)]) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".pgpass-", dir=path.parent)  # 0600, O_EXCL: a new file, never a link
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _link(path: Path) -> Unsafe:
    return Unsafe(errno.ELOOP, f"{path} is a link: give the password file itself, not a link to it "
                               "(a link another user planted would be written through)")


def _read_lines(path: Path) -> list[str]:
    """The lines of the file at `path` itself (none when there is none); Unsafe for a link or a non-file."""
    try:
        fd = open_own(path, os.O_RDONLY)  # where there is no O_NOFOLLOW, the is_symlink check above holds
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link(path) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise Unsafe(errno.EINVAL, f"{path} is not a file")
        return fh.read().decode("utf-8").splitlines()


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
