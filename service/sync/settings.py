"""The `[sync]` settings and this device's identity (a random id made once, a name the user edits)."""
from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from service.config import parse_duration

DEVICE_FILE = "sync-device.json"  # in ctxlamp's config folder: this device's id and name
ID_HEX = 32                        # 128 random bits
NAME_MAX = 200                     # characters of a device name (as a team member's)


@dataclass(frozen=True)
class SyncSettings:
    folder: str            # the shared folder ("" : sync is off)
    projects: str = "hash"
    every_s: float = 600.0
    stale_after_s: float = 7 * 86400.0

    @property
    def on(self) -> bool:
        return bool(self.folder)


def resolve(cfg: dict) -> SyncSettings:
    """The sync settings from the config's `[sync]` (validated by service/config.py)."""
    sync = (cfg or {}).get("sync") or {}
    return SyncSettings(folder=str(sync.get("folder") or "").strip(),
                        projects=str(sync.get("projects") or "hash"),
                        every_s=parse_duration(sync.get("every") or "10m"),
                        stale_after_s=parse_duration(sync.get("stale_after") or "7d"))


@dataclass(frozen=True)
class Device:
    id: str
    name: str


def default_name() -> str:
    return clean_name(socket.gethostname()) or "this device"


def clean_name(text: object) -> str:
    """A device name as every device shows it: one printable line of at most NAME_MAX characters."""
    from service.client.textsafe import printable

    return printable(text if isinstance(text, str) else "", NAME_MAX).strip()


def is_device_id(text: object) -> bool:
    return isinstance(text, str) and len(text) == ID_HEX and all(c in "0123456789abcdef" for c in text)


def this_device(config_dir: Path) -> Device:
    """This device's id and default name, made on first use (the id never changes; `[sync] name`, which
    run.device_of applies, overrides the name)."""
    import json

    path = config_dir / DEVICE_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if is_device_id(doc.get("id")):
            return Device(doc["id"], clean_name(doc.get("name")) or default_name())
    except (OSError, ValueError, AttributeError):
        pass
    device = Device(secrets.token_hex(ID_HEX // 2), default_name())
    _save(path, device)
    return device


def _save(path: Path, device: Device) -> None:
    import json

    from service.client.privdir import make_private_dirs, write_private

    make_private_dirs(os.fspath(path.parent))
    write_private(path, json.dumps({"id": device.id, "name": device.name}).encode("utf-8"))
