"""`ctxlamp sync --folder DIR | --off | --now` and `ctxlamp devices [forget NAME]`: one person's
machines in one view through a folder they already sync (docs/sync.md).

Exit codes: 0 done, 1 the folder could not be written or read, 2 usage (no such folder, sync off,
no such device).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--folder", metavar="DIR", help="turn sync on: DIR is a folder you already sync (Dropbox, "
                      "iCloud Drive, OneDrive, Syncthing, a network share)")
    what.add_argument("--off", action="store_true", help="turn sync off (this device's file stays in the folder)")
    what.add_argument("--now", action="store_true", help="write this device's figures and read the others' now")
    what.add_argument("--name", metavar="NAME", help="this device's name as every device shows it")
    what.add_argument("--passphrase", action="store_true", help="encrypt this device's file with a passphrase "
                      "(asked for; the same on every device; needs pip install 'ctxlamp[encrypt]')")
    what.add_argument("--no-passphrase", dest="no_passphrase", action="store_true",
                      help="write this device's file plain again")


def configure_devices(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="devices_command", metavar="WHAT")
    forget = sub.add_parser("forget", help="drop a device's figures from the sync folder")
    forget.add_argument("name", help="the device's name (or the start of its id)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _paths():
    from service.client.paths import app_paths

    return app_paths()


def _config() -> dict:
    from service import config

    return config.load(_paths().config_file)


def _save(changes: dict) -> dict:
    """The config with `changes`: through the running service when there is one (it keeps the config in
    memory and syncs by it at once), else written here."""
    from service import config
    from service.client.api import ApiClient, ApiError
    from service.client.running import answers

    own = _paths().api_file
    if own.is_file() and answers(own):
        try:
            return ApiClient(api_file=own, timeout=10).post("/api/v1/config", changes)
        except ApiError as exc:
            if exc.status == 400:
                raise config.ConfigError(str(exc.detail)) from None
    path = _paths().config_file
    cfg = config.merge(config.load(path), changes)
    config.save(path, cfg)
    return cfg


def run(args: argparse.Namespace) -> int:
    from service.config import ConfigError
    from service.sync.run import SyncError

    try:
        if args.folder is not None:
            folder = Path(args.folder).expanduser().resolve()
            if not folder.is_dir():
                print(f"ctxlamp sync: {folder} is not a folder (make it, or let the sync tool make it, first)",
                      file=sys.stderr)
                return 2
            cfg = _save({"sync": {"folder": str(folder)}})
            print(f"Sync is on: this device's figures go to {folder}")
            return _sync_now(cfg)
        if args.off:
            _save({"sync": {"folder": ""}})
            print("Sync is off. This device's file stays in the folder; `ctxlamp devices forget NAME` on another "
                  "device drops it.")
            return 0
        if args.name is not None:
            from service.sync.settings import clean_name

            name = clean_name(args.name)
            if not name:
                print("ctxlamp sync: a device name needs a printable character", file=sys.stderr)
                return 2
            cfg = _save({"sync": {"name": name}})
            print(f"This device is {name!r}" + (" (the folder learns it at the next sync)"
                                                if cfg["sync"]["folder"] else ""))
            return 0
        if args.passphrase or args.no_passphrase:
            return _passphrase(args.passphrase)
        return _sync_now(_config())
    except ConfigError as exc:
        print(f"ctxlamp sync: {exc}", file=sys.stderr)
        return 2
    except SyncError as exc:
        print(f"ctxlamp sync: {exc}", file=sys.stderr)
        return 2


def _passphrase(on: bool) -> int:
    """Keep (asked twice, never echoed; or one line on stdin when it is no terminal) or drop the passphrase."""
    import getpass

    from service.sync.sealed import NoCipher, primitives, save_passphrase

    config_dir = _paths().config
    if not on:
        save_passphrase(config_dir, None)
        print("This device's file is written plain from its next sync.")
        return 0
    try:
        primitives()
    except NoCipher as exc:
        print(f"ctxlamp sync: {exc}", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        first = getpass.getpass("Passphrase (the same on every device): ")
        if getpass.getpass("Again: ") != first:
            print("ctxlamp sync: the two passphrases differ", file=sys.stderr)
            return 2
    else:
        first = sys.stdin.readline().rstrip("\n")
    if len(first) < 8:
        print("ctxlamp sync: a passphrase needs 8 characters at least", file=sys.stderr)
        return 2
    save_passphrase(config_dir, first)
    print("This device's file is encrypted from its next sync; give every device the same passphrase.")
    return 0


def _sync_now(cfg: dict) -> int:
    from service.sync.run import sync_now

    try:
        outcome = sync_now(cfg, _paths().config, progress=sys.stderr.isatty())
    except OSError as exc:
        print(f"ctxlamp sync: cannot write to the folder: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"Wrote {outcome.written.name if outcome.written else 'nothing'} ({outcome.device.name}); "
          f"read {len(outcome.reading.devices)} device file(s).")
    for name, why in outcome.reading.skipped:
        print(f"  {_safe(name)}: {_safe(why)}")
    return 0


def _safe(text: str) -> str:
    from service.client.textsafe import printable

    return printable(text, 300)


def run_devices(args: argparse.Namespace) -> int:
    from service.sync.report import devices_only
    from service.sync.run import SyncError, checked_folder
    from service.sync.settings import resolve

    cfg = _config()
    try:
        folder = checked_folder(resolve(cfg))
    except SyncError as exc:
        print(f"ctxlamp devices: {exc}", file=sys.stderr)
        return 2
    listing = devices_only(cfg, _paths().config)
    if getattr(args, "devices_command", None) == "forget":
        return _forget(listing["devices"], folder, args.name)
    if args.json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(listing, option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    if not listing["devices"]:
        print(f"No device has written to {folder} yet (`ctxlamp sync --now` writes this one's).")
    from service.sync.report import device_line, device_notes

    for d in listing["devices"]:
        print(f"{d['id'][:8]}  {device_line(d)}")
        for note in device_notes(d):
            print(f"{'':10}{note}")
    for row in listing["skipped"]:
        print(f"  {_safe(row['file'])}: {_safe(row['reason'])}")
    return 0


def _forget(devices: list[dict], folder: Path, asked: str) -> int:
    from service.sync import folder as shared
    from service.sync.report import pick
    from service.sync.run import SyncError
    from service.sync.settings import Device

    try:
        device_id = pick([Device(d["id"], d["name"]) for d in devices], asked)
    except SyncError as exc:
        print(f"ctxlamp devices forget: {exc}", file=sys.stderr)
        return 2
    if device_id is None:
        print("ctxlamp devices forget: name one device", file=sys.stderr)
        return 2
    this = next((d for d in devices if d["id"] == device_id), None)
    if this is not None and this["this"]:
        print("ctxlamp devices forget: that is this device; `ctxlamp sync --off` first, or it writes its file "
              "again at its next sync", file=sys.stderr)
        return 2
    shared.forget(folder, str(device_id))
    print(f"Forgot {_safe(this['name'] if this else asked)}: its figures no longer count. If it syncs again, "
          "it comes back.")
    return 0
