"""The Files tab: the selection's rows and the request a tick or an untick sends (pure Python, no Qt)."""
from __future__ import annotations

from dataclasses import dataclass

from desktop.present import fmt

WHY_WORDS = {None: "", "outside_cwd": "outside the project", "missing": "file is gone", "excluded": "excluded"}


@dataclass
class FileRow:
    path: str
    tokens: int
    selected: bool
    why: str

    @property
    def label(self) -> str:
        extra = f" — {self.why}" if self.why else ""
        return f"{self.path}  ({fmt.tokens(self.tokens)} tokens){extra}"


def file_rows(series: dict | None) -> list[FileRow]:
    rows = []
    for p in (series or {}).get("paths") or []:
        why = p.get("why")
        rows.append(FileRow(path=str(p.get("path")), tokens=int(p.get("tokens") or 0),
                            selected=bool(p.get("selected")), why=WHY_WORDS.get(why, str(why or ""))))
    rows.sort(key=lambda r: (-r.tokens, r.path))
    return rows


def selection_change(path: str, ticked: bool) -> dict:
    """The body of POST /sessions/{id}/selection for one tick or untick."""
    return {"exclude": [] if ticked else [path], "include": [path] if ticked else []}
