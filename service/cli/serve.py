"""`ctxlamp serve`: the background service (no Qt). One per user."""
from __future__ import annotations

import argparse
import logging
import os
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--polling", action="store_true",
                        help="use the polling observer instead of the system's native one (also: CTXLAMP_POLLING=1)")


def run(args: argparse.Namespace) -> int:
    from service import config as config_mod
    from service.daemon.lock import AlreadyRunning, LockUnavailable, ServiceLock
    from service.client import start_failure
    from service.client.paths import app_paths

    paths = app_paths().ensure()
    lock = ServiceLock(paths.lock_file)
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        print(f"ctxlamp: the service is already running (pid {exc.pid or '?'}); "
              f"`ctxlamp status` shows it.", file=sys.stderr)
        return 1
    except LockUnavailable as exc:
        from service.daemon.runtime import cannot_start

        return cannot_start(paths, exc, lasting=False)
    try:
        from service.daemon import ahead

        fork_server = ahead.on_first_start(paths.data)  # before the service's imports: on the idle core
        from service.daemon.runtime import Service, cannot_start, setup_logging

        setup_logging(paths)  # before the settings: a bad value is named in the log
        problems: list[str] = []
        try:
            cfg = config_mod.load(paths.config_file, problems)
        except config_mod.ConfigError as exc:
            return cannot_start(paths, exc)
        for problem in problems:  # named, its default used: measurement goes on
            logging.getLogger("ctxlamp.config").warning("%s", problem)
            print(f"ctxlamp: {problem}", file=sys.stderr)
        start_failure.clear(paths)

        polling = bool(getattr(args, "polling", False) or os.environ.get("CTXLAMP_POLLING"))
        return Service(paths, cfg, force_polling=polling, fork_server=fork_server).run()
    finally:
        lock.release()

