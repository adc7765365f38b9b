"""The Files tab: the selection's rows and the request a tick or an untick sends (pure Python, no Qt)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from desktop.present import fmt

WHY_WORDS = {None: "", "outside_cwd": "outside the project", "missing": "file is gone", "excluded": "excluded"}


@dataclass
class FileRow:
    path: str
    tokens: int
    selected: bool
    why: str
    shown: str = ""  # the path as the list shows it (within the project: from its folder)

    @property
    def label(self) -> str:
        extra = f" — {self.why}" if self.why else ""
        return f"{self.shown or self.path}  ({fmt.tokens(self.tokens)} tokens){extra}"


def shown_path(path: str, project: str | None) -> str:
    """A file in the session's project folder as the project names it (`src/app.py`); any other whole."""
    if project:
        try:
            inside = PurePath(path).relative_to(project)
        except ValueError:
            return path
        if inside.parts:
            return str(inside)
    return path


def file_rows(series: dict | None, project: str | None = None) -> list[FileRow]:
    rows = []
    for p in (series or {}).get("paths") or []:
        why, path = p.get("why"), str(p.get("path"))
        rows.append(FileRow(path=path, tokens=int(p.get("tokens") or 0), selected=bool(p.get("selected")),
                            why=WHY_WORDS.get(why, str(why or "")), shown=shown_path(path, project)))
    rows.sort(key=lambda r: (-r.tokens, r.path))
    return rows


def selection_change(path: str, ticked: bool) -> dict:
    """The body of POST /sessions/{id}/selection for one tick or untick."""
    return {"exclude": [] if ticked else [path], "include": [path] if ticked else []}
