"""Rent ledger checkpoints: `checkpoints/ledger-<n>.json`, newest three kept.

The per-call series is rebuilt from the transcript on start; the ledger
(laps, wallet phase, bill cycle, last reminder, where each transcript was read
to) is saved on its own, so an unclean exit loses at most the last interval.
Each file carries a sha256 of its own content: a torn or corrupted newest file
is skipped for the next one; with none usable the ledger starts fresh.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

from service.client.privdir import write_private

KEEP = 3
_NAME = re.compile(r"^ledger-(\d+)\.json$")


def _digest(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _numbered(folder: Path) -> list[tuple[int, Path]]:
    out = []
    try:
        for p in folder.iterdir():
            m = _NAME.match(p.name)
            if m:
                out.append((int(m.group(1)), p))
    except FileNotFoundError:
        pass
    return sorted(out, reverse=True)


def write(folder: Path, sessions: dict[str, dict]) -> Path:
    """Write the next checkpoint atomically and drop all but the newest KEEP."""
    existing = _numbered(folder)
    n = existing[0][0] + 1 if existing else 1
    doc = {"version": 1, "n": n, "written_at": time.time(), "sessions": sessions}
    doc["sha256"] = _digest(doc)
    path = folder / f"ledger-{n}.json"
    write_private(path, json.dumps(doc, sort_keys=True, allow_nan=False).encode("utf-8"))
    for _, old in existing[KEEP - 1:]:
        try:
            old.unlink()
        except OSError:
            pass
    return path


def verify(path: Path) -> dict | None:
    """The checkpoint's document when its checksum holds, else None."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("sessions"), dict):
        return None
    if doc.get("sha256") != _digest(doc):
        return None
    return doc


def load_latest(folder: Path) -> tuple[dict | None, list[str]]:
    """The newest valid checkpoint, and the names of newer ones that were rejected."""
    rejected: list[str] = []
    for _, path in _numbered(folder):
        doc = verify(path)
        if doc is not None:
            return doc, rejected
        rejected.append(path.name)
    return None, rejected
