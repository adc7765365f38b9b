"""Numbered migrations of the team schema (`ctxlamp_team` on the team's PostgreSQL server).

Applied by the models' runner (service/store/team.py: the same as the local database's:
one transaction per step with the version bump, re-runs skip what is applied),
with the schema first on the search path so its version table lives there too.
"""
from __future__ import annotations

import importlib
from types import ModuleType

MIGRATIONS: tuple[str, ...] = (
    "0001_figures",
    "0002_safe_names",
    "0003_unwritten",
    "0004_restart_savings",
    "0005_bounded_figures",
    "0006_member_writes",
)


def steps() -> list[tuple[int, ModuleType]]:
    return [(int(name[:4]), importlib.import_module(f"{__name__}.{name}")) for name in MIGRATIONS]


def writers() -> ModuleType:
    """The migration that made the members' writer functions and grants (schema.add_member grants the same)."""
    return importlib.import_module(f"{__name__}.0006_member_writes")
