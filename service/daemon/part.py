"""What every part of the service (live sessions, jobs, budgets) holds: the service it belongs to, and the
registry and persistence that `Service._build()` made before any part runs."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.daemon.persist import Persistence
    from service.daemon.runtime import Service
    from service.ingest.live import Registry


class ServicePart:
    def __init__(self, service: Service) -> None:
        self._svc = service

    @property
    def _registry(self) -> Registry:
        registry = self._svc.registry
        assert registry is not None  # Service._build() made it before anything is followed or scheduled
        return registry

    @property
    def _persist(self) -> Persistence:
        persist = self._svc.persist
        assert persist is not None  # Service._build() opened it
        return persist
