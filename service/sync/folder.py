"""The shared folder: which files are device files, which are copies a sync tool left, and reading them.

A device writes only `ctxlamp-device-<id>.json`, its own, replaced atomically (write_private: a hidden
temporary file renamed over it), so a reader sees the old file or the new one, never half of one.
Every other file whose name starts the same way is a copy a sync tool made when two writes crossed:
Dropbox's "(conflicted copy ...)", Syncthing's `.sync-conflict-...`, OneDrive's `-<machine>` suffix,
iCloud's " 2". Copies are never read, and each is named once per reading.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from service.sync.fileformat import BadFile, DeviceFile, decode, encode

PREFIX = "ctxlamp-device-"
DEVICE_NAME = re.compile(r"^ctxlamp-device-([0-9a-f]{32})\.json$")
COPY_KINDS = (  # (what the name holds, which tool leaves such copies)
    (re.compile(r"\(.*conflicted copy.*\)", re.IGNORECASE), "a Dropbox conflicted copy"),
    (re.compile(r"\.sync-conflict-", re.IGNORECASE), "a Syncthing conflict copy"),
    (re.compile(r"^ctxlamp-device-[0-9a-f]{32}-[^.]+\.json$"), "a OneDrive copy (-<machine> suffix)"),
    (re.compile(r"^ctxlamp-device-[0-9a-f]{32} \d+\.json$"), "an iCloud Drive copy"),
)


def file_name(device_id: str) -> str:
    return f"{PREFIX}{device_id}.json"


@dataclass
class Reading:
    """What a folder held: the device files read, and every file left out with why (one line each)."""

    devices: list[DeviceFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file name, why)


def copy_kind(name: str) -> str:
    for pattern, kind in COPY_KINDS:
        if pattern.search(name):
            return kind
    return "a copy a sync tool left"


def read(folder: Path, passphrase: str | None = None) -> Reading:
    """Every device file of the folder (the newest write of each device), copies and bad files named;
    files sealed with a passphrase are opened with this device's (sealed.py)."""
    out = Reading()
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        out.skipped.append((str(folder), f"cannot be read: {exc.strerror or exc}"))
        return out
    for name in names:
        if not name.startswith(PREFIX):
            continue  # the folder's other files, the hidden temporary files of a write under way
        match = DEVICE_NAME.match(name)
        if match is None:
            out.skipped.append((name, f"ignored: {copy_kind(name)}"))
            continue
        try:
            device = decode(_opened(_read_bytes(folder / name), passphrase))
        except BadFile as exc:
            out.skipped.append((name, f"skipped: {exc}"))
            continue
        except OSError as exc:
            out.skipped.append((name, f"skipped: cannot be read ({exc.strerror or exc})"))
            continue
        if device.id != match.group(1):
            out.skipped.append((name, "skipped: its name and the device id inside differ"))
            continue
        out.devices.append(device)
    return out


def _opened(data: bytes, passphrase: str | None) -> bytes:
    from service.sync import sealed

    if not sealed.is_sealed(data):
        return data
    try:
        return sealed.open_sealed(data, passphrase)
    except sealed.NoCipher as exc:
        raise BadFile(str(exc)) from None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, never through a link and never more than a device file may hold."""
    from service.client.privdir import open_own
    from service.sync.fileformat import MAX_BYTES

    fd = open_own(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    return data


def write(folder: Path, device: DeviceFile, passphrase: str | None = None) -> Path:
    """This device's file, replaced atomically (a reader sees the old whole file or the new one), sealed
    when this device has a passphrase."""
    from service.client.privdir import write_private
    from service.sync import sealed

    path = folder / file_name(device.id)
    data = encode(device)
    write_private(path, sealed.seal(data, passphrase) if passphrase else data)
    return path


def forget(folder: Path, device_id: str) -> bool:
    """Drop a device's file from the folder (True when there was one)."""
    try:
        os.unlink(folder / file_name(device_id))
    except FileNotFoundError:
        return False
    return True
