"""This member's own project key, for `projects = "private"`: made once here, never sent anywhere.

Every member can read the team's key (it is what makes two members' hashes of one folder agree), and a
folder's last name is short: any member can hash the names it guesses and compare. A key only this
machine holds makes the labels unguessable by the other members and by the server's administrators;
the price is that the same folder gets a different label on each member's machine.
"""
from __future__ import annotations

import os
import secrets
import string
from pathlib import Path

from service.client.privdir import make_private_dirs, open_own

FILE_NAME = "team-project-key"
KEY_HEX = 64  # 256 random bits


def load_or_make(folder: Path) -> str:
    """The key kept in `folder` (ctxlamp's config folder), made when there is none.

    Made whole in a private temp file and linked into place, which fails when anything (a file, a
    planted link) is there already: two processes that race agree on the first one's key.
    """
    path = folder / FILE_NAME
    key = _read(path)
    if key is not None:
        return key
    make_private_dirs(folder)
    tmp = folder / f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)  # binary: the text layer writes the line end once
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(KEY_HEX // 2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    key = _read(path)
    if key is None:
        raise OSError(f"{path} cannot be read back")
    return key


def _read(path: Path) -> str | None:
    """The key in `path` (None when there is no file); ValueError when it is not one (never followed: a link)."""
    try:
        fd = open_own(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="ascii", errors="replace") as fh:
        key = fh.read(KEY_HEX + 2).strip()
    if len(key) != KEY_HEX or any(c not in string.hexdigits for c in key):
        raise ValueError(f"{path} does not hold a project key ({KEY_HEX} hex digits); remove it to make a new one")
    return key
