"""What the API reads of the service: typed interfaces the service hands to the server.

The server imports nothing of `service/daemon/`: the daemon's `Service` satisfies
`ServiceView`, and its persistence satisfies `StoreReads` (each read either
answers or raises `Unavailable`, which the server turns into a 503).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from service.api.sse import Hub
from service.client.payloads import Snapshot
from service.history.answers import HistoryReads
from service.client.paths import Paths

if TYPE_CHECKING:
    from service.store import Store

Row = dict[str, Any]
_T = TypeVar("_T")


class Unavailable(RuntimeError):
    """The store cannot answer (API routes turn this into 503)."""


class StoreReads(HistoryReads, Protocol):
    """The store's answers the API serves; every one raises Unavailable when the database cannot answer."""

    def segments(self, session_id: str | None = None, limit: int = 100) -> list[Row]: ...

    def reminders(self, session_id: str | None = None, since: str | None = None) -> list[Row]: ...

    def save_handoff(self, task: str, body: str, paths: list[str], project: str | None,
                     from_session: str | None = None) -> Row: ...

    def handoffs(self, project: str | None = None, undelivered: bool = False) -> list[Row]: ...

    def load_handoff(self, token: str, session_id: str) -> Row | None: ...


class ServiceView(Protocol):
    """The running service as the API sees it: state to read, and calls made on its main loop."""

    started_at: str
    defect: str | None
    paths: Paths
    cfg: dict[str, Any]
    reminder_log: list[Row]
    readings: Any  # service.limits.book.Book: what Claude Code's status line reported
    team: Any      # service.team.job.TeamPusher, or None without a team
    sync: Any      # service.sync.job.SyncJob (None until the scheduler starts)
    hub: Hub

    @property
    def reads(self) -> StoreReads: ...

    @property
    def store(self) -> Store | None: ...

    def status(self) -> dict[str, Any]: ...

    def series(self, session_id: str) -> Row | None: ...

    def snapshot_of(self, session_id: str) -> Snapshot | None: ...

    def call_in_loop(self, fn: Callable[[], _T], timeout: float = ...) -> _T: ...

    def set_selection(self, session_id: str, exclude: list[str], include: list[str]) -> Snapshot: ...

    def rotate(self, session_id: str, transcript_path: str | None = None, cwd: str | None = None) -> Row: ...

    def update_config(self, changes: Row) -> Row: ...


