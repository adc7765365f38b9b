"""Why the service last failed to start, kept beside api.json where the tray and `ctxlamp status` look.

`ctxlamp serve` writes why here when it cannot start (settings that do not parse, a
folder it cannot lock, a prices file it cannot read) and removes it once it starts; a tray whose
service is not running, or `status` finding none, shows that sentence instead of "not running".
"""
from __future__ import annotations

from pathlib import Path

from service.client.paths import Paths
from service.client.privdir import write_private

NAME = "start-failure.txt"
MAX_CHARS = 1000
# `ctxlamp serve`'s exit code when it cannot start for a reason a restart will not mend (sysexits' EX_CONFIG):
# the tray stops restarting it and shows the sentence.
CANNOT_START = 78


def failure_file(paths: Paths) -> Path:
    return paths.runtime / NAME


def record(paths: Paths, why: str) -> None:
    """Keep `why` (what follows "the service cannot start: ") as the last start failure (one line, bounded)."""
    from service.client.textsafe import printable

    try:
        write_private(failure_file(paths), printable(why, MAX_CHARS).encode("utf-8"), durable=False)
    except OSError:
        pass  # the folder itself is the trouble: stderr and the log still say it


def clear(paths: Paths) -> None:
    try:
        failure_file(paths).unlink()
    except OSError:
        pass


def last(paths: Paths) -> str | None:
    """Why the service last failed to start, None when it last started (or never tried)."""
    from service.client.textsafe import printable

    try:
        text = failure_file(paths).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return printable(text, MAX_CHARS) or None


def not_running(paths: Paths) -> str | None:
    """The sentence for a service that is not running because its start failed (None: no failure kept)."""
    why = last(paths)
    return f"the ctxlamp service is not running: it cannot start: {why}." if why else None
