"""Make this interpreter look like one without POSIX's extras, as on Windows: no `fcntl`, no
`os.fork`, and watchdog's inotify observer failing to load the way it does on a system without
inotify. On PYTHONPATH (an absolute one: children started in another folder must find it too),
every Python started in the test run (services, hooks, workers) gets it. Used by .ci/run's
portable leg; see docs/platforms.md.
"""
import importlib.abc
import os
import sys

BLOCKED = ("watchdog.observers.inotify", "watchdog.observers.inotify_c", "watchdog.observers.inotify_buffer")

sys.modules["fcntl"] = None  # type: ignore[assignment]  # `import fcntl` raises ImportError
for name in ("fork", "forkpty"):
    if hasattr(os, name):
        delattr(os, name)


class _NoInotify(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname in BLOCKED:
            from watchdog.utils import UnsupportedLibcError

            class InotifyUnavailable(UnsupportedLibcError, ImportError):
                """What watchdog raises without inotify; an ImportError too, for importorskip."""

            raise InotifyUnavailable(f"{fullname} is unavailable in the portable test leg")


sys.meta_path.insert(0, _NoInotify())
os.environ["CTXLAMP_PORTABLE_LEG"] = "1"
