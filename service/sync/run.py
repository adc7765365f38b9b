"""A sync: this device's figures written to the shared folder, the other devices' read back.

The command (`ctxlamp sync --now`, `ctxlamp report` with sync on) computes the figures with the
report's own scan and replay; the service computes them with one worker and takes the rent and
restart savings from its own segment profiles (as the team push does).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from service.sync import folder as shared
from service.sync.fileformat import DeviceFile
from service.sync.settings import Device, SyncSettings, resolve, this_device


class SyncError(Exception):
    """Sync cannot run as configured (no folder, a folder that is not there): the message says what."""


@dataclass
class Outcome:
    device: Device
    written: Path | None
    reading: shared.Reading


def device_of(cfg: dict, config_dir: Path) -> Device:
    """This device: its id (made once) and its name (`[sync] name`, else the host's)."""
    from service.sync.settings import clean_name

    device = this_device(config_dir)
    name = clean_name(((cfg or {}).get("sync") or {}).get("name"))
    return Device(device.id, name or device.name)


def checked_folder(settings: SyncSettings) -> Path:
    if not settings.on:
        raise SyncError("sync is off (ctxlamp sync --folder DIR turns it on)")
    path = Path(settings.folder).expanduser()
    if not path.is_dir():
        raise SyncError(f"the sync folder {path} is not there (is the sync tool running? the drive mounted?)")
    return path


def labeller(settings: SyncSettings, folder: Path, config_dir: Path) -> Callable[[str | None], str]:
    """What the folder holds of a project folder: the team's `projects` rule, its hash key the shared
    folder's own (made by the first device, so every device labels one folder alike)."""
    from service.team.ownkey import load_or_make
    from service.team.settings import TeamSettings

    team = TeamSettings(url="", member="", projects=settings.projects)
    if settings.projects == "hash":
        team = team.with_key(load_or_make(folder))
    team = team.with_own_key(config_dir)
    return team.project_label


def figures_here(cfg: dict, config_dir: Path, folder: Path, *, store: Any = None,
                 workers: int | None = None, progress: bool = False) -> DeviceFile:
    """This device's file, computed now over all its history in UTC days."""
    from service.report.build import compute

    kept: list = []
    summary = compute(workers=workers, progress=progress, keep=kept, restart_savings=store is None)
    # the service: its own segment profiles, as its report and the team push; else the report's replay
    segments = store.sessions.segments(limit=10 ** 9) or [] if store is not None else None
    return file_from(cfg, config_dir, folder, summary, kept[-1], segments)


def file_from(cfg: dict, config_dir: Path, folder: Path, summary: dict, kept: tuple,
              segments: list[dict] | None = None) -> DeviceFile:
    """This device's file from a report over all days in UTC and what it was built from (build_report's
    `keep`); the segments default to the report's replayed ones."""
    from service.sync.figures import device_file

    settings = resolve(cfg)
    results, _cache, tally, inputs = kept
    if segments is None:
        segments = inputs.get("restart_segments") or []
    return device_file(device_of(cfg, config_dir), settings.projects, labeller(settings, folder, config_dir),
                       tally, results, inputs, summary, segments)


def sync_now(cfg: dict, config_dir: Path, *, store: Any = None, workers: int | None = None,
             progress: bool = False, own: DeviceFile | None = None) -> Outcome:
    """Write this device's file (`own`, else computed now) and read every device's."""
    settings = resolve(cfg)
    folder = checked_folder(settings)
    from service.sync.sealed import NoCipher, load_passphrase

    device = own or figures_here(cfg, config_dir, folder, store=store, workers=workers, progress=progress)
    passphrase = load_passphrase(config_dir)
    try:
        written = shared.write(folder, device, passphrase)
    except NoCipher as exc:
        raise SyncError(str(exc)) from None
    return Outcome(Device(device.id, device.name), written, shared.read(folder, passphrase))
