"""`ctxlamp devices [forget NAME]`: the devices of the sync folder (service/cli/sync.py does the work)."""
from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    from service.cli.sync import configure_devices

    configure_devices(parser)


def run(args: argparse.Namespace) -> int:
    from service.cli.sync import run_devices

    return run_devices(args)
