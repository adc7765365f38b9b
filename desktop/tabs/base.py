"""The base of every window tab: the window asks a tab to `reload` when it is first shown, and a failed
request is shown in the tab itself (`show_error`), never raised."""
from __future__ import annotations

from PySide6.QtWidgets import QWidget


class Tab(QWidget):
    """A tab of the window. Tabs with data of their own fetch it in `reload`; the Session and Files tabs are
    fed by the window (the followed session's snapshot and series), so theirs does nothing."""

    def reload(self) -> None:
        """Fetch the tab's data from its source and show it; a DataError goes to `show_error`."""

    def show_error(self, text: str) -> None:
        """Say in the tab why its data could not be loaded."""
        raise NotImplementedError(f"{type(self).__name__} must say why its data could not be loaded")
