"""The `[team]` settings as a command or the service uses them: config, then flags.

Project names leave the machine as `projects` says: a keyed hash (default), the
folder's name, a hash under a key of this member's own ("private"), or nothing.
The hash key is the team's (`team init` makes one and keeps it on the server, so
every member's hash of a project agrees, and every member can read it); a local
`[team] key` overrides it; the first push keeps the server's key in the local
config so figures can be computed while the server is away. The private key
(ownkey.py) never leaves this machine: no other member can test guesses against
its labels.
"""
from __future__ import annotations

import getpass
import hashlib
import hmac
import socket
from dataclasses import dataclass, replace
from pathlib import Path, PurePath

from service.config import parse_duration

NO_PROJECT = ""


def default_member() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no user name (containers): still a stable default
        user = "user"
    return f"{user}@{socket.gethostname()}"


@dataclass(frozen=True)
class TeamSettings:
    url: str
    member: str
    projects: str = "hash"
    push_every_s: float = 600.0
    key: str = ""
    own_key: str = ""  # this member's own project key, for projects = "private" (ownkey.py)

    def project_label(self, project: str | None) -> str:
        """What the team sees of a project (a cwd path): its keyed hash, its folder name, or nothing."""
        if not project or self.projects == "none":
            return NO_PROJECT
        if self.projects == "name":
            return PurePath(project.rstrip("/\\") or "/").name or NO_PROJECT
        if self.projects == "private":
            if not self.own_key:  # never a hash under an empty (known) key
                raise ValueError('projects = "private" needs this member\'s own key (ownkey.load_or_make)')
            return _hmac16(self.own_key, project)
        return self.hashed(project)

    def hashed(self, text: str) -> str:
        """16 hex digits of HMAC-SHA256 under the team key."""
        return _hmac16(self.key, text)

    def with_key(self, key: str) -> "TeamSettings":
        return replace(self, key=key)

    def with_own_key(self, folder: Path) -> "TeamSettings":
        """With this member's own key (made in `folder` when missing) when projects = "private"; else as it is."""
        if self.projects != "private" or self.own_key:
            return self
        from service.team.ownkey import load_or_make

        return replace(self, own_key=load_or_make(folder))


def _hmac16(key: str, text: str) -> str:
    return hmac.new(key.encode(), text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]


def resolve(cfg: dict, url: str | None = None, member: str | None = None) -> TeamSettings:
    """The team settings from the config's `[team]` with the command's --url/--member applied."""
    team = (cfg or {}).get("team") or {}
    return TeamSettings(
        url=(url or team.get("url") or "").strip(),
        member=(member or team.get("member") or "").strip() or default_member(),
        projects=team.get("projects") or "hash",
        push_every_s=parse_duration(team.get("push_every") or "10m"),
        key=team.get("key") or "",
    )


def configured(cfg: dict) -> bool:
    return bool(((cfg or {}).get("team") or {}).get("url"))
