"""Processes in tests: this process's children, from /proc (the tests that start processes check none is left
behind), and a `ctxlamp` command run as a process."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.support.corpus import ROOT


def children_of(pid: int) -> set[int]:
    """Live (not zombie) child processes of `pid`, from /proc."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(entry))
    return out


def no_children_left(ignore: set[int] = frozenset(), timeout: float = 5.0) -> bool:
    """Whether this process's children (but `ignore`) are all gone, or zombies, within `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not children_of(os.getpid()) - ignore:
            return True
        time.sleep(0.02)
    return False


def ctl(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`ctxlamp ARGS` as a process (the checkout's code), its output captured."""
    return subprocess.run([sys.executable, "-m", "service.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
