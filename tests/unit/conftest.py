"""The unit tests' rule, enforced: in this process only, no child process, no socket, no event loop, no Qt.

A test that needs one of those belongs in tests/integration/; here it fails at once, naming what it tried.
"""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

QT_FIXTURES = {"qtbot", "qapp", "qapp_args"}
HERE = Path(__file__).resolve().parent


class NotAUnitTest(AssertionError):
    """What a unit test tried that only an integration test may do."""


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise NotAUnitTest(f"a unit test may not {what}: move it to tests/integration/ (tests/README.md)")
    return refuse


def _is_unit(item: pytest.Item) -> bool:
    """Hooks of this file see every test of the session: only the ones under tests/unit/ are held to it."""
    return HERE in Path(item.path).resolve().parents


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = QT_FIXTURES & set(getattr(item, "fixturenames", ()))
        if used and _is_unit(item):
            raise pytest.UsageError(f"{item.nodeid} uses Qt ({', '.join(sorted(used))}): "
                                    "it belongs in tests/integration/")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _is_unit(item):
        yield
        return
    mp = pytest.MonkeyPatch()
    mp.setattr(subprocess.Popen, "__init__", _refuse("start a process"))
    if hasattr(os, "fork"):  # where there is none (Windows, the portable CI leg) nothing can fork anyway
        mp.setattr(os, "fork", _refuse("fork"))
    for name in ("connect", "connect_ex", "bind"):
        mp.setattr(socket.socket, name, _refuse("open a socket"))
    mp.setattr(asyncio, "run", _refuse("run an event loop"))
    mp.setattr(asyncio, "new_event_loop", _refuse("run an event loop"))
    try:
        yield
    finally:
        mp.undo()
