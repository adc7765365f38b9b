"""Registering ctxlamp with Claude Code, and taking it back out.

Two files: the hooks (SessionStart, and PreModelSwitch where the installed Claude Code offers it) go
into Claude Code's settings
(`~/.claude/settings.json`), the user-scoped MCP server into `~/.claude.json`
(`mcpServers.ctxlamp`, what `claude mcp add --scope user` writes). With
`$CLAUDE_CONFIG_DIR` set, Claude Code keeps both inside that folder
(`settings.json`, `.claude.json`).

Rules: a symlinked file (dotfile managers) is edited at its target and the link
kept; every other key is kept in its order; a file that is not valid JSON (or
has the wrong shape where we write) is reported and never overwritten; writes
are atomic (temp file + rename, same mode) and keep the file's own layout (its indent, compact or
not, its last newline); the user's own file (holding nothing of ctxlamp's) is kept in
`<file>.ctxlamp-backup` by install, never a state that already holds ctxlamp's entries; a file
another program changed after we read it is not replaced (compare before rename; the command plans
again); running install twice changes nothing the second time; uninstall gives the backup back
byte for byte when the file holds nothing else new, else removes our hook entry (recognised by
its command), our status line and our MCP server, the containers that this leaves empty unless
the backup shows they were there before, and a file that ctxlamp itself created; then the backup
goes (the file is the user's own again).
"""
from __future__ import annotations

import difflib
import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

SERVER_NAME = "ctxlamp"
HOOK_EVENT = "SessionStart"
HOOK_TIMEOUT_S = 5
# The Claude Code hook events ctxlamp answers: (event, `ctxlamp hook` subcommand, the first Claude Code
# version known to offer the event; None: every version ctxlamp supports). An older or unknown Claude Code
# gets only what it is known to offer (docs/decisions.md 356).
HOOKS = (("SessionStart", "session-start", None), ("PreModelSwitch", "pre-model-switch", (2, 1, 332)))
BACKUP_SUFFIX = ".ctxlamp-backup"
ROOT = Path(__file__).resolve().parents[1]
# Our hook entry: a command that runs ctxlamp (the script or `-m service.cli`) with `hook <subcommand>`.
_OUR_HOOK = re.compile(r"(?:(?:^|[\s/\\'\"])ctxlamp(?:\.exe)?['\"]?|-m\s+service\.cli)\s+hook\s+"
                       r"(session-start|pre-model-switch)\s*$")
SCRIPT_NAMES = ("ctxlamp", "ctxlamp.exe")


class SettingsError(Exception):
    """A settings file we must not touch (malformed, wrong shape, read-only)."""


class SettingsChanged(SettingsError):
    """Another program (Claude Code) wrote the file between our read and our write: plan again."""


APPLY_ATTEMPTS = 5


@dataclass(frozen=True)
class Launcher:
    """How Claude Code should start this installation of ctxlamp."""

    command: str            # absolute path of an executable
    prefix_args: list[str]  # arguments before the subcommand (e.g. -m service.cli)
    env: dict[str, str]     # environment the command needs (PYTHONPATH for a source checkout)

    def shell(self, *args: str, system: str = sys.platform) -> str:
        """The command line Claude Code's shell runs (service/claude/command_line.py: every system)."""
        from service.claude.command_line import command_line, portable_path

        env = {k: portable_path(v, system) for k, v in self.env.items()}
        return command_line(self.command, [*self.prefix_args, *args], env=env, system=system)


def find_launcher() -> Launcher:
    """This installation's `ctxlamp` script when there is one, else this Python with -m service.cli."""
    if getattr(sys, "frozen", False):  # a PyInstaller build: the executable is ctxlamp itself
        return Launcher(str(Path(sys.executable).absolute()), [], {})
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in SCRIPT_NAMES and argv0.is_file():
        return Launcher(str(argv0.resolve()), [], {})
    for name in SCRIPT_NAMES:  # pip's script: bin/ctxlamp, or Scripts\ctxlamp.exe on Windows
        beside = Path(sys.executable).parent / name
        if beside.is_file() and os.access(beside, os.X_OK):
            return Launcher(str(beside.absolute()), [], {})
    return python_launcher()


def python_launcher() -> Launcher:
    """This Python with `-P -m service.cli`: the folder Claude Code runs it in never shadows ctxlamp."""
    from service.client.own_python import module_argv

    python = str(Path(sys.executable).absolute())
    env = {} if _importable_anywhere(python) else {"PYTHONPATH": str(ROOT)}
    return Launcher(python, module_argv("service.cli", python=python)[1:], env)


def _importable_anywhere(python: str) -> bool:
    """Is the `service` package importable when the current folder is not the checkout?"""
    try:
        probe = subprocess.run([python, "-c", "import service.cli"], cwd="/", capture_output=True, timeout=20,
                               env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        return probe.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def settings_file() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(env).expanduser() if env else Path.home() / ".claude") / "settings.json"


def mcp_config_file() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() / ".claude.json" if env else Path.home() / ".claude.json"


def is_our_hook(hook: object, subcommand: str | None = None) -> bool:
    """A hook entry that runs `ctxlamp hook ...` (that subcommand, when given)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    found = _OUR_HOOK.search(hook["command"])
    return found is not None and (subcommand is None or found.group(1) == subcommand)


def hook_entry(launcher: Launcher, subcommand: str = "session-start") -> dict:
    return {"type": "command", "command": launcher.shell("hook", subcommand), "timeout": HOOK_TIMEOUT_S}


_IDLE_SEEN: tuple[tuple[int, int] | None, bool] = (None, True)


def idle_compaction_on() -> bool:
    """Whether Claude Code compacts a long idle session on a 1-hour cache: on unless its settings say
    `"idleCompaction": false`. Read again only when the file changed (the service asks per status)."""
    global _IDLE_SEEN
    path = settings_file()
    try:
        st = path.stat()
        key: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key == _IDLE_SEEN[0]:
        return _IDLE_SEEN[1]
    on = True
    if key is not None and key[1] <= 1 << 20:
        try:
            on = json.loads(path.read_text(encoding="utf-8")).get("idleCompaction") is not False
        except (OSError, ValueError, AttributeError):
            on = True
    _IDLE_SEEN = (key, on)
    return on


def offered_hooks(version: tuple[int, ...] | None) -> list[tuple[str, str]]:
    """(event, subcommand) of the hooks a Claude Code of this version offers (None: not known)."""
    return [(event, sub) for event, sub, since in HOOKS
            if since is None or (version is not None and version >= since)]


def claude_version(timeout: float = 10.0) -> tuple[int, ...] | None:
    """The installed Claude Code's version (`claude --version`: "2.1.332 (Claude Code)"), else None."""
    import shutil

    exe = shutil.which("claude")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", out or "")
    return tuple(int(x) for x in found.groups()) if found else None


def mcp_entry(launcher: Launcher) -> dict:
    return {"type": "stdio", "command": launcher.command, "args": [*launcher.prefix_args, "mcp"], "env": dict(launcher.env)}


def is_our_server(server: object) -> bool:
    if not isinstance(server, dict):
        return False
    args = server["args"] if isinstance(server.get("args"), list) else []
    command = server["command"] if isinstance(server.get("command"), str) else ""
    name = command.replace("\\", "/").rsplit("/", 1)[-1]  # a Windows path read on any system
    return bool(args) and args[-1] == "mcp" and (name in SCRIPT_NAMES or "service.cli" in args)


# -- reading and writing --------------------------------------------------------


def _followed(path: Path) -> tuple[Path, Path | None]:
    """(the file to read and write, the link that named it): a dotfile manager's symlinked
    settings file is edited at its target, so the link stays a link."""
    if not path.is_symlink():
        return path, None
    return Path(os.path.realpath(path)), path


_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


@dataclass(frozen=True)
class Layout:
    """How a JSON file is written, read from the file itself, so an edit changes only what it must."""

    indent: int | str | None = 2     # None: all on one line
    item: str = ","                  # the separators of a one-line file
    key: str = ": "
    newline: bool = True             # ends with a line break
    ascii_only: bool = False         # non-ASCII written as \uXXXX

    @classmethod
    def of(cls, text: str) -> "Layout":
        if not text.strip():
            return cls()
        body = _STRING.sub('""', text.strip())  # the separators are read outside strings
        found = re.search(r"\n([ \t]+)\S", body)
        indent: int | str | None = None
        if found:
            lead = found.group(1)
            indent = lead if "\t" in lead else len(lead)
        key = ": " if re.search(r'":\s', body) or not re.search(r'":\S', body) else ":"
        item = "," if indent is not None or not re.search(r",\s", body) else ", "
        return cls(indent, item, key, text.endswith("\n"), "\\u" in text and not any(ord(c) > 127 for c in text))

    def dumps(self, data: object) -> str:
        text = json.dumps(data, indent=self.indent, ensure_ascii=self.ascii_only,
                          separators=(",", self.key) if self.indent is not None else (self.item, self.key))
        return text + ("\n" if self.newline else "")


@dataclass
class Document:
    path: Path                 # the file itself (a symlink's target)
    existed: bool
    text: str
    data: dict
    link: Path | None = None   # the symlink that named it, kept as it is
    restore: str | None = None  # uninstall: the backup's text, given back whole (nothing else changed)
    keep_backup: bool = True    # write: keep the text we replace as the backup (the user's own state)
    drop_backup: bool = False   # write: then remove the backup (uninstall: the file is the user's own again)

    @classmethod
    def read(cls, named: Path) -> "Document":
        path, link = _followed(named)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path, False, "", {}, link)
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{path}: cannot read it ({exc}); nothing was changed") from exc
        if not text.strip():
            return cls(path, True, text, {}, link)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SettingsError(f"{path} is not valid JSON ({exc}); fix or move it, nothing was changed") from exc
        if not isinstance(data, dict):
            raise SettingsError(f"{path} should hold a JSON object, not {type(data).__name__}; nothing was changed")
        return cls(path, True, text, data, link)

    def render(self) -> str:
        if self.restore is not None:
            return self.restore
        return Layout.of(self.text).dumps(self.data)

    def diff(self) -> str:
        new = self.render() if (self.data or self.existed) else ""
        return "".join(difflib.unified_diff(self.text.splitlines(True), new.splitlines(True),
                                            fromfile=str(self.path), tofile=f"{self.path} (after)"))

    @property
    def backup(self) -> Path:
        """Beside the name Claude Code reads (the link's folder, not a dotfile repository)."""
        named = self.link or self.path
        return named.with_name(named.name + BACKUP_SUFFIX)

    def write(self) -> None:
        """Atomic replace keeping the file's mode; the old content goes to the backup file when it is the
        user's own (`keep_backup`), and an uninstall's write drops the backup (the file is theirs again)."""
        _refuse_read_only(self)
        mode = stat.S_IMODE(self.path.stat().st_mode) if self.existed else 0o600
        try:
            if self.existed and self.keep_backup:
                _atomic_write(self.backup, self.text, mode)
            _atomic_write(self.path, self.render(), mode, expect=self.text if self.existed else None)
            if self.drop_backup:
                self.backup.unlink(missing_ok=True)
        except OSError as exc:
            raise SettingsError(f"cannot write {self.path} ({exc})") from exc

    def remove(self) -> None:
        """Delete a file that only ever held what ctxlamp put there (and its backup)."""
        _refuse_read_only(self)
        try:
            self.path.unlink(missing_ok=True)
            self.backup.unlink(missing_ok=True)
        except OSError as exc:
            raise SettingsError(f"cannot remove {self.path} ({exc})") from exc


_ANY = object()
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import errno

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _changed(path: Path) -> SettingsChanged:
    return SettingsChanged(f"{path} changed while ctxlamp was editing it (another program wrote it); "
                           "ctxlamp did not overwrite it")


def _text_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _atomic_write(path: Path, text: str, mode: int, expect: object = _ANY) -> None:
    """Temp file + rename. With `expect` (the text we planned from, None for "no file"), another
    program's edit made after our read is never lost: the file is compared with `expect` once our
    temp file is written (so a late edit is refused before our version is ever visible), then the
    temp file is swapped in atomically and what it displaced is checked; if that is not what we
    planned from, it is swapped back and SettingsChanged tells the caller to plan again. (Where the
    system has no atomic swap: compare, then rename -- a window of microseconds instead of none.)"""
    from service.client.privdir import open_own

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.ctxlamp-tmp")
    # the text as it is, on every system (binary, and no newline translation: through both, the user's "\n"
    # would become "\r\r\n"), and never written through a link waiting at the temporary name
    fd = open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if expect is _ANY:
            os.replace(tmp, path)
            return
        if expect is None:  # we create the file: only if nobody else did meanwhile
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise _changed(path) from None
            except OSError:  # no hard links here: check, then rename
                if path.exists():
                    raise _changed(path) from None
                os.replace(tmp, path)
                return
            os.unlink(tmp)
            return
        if _text_or_none(path) != expect:  # an edit made while we wrote (fsync takes milliseconds): refused
            raise _changed(path)            # before our version is ever visible to the other program
        if path.exists() and _exchange(tmp, path):
            displaced = tmp.read_text(encoding="utf-8")
            if displaced != expect:
                _exchange(tmp, path)  # put the other program's version back
                raise _changed(path)
            os.unlink(tmp)
            return
        if _text_or_none(path) != expect:
            raise _changed(path)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# -- the edits -----------------------------------------------------------------


_Container = TypeVar("_Container", dict, list)


def _container(data: dict, key: str, kind: type[_Container], where: Path, label: str) -> _Container | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise SettingsError(f"{where}: `{label}` should be a JSON {'object' if kind is dict else 'array'}; nothing was changed")
    return value


def add_hook(doc: Document, entry: dict, event: str = HOOK_EVENT) -> bool:
    """Put our hook for `event` in (replacing an older ctxlamp one). True when something changed."""
    hooks = _container(doc.data, "hooks", dict, doc.path, "hooks")
    groups = _container(hooks, event, list, doc.path, f"hooks.{event}") if hooks is not None else None
    ours = [(g, h) for g in (groups or []) if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"] if is_our_hook(h)]
    if len(ours) == 1 and ours[0][1] == entry:
        return False
    if ours and groups is not None:  # an older ctxlamp hook (another path): update it where it stands, drop duplicates
        first_group, first_hook = ours[0]
        first_group["hooks"][first_group["hooks"].index(first_hook)] = entry
        emptied = []
        for group, hook in ours[1:]:
            group["hooks"] = [h for h in group["hooks"] if h is not hook]
            if not group["hooks"]:
                emptied.append(group)
        groups[:] = [g for g in groups if not any(g is e for e in emptied)]
        return True
    if hooks is None:
        hooks = doc.data["hooks"] = {}
    if groups is None:
        groups = hooks[event] = []
    groups.append({"matcher": "", "hooks": [entry]})
    return True


def remove_hooks(doc: Document, keep: frozenset[str] = frozenset()) -> bool:
    """Take out our hook of every event ctxlamp answers. True when something changed."""
    changed = False
    for event, _sub, _since in HOOKS:
        changed = remove_hook(doc, keep, event) or changed
    return changed


def remove_hook(doc: Document, keep: frozenset[str] = frozenset(), event: str = HOOK_EVENT) -> bool:
    hooks = _container(doc.data, "hooks", dict, doc.path, "hooks")
    if hooks is None:
        return False
    groups = _container(hooks, event, list, doc.path, f"hooks.{event}")
    if not groups:
        return False
    changed = False
    kept_groups = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list) and any(is_our_hook(h) for h in group["hooks"]):
            group["hooks"] = [h for h in group["hooks"] if not is_our_hook(h)]
            changed = True
            if not group["hooks"]:
                continue  # the group held only our hook: it was ours
        kept_groups.append(group)
    if not changed:
        return False
    groups[:] = kept_groups
    if not groups and f"hooks.{event}" not in keep:
        del hooks[event]
        if not hooks and "hooks" not in keep:
            del doc.data["hooks"]
    return True


def add_server(doc: Document, entry: dict) -> bool:
    servers = _container(doc.data, "mcpServers", dict, doc.path, "mcpServers")
    if servers is not None and servers.get(SERVER_NAME) == entry:
        return False
    if servers is None:
        servers = doc.data["mcpServers"] = {}
    servers[SERVER_NAME] = entry
    return True


def remove_server(doc: Document, keep: frozenset[str] = frozenset()) -> bool:
    servers = _container(doc.data, "mcpServers", dict, doc.path, "mcpServers")
    if not servers or not is_our_server(servers.get(SERVER_NAME)):
        return False
    del servers[SERVER_NAME]
    if not servers and "mcpServers" not in keep:
        del doc.data["mcpServers"]
    return True


def containers_before(doc: Document) -> frozenset[str]:
    """The containers the backup (the file before our last change) already had: an
    uninstall that empties them leaves them, so the user's own `{}` stays."""
    try:
        earlier = Document.read(doc.backup).data if doc.backup.exists() else {}
    except SettingsError:
        earlier = {}
    found = set()
    if isinstance(earlier.get("hooks"), dict):
        found.add("hooks")
        for event, _sub, _since in HOOKS:
            if isinstance(earlier["hooks"].get(event), list):
                found.add(f"hooks.{event}")
    if isinstance(earlier.get("mcpServers"), dict):
        found.add("mcpServers")
    return frozenset(found)


def _created_by_us(doc: Document, strip) -> bool:
    """Did ctxlamp create this file? Install backs up every file that was there before it,
    so: no backup, or a backup holding our own entries and nothing else (a user's own
    empty `{}` file stays)."""
    if not doc.backup.exists():
        return True
    try:
        earlier = Document.read(doc.backup)
    except SettingsError:
        return False
    had_something = bool(earlier.data)
    strip(earlier)
    return had_something and not earlier.data


@dataclass
class Plan:
    settings: Document
    mcp: Document
    settings_changed: bool
    mcp_changed: bool
    delete: tuple[Document, ...] = ()   # files uninstall empties that ctxlamp itself created

    def changed(self) -> list[Document]:
        return [d for d, c in ((self.settings, self.settings_changed), (self.mcp, self.mcp_changed)) if c]

    def diff(self) -> str:
        out = []
        for doc in self.changed():
            if doc in self.delete:
                out.append(f"--- {doc.path}\n+++ /dev/null (removed: ctxlamp created it)\n")
            else:
                out.append(doc.diff())
        return "".join(out)

    def apply(self) -> None:
        for doc in self.changed():
            _refuse_read_only(doc)  # check both before writing either
        for doc in self.changed():
            doc.remove() if doc in self.delete else doc.write()


def _holds_ours(doc: Document, strip) -> bool:
    """Does the file already hold something of ctxlamp's (then it is not the user's own state to back up)?"""
    probe = Document(doc.path, doc.existed, doc.text, json.loads(json.dumps(doc.data)) if doc.data else {})
    return bool(strip(probe))


def plan_install(launcher: Launcher | None = None, version: tuple[int, ...] | None | bool = True) -> Plan:
    """Read both files and compute the change; raises SettingsError before anything is written. `version`:
    the Claude Code to register for (True: ask the installed one), which decides the hooks it gets."""
    from service.statusline import settings as status_line

    launcher = launcher or find_launcher()
    settings, mcp = Document.read(settings_file()), Document.read(mcp_config_file())
    settings.keep_backup = not _holds_ours(settings, _remove_ours_from_settings)
    mcp.keep_backup = not _holds_ours(mcp, remove_server)
    settings_changed = False
    for event, sub in offered_hooks(claude_version() if version is True else version or None):
        settings_changed = add_hook(settings, hook_entry(launcher, sub), event) or settings_changed
    settings_changed = status_line.add(settings) or settings_changed
    return Plan(settings, mcp, settings_changed, add_server(mcp, mcp_entry(launcher)))


def _remove_ours_from_settings(doc: Document, keep: frozenset[str] = frozenset()) -> bool:
    from service.statusline import settings as status_line

    removed_hook = remove_hooks(doc, keep)
    return status_line.remove(doc) or removed_hook


def plan_uninstall() -> Plan:
    settings, mcp = Document.read(settings_file()), Document.read(mcp_config_file())
    plan = Plan(settings, mcp, _remove_ours_from_settings(settings, containers_before(settings)),
                remove_server(mcp, containers_before(mcp)))
    plan.delete = tuple(doc for doc, strip in ((settings, _remove_ours_from_settings), (mcp, remove_server))
                        if doc in plan.changed() and not doc.data and _created_by_us(doc, strip))
    for doc in plan.changed():
        doc.keep_backup, doc.drop_backup = False, True
        doc.restore = _as_backed_up(doc)
    return plan


def _as_backed_up(doc: Document) -> str | None:
    """The backup's text when the file, ctxlamp's entries taken out, is what the backup holds (nothing else
    changed it since install, key order included): uninstall then gives it back byte for byte."""
    try:
        earlier = _text_or_none(doc.backup)
    except (OSError, UnicodeDecodeError):
        return None
    if earlier is None:
        return None
    try:
        before = json.loads(earlier) if earlier.strip() else {}
    except ValueError:
        return None
    return earlier if json.dumps(before) == json.dumps(doc.data) else None


def _refuse_read_only(doc: Document) -> None:
    if doc.existed and doc.path.exists() and not stat.S_IMODE(doc.path.stat().st_mode) & stat.S_IWUSR:
        raise SettingsError(f"{doc.path} is read-only; make it writable to let ctxlamp change it (nothing was changed)")


def apply_fresh(make_plan, attempts: int = APPLY_ATTEMPTS) -> "Plan":
    """Plan and apply; when another program writes a file in between, read it again and redo the plan."""
    for attempt in range(attempts):
        plan = make_plan()
        try:
            plan.apply()
            return plan
        except SettingsChanged:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
