"""How ctxlamp starts a Python of its own: never with the user's folder on its import path.

`python -m pkg` and `python -c code` put the current folder first on `sys.path`, so a project
folder holding a `service/` package (a common name) would run in ctxlamp's place, and an empty
`service/` folder would hide ctxlamp's package behind a namespace package. `-P` (Python 3.11+,
the same as PYTHONSAFEPATH=1) leaves that folder out; PYTHONPATH and the installed packages
still count, so a source checkout run through PYTHONPATH keeps working.
"""
from __future__ import annotations

import sys

SAFE_PATH = "-P"


def python_argv(*args: str, python: str | None = None) -> list[str]:
    """`python -P args...`: this Python (or `python`) without the current folder on its path."""
    return [python or sys.executable, SAFE_PATH, *args]


def module_argv(module: str, *args: str, python: str | None = None) -> list[str]:
    """`python -P -m module args...`."""
    return python_argv("-m", module, *args, python=python)
