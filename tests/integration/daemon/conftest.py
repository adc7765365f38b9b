"""Fixtures of the service-process tests."""
from __future__ import annotations

import signal

import pytest

from tests.support.service_proc import Svc


@pytest.fixture
def svc(dirs):
    """A maker of real `ctxlamp serve` processes over the test's folders; each is stopped afterwards."""
    services: list[Svc] = []

    def make(**kw) -> Svc:
        s = Svc(*dirs, **kw)
        services.append(s)
        return s

    yield make
    for s in services:
        s.stop(signal.SIGKILL if s.proc and s.proc.poll() is None else signal.SIGTERM)
