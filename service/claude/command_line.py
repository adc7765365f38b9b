"""The command lines `ctxlamp install` writes into Claude Code's settings, for each system.

Claude Code runs a hook or status-line command through a shell: `sh -c` on Linux and macOS,
Git Bash on Windows, or PowerShell where Git Bash is missing. So on every system the words
are quoted the POSIX way (single quotes: literal in sh, bash and PowerShell alike). On Windows
our own paths are written with forward slashes (backslashes are escapes in bash; Windows and
Git Bash both take `C:/...`), and the program's path, when it holds a space, becomes its 8.3
short form: PowerShell reads a quoted word at the start of a line as a string, not a command,
so the program must need no quotes. PowerShell also takes the typographic quotes ‘ ’ ‚ ‛ for a
single quote, and no quoting means the same to it and to Git Bash, so on Windows a word holding
one is written as its 8.3 short name, else refused.
"""
from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence

_BARE = re.compile(r"[A-Za-z0-9_@%+=:,./-][A-Za-z0-9_@%+=:,./~-]*")  # needs no quotes in sh or PowerShell
POWERSHELL_QUOTES = "\u2018\u2019\u201a\u201b"  # single quotes to PowerShell, letters to sh
ShortPath = Callable[[str], str | None]


class Unquotable(ValueError):
    """A word no quoting keeps whole in both of the shells Claude Code may use on Windows."""


def is_windows(system: str) -> bool:
    return system.startswith("win")


def portable_path(path: str, system: str = sys.platform) -> str:
    """A path of ours as a command line should carry it (forward slashes on Windows)."""
    return path.replace("\\", "/") if is_windows(system) else path


def windows_short_path(path: str) -> str | None:
    """The 8.3 name of an existing path (None where there is none: 8.3 names turned off, not Windows)."""
    if sys.platform != "win32":
        return None
    import ctypes

    size = ctypes.windll.kernel32.GetShortPathNameW(path, None, 0)
    if not size:
        return None
    buf = ctypes.create_unicode_buffer(size)
    ctypes.windll.kernel32.GetShortPathNameW(path, buf, size)
    return buf.value or None


def command_line(program: str, args: Sequence[str], *, env: Mapping[str, str] | None = None,
                 system: str = sys.platform, short_path: ShortPath = windows_short_path) -> str:
    """`program args...` for Claude Code's shell; `env` becomes an `env K=V` prefix (sh, Git Bash)."""
    if is_windows(system):
        program = portable_path(program, system)
        if " " in program:
            short = short_path(program.replace("/", "\\"))
            if short and " " not in short:
                program = portable_path(short, system)
        program = _powershell_safe(program, system, short_path)
        args = [_powershell_safe(word, system, short_path) for word in args]
        env = {k: _powershell_safe(v, system, short_path) for k, v in (env or {}).items()}
    first = program if is_windows(system) and _BARE.fullmatch(program) else shlex.quote(program)
    line = " ".join([first, *(shlex.quote(word) for word in args)])
    if env:
        line = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + line
    return line


def _powershell_safe(word: str, system: str, short_path: ShortPath) -> str:
    """`word`, or its 8.3 short name when it holds a quote PowerShell ends a single-quoted string at."""
    if not any(q in word for q in POWERSHELL_QUOTES):
        return word
    short = short_path(word.replace("/", "\\"))
    if short and not any(q in short for q in POWERSHELL_QUOTES):
        return portable_path(short, system)
    raise Unquotable(f"{word!r} holds a typographic quote (\u2018 \u2019 \u201a \u201b) that PowerShell reads as a "
                     "quote and that has no 8.3 short name: install ctxlamp in a folder without one")
