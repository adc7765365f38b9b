"""Summing the devices: per device, never the maximum; a session seen on two devices counted once.

A session's figures are taken whole from one device: the one that saw its latest call (then the one
that saw more of its calls, then the smaller device id, so every device decides alike). A session
continued on another machine without `~/.claude` synced is a different transcript there: it counts
per device, as the calls were made. Days are UTC days, the one calendar devices in different zones
share. Pure: no file, clock or environment.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from math import fsum

from service.sync.fileformat import (
    CHANNEL_COLUMNS, COMPACTION_COLUMNS, RESTART_COLUMNS, SPEND, SPEND_COLUMNS, DeviceFile,
)

TOKENS = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")


def owners(devices: list[DeviceFile]) -> dict[str, str]:
    """Session key -> the id of the device whose figures count for it."""
    best: dict[str, tuple] = {}
    for d in devices:
        for key, s in d.sessions.items():
            calls = sum(int(r[SPEND["calls"]]) for r in s.spend)
            rank = (s.last_call, calls, _neg(d.id))
            if key not in best or rank > best[key][0]:
                best[key] = (rank, d.id)
    return {key: owner for key, (_rank, owner) in best.items()}


def _neg(device_id: str) -> str:
    """Sorts the smaller id first under max()."""
    return "".join(chr(0x10FFFF - ord(c)) for c in device_id)


def in_period(day: str, since: str | None, until: str | None) -> bool:
    return (since is None or day >= since) and (until is None or day <= until)


@dataclass
class Sums:
    """Lists of figures to be summed exactly (fsum) at the end, so the order devices come in never matters."""

    money: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    by_day: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    billed_by_day: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_model: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_project: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_day_model: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    by_day_project: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    unwritten_by_day: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    days: dict[str, dict] = field(default_factory=dict)
    restart: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    channels: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    compactions: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add_spend(self, row: list) -> None:
        g = dict(zip(SPEND_COLUMNS, row))
        written = [g["main_usd"], g["subagents_usd"]]
        for k in ("main_usd", "subagents_usd", "estimated_usd", "unwritten_usd"):
            self.money[k].append(g[k])
        for k in ("calls", "main_calls", "unpriced_calls", *TOKENS):
            self.counts[k] += g[k]
        priced = g["calls"] > g["unpriced_calls"]
        if priced:  # as the report: only groups with priced calls have a day, model or project of spend
            self.by_model[g["model"]].extend(written)
            self.by_project[g["project"]].extend(written)
            self.by_day[g["day"]].extend(written)
            self.by_day_model[(g["day"], g["model"])].extend(written)
            self.by_day_project[(g["day"], g["project"])].extend(written)
        if g["calls"]:  # the daily table: every call's tokens, unpriced ones too
            day = self.days.setdefault(g["day"], {"models": set(), **dict.fromkeys(TOKENS, 0)})
            day["models"].add(g["model"])
            for k in TOKENS:
                day[k] += g[k]
        if g["unwritten_usd"]:
            self.unwritten_by_day[g["day"]].append(g["unwritten_usd"])
        if priced or g["unwritten_usd"]:
            self.billed_by_day[g["day"]].extend(written + [g["unwritten_usd"]])

    def add_restart(self, row: list) -> None:
        for column, value in zip(RESTART_COLUMNS[1:], row[1:]):
            self.restart[column].append(value)

    def add_channels(self, row: list) -> None:
        for column, value in zip(CHANNEL_COLUMNS[1:], row[1:]):
            self.channels[column].append(value)

    def add_compactions(self, row: list) -> None:
        for column, value in zip(COMPACTION_COLUMNS[1:], row[1:]):
            self.compactions[column].append(value)

    def total(self, key: str) -> float:
        return fsum(self.money.get(key, []))

    def billed(self) -> float:
        return fsum([self.total("main_usd"), self.total("subagents_usd"), self.total("unwritten_usd")])


@dataclass
class Merged:
    """The devices' figures over a period: the sums, each device's own, and which device counts each session."""

    total: Sums
    per_device: dict[str, Sums]
    owner: dict[str, str]
    devices: list[DeviceFile]


def merge(devices: list[DeviceFile], since: str | None = None, until: str | None = None,
          only: str | None = None) -> Merged:
    """Sum the devices' figures over [since, until] (UTC days); `only` keeps one device's (its id)."""
    owner = owners(devices)
    total = Sums()
    per_device: dict[str, Sums] = {}
    for d in devices:
        mine = per_device[d.id] = Sums()
        counted = [mine] + ([total] if only in (None, d.id) else [])
        for key, s in d.sessions.items():
            if owner.get(key) != d.id:
                continue
            for sums in counted:
                for row in s.spend:
                    if in_period(row[0], since, until):
                        sums.add_spend(row)
                for row in s.restart:
                    if in_period(row[0], since, until):
                        sums.add_restart(row)
                for row in s.channels:
                    if in_period(row[0], since, until):
                        sums.add_channels(row)
                for row in s.compactions:
                    if in_period(row[0], since, until):
                        sums.add_compactions(row)
        for row in d.channels:
            if in_period(row[0], since, until):
                for sums in counted:
                    sums.add_channels(row)
    return Merged(total, per_device, owner, devices)


def parse_instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
