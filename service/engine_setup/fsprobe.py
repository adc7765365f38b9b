"""The path-existence rule the engine's default selection uses.

A path counts as gone only when we can tell: its project folder exists on
this machine and the file does not. Replaying a transcript written on another
machine (whose project folder is absent here) keeps every path, rather than
pretending the whole project was deleted.
"""
from __future__ import annotations

import os


def make_path_exists(cwd_of_session):
    """A predicate for SessionEngine(path_exists=...); `cwd_of_session()` gives the session's cwd."""

    def path_exists(path: str) -> bool:
        cwd = cwd_of_session()
        if not cwd or not os.path.isdir(cwd):
            return True
        return os.path.exists(path)

    return path_exists
