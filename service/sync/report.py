"""`ctxlamp report` with sync on: this device's file written from the report's own scan, then every
device's figures summed into the report (view.py), or one device's (`--device NAME`)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from textwrap import wrap

from service.client.textsafe import printable
from service.client.words import OLDER_DEVICE
from service.sync.run import SyncError, checked_folder, device_of, file_from
from service.sync.settings import resolve

ALL = "all"
THIS = "this"


def choice(cfg: dict, asked: str | None) -> str | None:
    """Which devices a report covers: None for this device's own report (sync off, or `--device this`),
    else "all" or a device's name or id. SyncError when a device is asked for while sync is off."""
    on = resolve(cfg).on
    if asked is None:
        return ALL if on else None
    if asked == THIS:
        return None
    if not on:
        raise SyncError("--device needs sync (ctxlamp sync --folder DIR); without it the report is this device's")
    return asked


def pick(devices: list, asked: str) -> str | None:
    """The id of the device named `asked` (its name, any case, or the start of its id): None for all."""
    if asked == ALL:
        return None
    named = [d for d in devices if d.name.casefold() == asked.casefold()]
    if not named and len(asked) >= 4:
        named = [d for d in devices if d.id.startswith(asked.lower())]
    if len(named) == 1:
        return named[0].id
    names = ", ".join(sorted(d.name for d in devices)) or "none"
    if named:
        raise SyncError(f"{len(named)} devices are named {asked!r}: give the start of its id "
                        "(ctxlamp devices lists them)")
    raise SyncError(f"no device named {asked!r} in the sync folder (devices: {names})")


def synced_report(request: Any, asked: str, cfg: dict, config_dir: Path, *, workers: int | None = None,
                  progress: bool = True, keep: list | None = None) -> dict:
    """The report over the devices `asked` covers, in UTC days (the one calendar every device shares)."""
    from service.days import ZONE_UTC
    from service.report.build import build_report
    from service.sync import folder as shared
    from service.sync.merge import merge
    from service.sync.sealed import NoCipher, load_passphrase
    from service.sync.view import devices_block, merged_summary, utc_now

    settings = resolve(cfg)
    folder = checked_folder(settings)
    request = replace(request, zone=ZONE_UTC)
    kept = keep if keep is not None else []
    everything = replace(request, since=None, until=None)
    whole = build_report(everything, workers=workers, progress=progress, keep=kept, reuse_last=False)
    own = file_from(cfg, config_dir, folder, whole, kept[-1])
    passphrase = load_passphrase(config_dir)
    try:
        shared.write(folder, own, passphrase)
    except OSError as exc:
        raise SyncError(f"cannot write this device's file in {folder}: {exc.strerror or exc}") from None
    except NoCipher as exc:
        raise SyncError(str(exc)) from None
    reading = shared.read(folder, passphrase)
    if not any(d.id == own.id for d in reading.devices):  # a folder that does not show it back yet
        reading.devices.append(own)
    local = whole if request.since is None and request.until is None else \
        build_report(request, workers=workers, progress=False)
    only = pick(reading.devices, asked)
    merged = merge(reading.devices, request.since, request.until, only)
    devices = devices_block(merged, own.id, utc_now(), settings.stale_after_s)
    return merged_summary(local, merged, devices, reading.skipped, asked)


def devices_only(cfg: dict, config_dir: Path, since: str | None = None, until: str | None = None) -> dict:
    """{devices, skipped} from the folder as it is (nothing written): for `--device this` and the
    `devices` command. Empty when sync is off or the folder is away."""
    from service.sync import folder as shared
    from service.sync.merge import merge
    from service.sync.sealed import load_passphrase
    from service.sync.view import devices_block, utc_now

    settings = resolve(cfg)
    try:
        folder = checked_folder(settings)
    except SyncError:
        return {"devices": [], "skipped": []}
    reading = shared.read(folder, load_passphrase(config_dir))
    merged = merge(reading.devices, since, until)
    this = device_of(cfg, config_dir).id
    return {"devices": devices_block(merged, this, utc_now(), settings.stale_after_s),
            "skipped": [{"file": f, "reason": r} for f, r in reading.skipped]}


def device_lines(summary: dict) -> list[str]:
    """The text report's devices: each on a line (its notes under it), then one line per file left out."""
    devices = summary.get("devices")
    if not devices:
        return []
    lines = ["", "Devices (sync folder; days in UTC):"]
    for d in devices:
        lines += ["  " + device_line(d), *("    " + note for note in device_notes(d))]
    for row in (summary.get("sync") or {}).get("skipped") or []:
        lines.append(f"  {printable(row['file'], 120)}: {printable(row['reason'], 200)}")
    return lines


NAME_COLUMNS = 24  # with the figures, a device's line fits 80 columns after `devices`' id or the report's indent


def device_line(d: dict) -> str:
    """One device as the terminal shows it: name, what it spent, its calls, when it last wrote."""
    from service.client.figures import count
    from service.client.words import when

    tag = " (this device)" if d["this"] else ""
    name = printable(d["name"], NAME_COLUMNS - len(tag)) + tag
    return (f"{name:<{NAME_COLUMNS}} ${d['total_usd']:>10,.2f} {count(d.get('calls', 0)):>7} calls  "
            f"seen {when(d['last_seen'], short=True)}")


def device_notes(d: dict) -> list[str]:
    """What to say under a device's line: not seen for a while, an older ctxlamp (each within 74 columns)."""
    notes = ["Not seen for a while: its last figures still count."] if d["stale"] else []
    return notes + (wrap(OLDER_DEVICE, 74) if d.get("older") else [])


def devices_overview(doc: dict, cfg: dict, config_dir: Path, since: str, until: str) -> dict:
    """The Overview `doc` (its days in UTC) summed over every device of the folder, as the service
    last wrote this device's file (its job keeps it fresh); `doc` itself when sync is off or away."""
    from service.sync import folder as shared
    from service.sync.merge import merge
    from service.sync.sealed import load_passphrase
    from service.sync.view import devices_block, merged_overview, utc_now

    settings = resolve(cfg)
    try:
        folder = checked_folder(settings)
    except SyncError:
        return doc
    reading = shared.read(folder, load_passphrase(config_dir))
    merged = merge(reading.devices, since, until)
    this = device_of(cfg, config_dir).id
    return merged_overview(doc, merged, devices_block(merged, this, utc_now(), settings.stale_after_s),
                           reading.skipped)


def devices_budgets(cfg: dict, config_dir: Path) -> dict | None:
    """The budgets block over every device (UTC days: the devices' one calendar), from the folder as the
    service's job last wrote this device's file; None when sync is off or the folder is away."""
    from datetime import datetime, timezone
    from math import fsum

    from service.report import budgets
    from service.sync import folder as shared
    from service.sync.merge import merge
    from service.sync.sealed import load_passphrase

    try:
        folder = checked_folder(resolve(cfg))
    except SyncError:
        return None
    today = datetime.now(timezone.utc).date()
    reading = shared.read(folder, load_passphrase(config_dir))
    billed = merge(reading.devices, today.replace(day=1).isoformat(), today.isoformat()).total.billed_by_day
    block = budgets.view(cfg, {d: fsum(v) for d, v in billed.items()}, today, "UTC")
    block["devices"] = len(reading.devices)
    return block
