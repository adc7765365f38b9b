"""The Settings tab's fields: words, control kinds, ranges, defaults and checks (plain Python).

The service has the last word: before anything is saved the tab asks it to
check the changes with its own rules (POST /config?check=1), so nothing it
would refuse can be saved. The checks here only catch what a control cannot
prevent (amber starting after red) and give each field its own message.
Price overrides are a file the service reads at start (prices.json), checked
here with the price table's rules: rates are non-negative numbers, and a model
the bundled table does not know needs all five rates.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from desktop.present import fmt


@dataclass(frozen=True)
class Field:
    key: str            # "section.key" of the service's config
    label: str
    kind: str           # int, sessions, percent, duration, hours, bool, text, list, ratios, zone, usd, share,
    #                     folder, name
    help: str
    maximum: float = 1e9


FIELDS = (
    Field("engine.eps_amber", "Amber starts at", "percent",
          "The lamp turns amber when the average cost per call is this much above its best."),
    Field("engine.eps_crit", "Red starts at", "percent",
          "The lamp turns red (a restart pays) when the average cost per call is this much above its best."),
    Field("engine.g_floor", "Context growth per call, at least", "int",
          "Tokens the context is assumed to grow by per call at least (it keeps a new session's curve sane).",
          10_000_000),
    Field("reminders.min_gap", "Time between two notices", "duration",
          "At most one restart notice per session this often (the notice that the lamp turned red is never "
          "held back)."),
    Field("sessions.live_hours", "Sessions count as live for", "hours",
          "At start, transcripts changed this recently are measured as live sessions.", 24 * 366),
    Field("sessions.live_max", "Live sessions at start, at most", "sessions",
          "The newest of those recent transcripts; the others are read into the history and become live "
          "sessions when they grow again. Over this many, sessions idle for longer than the hours above leave "
          "the live list.", 1000),
    Field("history.store_prompts", "Keep the text of prompts in the history", "bool",
          "Off: the history keeps which files each turn read and changed, but no prompt text."),
    Field("transcripts.keep_copies", "Keep a copy of each transcript", "bool",
          "A compressed copy of every transcript read, kept in ctxlamp's data folder: the report, replay and "
          "the history tools read it once Claude Code deletes the transcript (after its cleanupPeriodDays). "
          "Only while the text of prompts is kept."),
    Field("selection.exclude", "Files a restart need not rebuild", "list",
          "Patterns of paths left out of the useful part, e.g. **/node_modules/** or *.log."),
    Field("database.url", "History database", "text",
          "Empty: the local database file. A postgresql:// address keeps the history on that server instead."),
    Field("team.url", "Team server", "text",
          "Empty: no team. The postgresql:// address of the team view's database (docs/team.md), read at the "
          "service's next start; keep its password in the pgpass file, not here."),
    Field("tokenizer.ratio", "Claude's tokens per counted token", "ratios",
          "For each model family (opus, sonnet, haiku): how many tokens Claude counts for each token ctxlamp "
          "counts (with the o200k tokenizer); `ctxlamp calibrate` measures it; between 0 and 100."),
    Field("report.timezone", "Days are counted in the time zone", "zone",
          "Where a day starts and ends for the Overview, the report and budgets: an IANA name such as "
          "America/Los_Angeles. Empty: this computer's time zone. The team view keeps UTC days."),
    Field("budgets.daily_usd", "Daily budget", "usd",
          "A notice when the day's spend reaches the share below and when it reaches the budget. 0: no budget.",
          1_000_000),
    Field("budgets.monthly_usd", "Monthly budget", "usd",
          "The same for the calendar month. 0: no budget.", 1_000_000),
    Field("budgets.notice_pct", "Budget notice at", "share",
          "The first notice comes when this share of a budget is spent (the second at 100 %).", 100),
    Field("sync.folder", "Sync folder for your other machines", "folder",
          "A folder you already sync (Dropbox, iCloud Drive, OneDrive, Syncthing, a network share): each machine "
          "writes its figures there, never prompts, files or paths, and the Overview and the report add them "
          "up (docs/sync.md). Empty: sync is off."),
    Field("sync.name", "This machine's name", "name",
          "How the other machines show this one. Empty: its host name."),
    Field("sync.every", "Sync every", "duration",
          "How often the service writes this machine's figures and reads the others' (also soon after calls)."),
)

DURATION_UNITS = (("s", "seconds", 1), ("m", "minutes", 60), ("h", "hours", 3600), ("d", "days", 86400))
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def duration_parts(value) -> tuple[float, str]:
    """"10m" -> (10, "m"); 600 -> (10, "m") (the largest whole unit); unreadable -> (0, "s")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
        for unit, _, scale in reversed(DURATION_UNITS):
            if seconds and seconds % scale == 0:
                return seconds / scale, unit
        return seconds, "s"
    m = _DURATION.match(str(value or ""))
    if not m:
        return 0.0, "s"
    return float(m.group(1)), m.group(2) or "s"


def duration_text(number: float, unit: str) -> str:
    """(10, "m") -> "10m": the form config.toml keeps."""
    n = int(number) if float(number).is_integer() else number
    return f"{n}{unit}"


def show_value(field: Field, value) -> str:
    """A value in words, for "default: ..." labels."""
    if field.kind == "percent":
        return fmt.percent(value, 0 if float(value * 100).is_integer() else 1)
    if field.kind == "bool":
        return "on" if value else "off"
    if field.kind == "duration":
        number, unit = duration_parts(value)
        words = dict((u, w) for u, w, _ in DURATION_UNITS)[unit]
        return f"{number:g} {words[:-1] if number == 1 else words}"
    if field.kind == "hours":
        return fmt.plural(value, "hour")
    if field.kind == "sessions":
        return fmt.plural(value, "session")
    if field.kind == "int":
        return f"{fmt.count(value)} tokens"
    if field.kind == "list":
        return ", ".join(value) if value else "none"
    if field.kind == "ratios":
        return ", ".join(f"{k} {v:g}" for k, v in sorted(value.items())) if value else "none"
    if field.kind == "text":
        return value or ("no team" if field.key == "team.url" else "the local file")
    if field.kind == "zone":
        return value or "this computer's"
    if field.kind == "folder":
        return value or "off"
    if field.kind == "name":
        return value or "this computer's name"
    if field.kind == "usd":
        return fmt.usd(value) if value else "none"
    if field.kind == "share":
        return f"{float(value):g} %"
    return str(value)


def local_errors(values: dict[str, Any]) -> dict[str, str]:
    """Checks a single control cannot make: key -> message."""
    out = {}
    amber, red = values.get("engine.eps_amber"), values.get("engine.eps_crit")
    if isinstance(amber, (int, float)) and isinstance(red, (int, float)) and amber >= red:
        out["engine.eps_crit"] = "Red must start above amber."
    for pattern in values.get("selection.exclude") or []:
        if not str(pattern).strip():
            out["selection.exclude"] = "An empty pattern would match nothing; remove it."
    for family, ratio in (values.get("tokenizer.ratio") or {}).items():
        if not re.fullmatch(r"[A-Za-z0-9_-]+", str(family)):
            out["tokenizer.ratio"] = f"A family name is letters, digits, - or _ ('{family}' is not)."
        elif not 0 < float(ratio) < 100:
            out["tokenizer.ratio"] = f"The ratio for {family} must be between 0 and 100."
    return out


def field_of_message(message: str) -> str | None:
    """Which field a service error names ("engine.g_floor must be a number" -> "engine.g_floor")."""
    for f in FIELDS:
        if f.key in message:
            return f.key
    return None


# ---------- price overrides (prices.json) ----------

PRICE_FIELDS = (("input", "Input"), ("output", "Output"), ("cache_read", "Cache read"),
                ("cache_write_5m", "Cache write, 5 min"), ("cache_write_1h", "Cache write, 1 hour"))


def known_models() -> set[str]:
    """Model ids (and aliases) of the bundled price table, lower case."""
    import resources

    table = json.loads(resources.resource_path("prices.json").read_text(encoding="utf-8"))
    out = set()
    for mid, entry in (table.get("models") or {}).items():
        out.add(mid.lower())
        out.update(str(a).lower() for a in entry.get("aliases") or ())
    return out


def price_rows(table: dict | None) -> list[tuple[str, dict[str, str]]]:
    """prices.json -> rows of (model, {field: text}) for the table editor."""
    rows = []
    for mid, entry in sorted(((table or {}).get("models") or {}).items()):
        if isinstance(entry, dict):
            rows.append((mid, {k: (f"{entry[k]:g}" if isinstance(entry.get(k), (int, float)) else "")
                               for k, _ in PRICE_FIELDS}))
    return rows


def price_errors(rows: list[tuple[str, dict[str, str]]], known: set[str]) -> list[tuple[int, str]]:
    """(row, message) for every row the service's price table would refuse."""
    errors = []
    seen = set()
    for i, (model, cells) in enumerate(rows):
        mid = model.strip().lower()
        if not mid:
            errors.append((i, "Name the model."))
            continue
        if mid in seen:
            errors.append((i, f"{model} is listed twice."))
        seen.add(mid)
        filled = {k: v.strip() for k, v in cells.items() if v.strip()}
        for k, v in filled.items():
            try:
                ok = float(v) >= 0
            except ValueError:
                ok = False
            if not ok:
                errors.append((i, f"{dict(PRICE_FIELDS)[k]} of {model}: a price is a number, 0 or more."))
        if mid not in known and len(filled) < len(PRICE_FIELDS):
            errors.append((i, f"{model} is not in the bundled price table: give all five prices."))
        if not filled:
            errors.append((i, f"{model}: give at least one price."))
    return errors


def price_table(rows: list[tuple[str, dict[str, str]]], previous: dict | None = None) -> dict:
    """Rows -> prices.json (only the filled cells: a known model keeps its other prices).

    What the table does not edit (a model's fast-mode and US-only `modifiers`, its dated `changes`)
    is kept from the `previous` file for the models still listed, so saving never drops it."""
    before = (previous or {}).get("models") if isinstance(previous, dict) else None
    models = {}
    for model, cells in rows:
        kept = (before or {}).get(model.strip()) if isinstance(before, dict) else None
        entry = {k: v for k, v in kept.items() if k not in dict(PRICE_FIELDS)} if isinstance(kept, dict) else {}
        entry.update({k: float(v) for k, v in cells.items() if v.strip()})
        models[model.strip()] = entry
    return {"models": models}


# ---------- Settings tab ----------

def flatten(config: dict, prefix: str = "") -> dict[str, object]:
    """{"engine": {"g_floor": 500}} -> {"engine.g_floor": 500}; lists and empty dicts stay leaves."""
    out: dict[str, object] = {}
    for k, v in (config or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def unflatten(flat: dict[str, object]) -> dict:
    out: dict = {}
    for key, v in flat.items():
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def min_gap_seconds(config: dict | None, default: float = 600.0) -> float:
    """reminders.min_gap: seconds as a number, or text like "10m", "90s", "1h"."""
    v = ((config or {}).get("reminders") or {}).get("min_gap")
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return float(v)
    text = str(v).strip().lower()
    mult = {"s": 1, "m": 60, "h": 3600}.get(text[-1:])
    try:
        return float(text[:-1]) * mult if mult else float(text)
    except ValueError:
        return default
