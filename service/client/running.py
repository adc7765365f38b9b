"""Which service the command line talks to: the user's own, else the demo `ctxlamp start` plays.

`ctxlamp start` plays the demo in a folder of its own beside the user's data (so a demo never
mixes with the user's sessions or spend), with its own service. The command line must still
see what the tray shows: `ctxlamp status`, `ctxlamp report` and the others look for the user's
service first and the demo's next, with the same rules in every process (no environment to
pass on).
"""
from __future__ import annotations

from pathlib import Path

from service.client.paths import Paths, app_paths


def demo_home(paths: Paths | None = None) -> Path:
    """The demo's folder: its service's data (`ctxlamp/`), its Claude folder (`claude/`)."""
    return (paths or app_paths()).data / "demo"


def demo_paths(paths: Paths | None = None) -> Paths:
    """The demo service's folders: everything in one, as CTXLAMP_HOME gives it."""
    root = demo_home(paths) / "ctxlamp"
    return Paths(data=root, config=root, runtime=root)


def demo_claude_dir(paths: Paths | None = None) -> Path:
    return demo_home(paths) / "claude"


def plays_demo(paths: Paths | None = None) -> bool:
    """Whether these folders (this process's, by default) are the demo's: the tray and its window that
    `ctxlamp start` runs for the demo, whose settings last only as long as the demo plays."""
    data = (paths or app_paths()).data
    return data.parts[-2:] == ("demo", "ctxlamp") and (data.parent / "claude").is_dir()


def answers(api_file: Path, timeout: float = 2.0) -> bool:
    """Whether the service announced in `api_file` answers now and proves it is this user's (a killed
    one leaves its file, and another user may then listen on its port)."""
    from service.client.api import ApiClient

    return api_file.is_file() and ApiClient(api_file=api_file, timeout=timeout).alive()


def service_api_file() -> Path:
    """The api.json of the service to talk to: the user's when it answers, else the demo's when it
    answers, else the user's (whose absence the caller reports)."""
    own = app_paths().api_file
    if own.is_file() and answers(own):
        return own
    demo = demo_paths().api_file
    if demo.is_file() and answers(demo):
        return demo
    return own


def where_to_look() -> str:
    """One line for a command that found no service: where it looked and how to start one."""
    return (f"no ctxlamp service is running (looked for {app_paths().api_file} and the demo's "
            f"{demo_paths().api_file}); `make run` or `ctxlamp start` starts the tray, `ctxlamp serve` "
            "the service alone")

