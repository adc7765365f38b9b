"""Checks a newcomer's machine for what ctxlamp needs, and names the fix.

`python -m service.cli.doctor` prints problems with the command that solves them;
`--for-tests` is what `make test` runs first (it never blocks the tests, it explains).
"""
from __future__ import annotations

import os
import subprocess
import sys

QT_APT = ("sudo apt-get install -y libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 "
          "libdbus-1-3 libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0")


def qt_problem(platform: str = "offscreen") -> str | None:
    """None when Qt starts on `platform`, else what went wrong (in a child: a failed load can abort)."""
    code = "from PySide6.QtWidgets import QApplication; QApplication([])"
    env = dict(os.environ, QT_QPA_PLATFORM=platform)
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    lines = [ln for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit code {proc.returncode}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    problem = qt_problem()
    if problem:
        print(f"ctxlamp doctor: Qt cannot start ({problem}).\n  Install its libraries with:\n  {QT_APT}",
              file=sys.stderr)
        return 0 if "--for-tests" in argv else 1
    if "--for-tests" not in argv:
        print("ctxlamp doctor: Qt starts; everything ctxlamp needs is here.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
