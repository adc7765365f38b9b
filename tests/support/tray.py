"""The tray as the desktop runs it, against this test's private ctxlamp home (Qt offscreen): the `tray`
fixture every tray test asks for (tests/conftest.py loads this module)."""
from __future__ import annotations

import pytest


@pytest.fixture
def tray(qtbot, ctx_home):
    from desktop.connection.datasource import ApiSource
    from desktop.tray import TrayController

    t = TrayController(ApiSource(), open_window_without_tray=False)
    yield t
    t.shutdown()
