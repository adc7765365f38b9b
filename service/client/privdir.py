"""Folders ctxlamp creates are private to the user (0700), whichever of its processes comes first.

The service, the status line, the hook, the MCP server and the CLI may each be the first to need
the data or runtime folder; `mkdir(parents=True, mode=0o700)` gives the mode to the last folder
only (parents get the umask's 0755). `write_private` replaces a file whole, private to the user.
`runtime_base_problem` says whether a folder another program named ($XDG_RUNTIME_DIR) is private.
Standard library `os` only: the status line imports this under `python -S`.
"""
from __future__ import annotations

import os
from _thread import get_ident  # builtin: threading's import would cost the status line

TYPE_CHECKING = False  # typing's own flag costs an import on the status line's clock
if TYPE_CHECKING:
    from collections.abc import Mapping


def make_private_dirs(path: str | os.PathLike[str]) -> str:
    """Create `path` and each missing parent with mode 0700 (not the umask's); folders that exist
    already are left as they are. Returns the absolute path."""
    target = os.path.abspath(os.fspath(path))
    missing = []
    folder = target
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
            continue  # another ctxlamp process made it at the same moment (private as well)
        try:
            os.chmod(folder, 0o700)  # mkdir's mode went through the umask
        except OSError:
            pass
    return target


def open_own(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """`os.open` of a file that must be the one at `path` itself, for its bytes: never through a link (where
    the system can tell; Windows cannot, so callers that must refuse one there check `is_symlink` too), and
    in binary mode (Windows opens a descriptor in text mode unless told: each "\n" written becomes "\r\n",
    and a byte 26 read ends the file; decision 506)."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0), mode)


def write_private(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Atomic write (temp file + rename), mode 0600, so a crash never leaves half a file.

    `durable=False` skips the fsync, for files that can be rebuilt (the report's caches, the status
    line's last line): a power cut may then lose the newest version, never leave a torn one.
    """
    folder, name = os.path.split(os.fspath(path))
    make_private_dirs(folder)
    # one temp name per process and thread: two threads of the service (the first pass and a report
    # asked for meanwhile) may replace the same cache at the same moment, and the last rename wins whole
    tmp = os.path.join(folder, f".{name}.{os.getpid()}-{get_ident()}.tmp")
    try:
        os.unlink(tmp)  # a leftover of a crashed writer with our name, or a link somebody planted there
    except FileNotFoundError:
        pass
    # created afresh, never through a link: the name is ours alone until the rename
    fd = open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def runtime_base_problem(path: str) -> "str | None":
    """Why `path` ($XDG_RUNTIME_DIR) is not this user's private runtime folder, None when it is. The rule
    platformdirs applies: the folder, when it exists, is a directory (not a link) of this user with mode
    0700; every folder above it (and each link on the way) belongs to root or this user, and no other
    user may write in it unless it is sticky. A few lstat calls: cheap enough for the status line."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # no POSIX owners (Windows takes no XDG folder)
        return None
    import stat

    uid = geteuid()
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None  # ctxlamp creates it, private
    except OSError as exc:
        return f"{path} cannot be checked ({exc.strerror})"
    if info is not None:
        if not stat.S_ISDIR(info.st_mode):
            return f"{path} is not a folder (or is a link)"
        if info.st_uid != uid:
            return f"{path} belongs to uid {info.st_uid}, not {uid}"
        if info.st_mode & 0o777 != 0o700:
            return f"{path} has mode {info.st_mode & 0o777:04o}, not 0700"
    parent = os.path.dirname(os.path.abspath(path))
    for above in (parent, os.path.realpath(parent)):
        folder = os.sep
        for part in [p for p in above.split(os.sep) if p]:
            folder = os.path.join(folder, part)
            try:
                info = os.lstat(folder)
            except FileNotFoundError:
                break  # the rest is missing too: ctxlamp creates it, private
            except OSError as exc:
                return f"{folder} cannot be checked ({exc.strerror})"
            if info.st_uid not in (0, uid):
                return f"{path} is below {folder}, owned by uid {info.st_uid}"
            if stat.S_ISDIR(info.st_mode) and info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
                return f"{path} is below {folder}, writable by another user"
    return None


def trusted_runtime_base(env: "Mapping[str, str] | None" = None) -> "str | None":
    """$XDG_RUNTIME_DIR when it is absolute and this user's private folder, else None."""
    xdg = (os.environ if env is None else env).get("XDG_RUNTIME_DIR", "")
    return xdg if xdg.startswith("/") and runtime_base_problem(xdg) is None else None
