"""The user's settings: `config.toml` in the config dir.

Written on first run with every default commented out, so the file documents
itself and a default that changes in a later version reaches users who never
touched it. Read with tomllib; `merge()` + `save()` back POST /api/v1/config
(a small writer for this flat two-level structure: no TOML dependency).
"""
from __future__ import annotations

import copy
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from service.paths import write_private
from service.statusline.line import DEFAULT_FORMAT

# section -> key -> default. `tokenizer.ratio` is a table family -> ratio.
DEFAULTS: dict[str, dict[str, Any]] = {
    "engine": {"g_floor": 500, "eps_amber": 0.05, "eps_crit": 0.20},
    "selection": {"exclude": []},
    "reminders": {"min_gap": "10m"},
    "history": {"store_prompts": True},
    "sessions": {"live_hours": 24},
    "database": {"url": ""},
    "tokenizer": {"ratio": {}},
    "statusline": {"format": DEFAULT_FORMAT},
    "limits": {"notice_pct": 80.0, "alert_pct": 95.0, "idle_rewrite_usd": 0.5, "idle_notice_s": 60},
    "transcripts": {"max_line_mb": 128},
    "report": {"timezone": ""},
    "budgets": {"daily_usd": 0.0, "monthly_usd": 0.0, "notice_pct": 80.0},

    "team": {"url": "", "member": "", "projects": "hash", "push_every": "10m", "key": ""},
}
TEAM_PROJECTS = ("hash", "name", "none")

COMMENTS = {
    "engine": "g_floor: least growth per call (tokens); eps_*: how far above the best average cost amber/red start",
    "selection": "exclude: globs of paths a restart need not rebuild (e.g. \"**/node_modules/**\")",
    "reminders": "min_gap: at most one reminder popup per session this often (e.g. 10m, 1h)",
    "history": "store_prompts: keep prompt previews in turn records (false stores no prompt text)",
    "sessions": "live_hours: transcripts modified this recently are live sessions at start",
    "database": "url: empty for the local SQLite file; postgresql://... keeps it on a server (a team: [team])",
    "tokenizer": "ratio.<family>: Claude-to-o200k token ratio per model family (ctxlamp calibrate fits it)",
    "statusline": "format: parts of `ctxlamp statusline` (lamp position rent limits turn cache context); "
                  "| separates pieces, a piece whose parts are all empty is left out",
    "limits": "notice_pct/alert_pct: plan-limit notices (once each per window); idle_rewrite_usd/idle_notice_s: "
              "warn this long before an idle session's cache expires when re-writing it costs at least this",
    "transcripts": "max_line_mb: a transcript line longer than this (MB) is skipped and counted, never held whole",
    "report": "timezone: IANA zone the report and the Overview cut days in (e.g. America/Los_Angeles); "
              "empty: the machine's zone",
    "budgets": "daily_usd/monthly_usd: what you mean to spend (0: no budget, at most 1000000); notice_pct: "
               "a notice when this share is spent (1-100), and one at 100 %, once per day or month",

    "team": "url: postgresql://... of the team database (empty: no team); member: default user@host; "
            "projects: hash | name | none; push_every: e.g. 10m; key: the project-hash key (docs/team.md)",
}

# (section, key) -> (least, most) of a number setting with bounds of its own (others: not negative)
RANGES: dict[tuple[str, str], tuple[float, float]] = {
    ("budgets", "daily_usd"): (0.0, 1_000_000.0),
    ("budgets", "monthly_usd"): (0.0, 1_000_000.0),
    ("budgets", "notice_pct"): (1.0, 100.0),
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


class ConfigError(ValueError):
    """A value of the wrong type or an unknown key: the caller says which."""


def max_line_bytes(cfg: dict | None) -> int:
    """[transcripts] max_line_mb in bytes (the default when absent; at least 1 KB)."""
    mb = ((cfg or {}).get("transcripts") or {}).get("max_line_mb", DEFAULTS["transcripts"]["max_line_mb"])
    return max(1024, int(float(mb) * (1 << 20)))


def configured_timezone() -> str:
    """[report] timezone of the user's config.toml ("" = the machine's zone; never writes the file)."""
    from service.paths import app_paths

    path = app_paths().config_file
    try:
        cfg = load(path) if path.is_file() else None
    except (ConfigError, OSError):
        cfg = None
    return str(((cfg or {}).get("report") or {}).get("timezone") or "")


def configured_max_line() -> int:
    """max_line_bytes of the user's config.toml, for commands that do not otherwise read it (never writes it)."""
    from service.paths import app_paths

    path = app_paths().config_file
    try:
        return max_line_bytes(load(path) if path.is_file() else None)
    except (ConfigError, OSError):
        return max_line_bytes(None)


def parse_duration(text: str | int | float) -> float:
    """Seconds in "90s", "10m", "1h", "2d" or a bare number of seconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise ConfigError(f"not a duration: {text!r} (use e.g. 90s, 10m, 1h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check(section: str, key: str, value: Any) -> Any:
    """The value, validated against the default's type."""
    default = DEFAULTS[section][key]
    where = f"{section}.{key}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where} must be a number")
        if value < 0:
            raise ConfigError(f"{where} must not be negative")
        low, high = RANGES.get((section, key), (0, math.inf))
        if not low <= value <= high:
            raise ConfigError(f"{where} must be between {low:g} and {high:g}")
        if isinstance(default, int) and float(value).is_integer():
            value = int(value)
    elif isinstance(default, str):
        if not isinstance(value, str) or not _utf8(value):
            raise ConfigError(f"{where} must be a string")
        if (section, key) in (("reminders", "min_gap"), ("team", "push_every")):
            parse_duration(value)
        if section == "statusline":
            from service.statusline.line import check_format

            try:
                check_format(value)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        if (section, key) == ("report", "timezone"):
            from service.report.days import UnknownZone, check_zone

            try:
                value = check_zone(value)
            except UnknownZone as exc:
                raise ConfigError(f"{where}: {exc}") from None
        if (section, key) == ("team", "projects") and value not in TEAM_PROJECTS:
            raise ConfigError(f"{where} must be one of {', '.join(TEAM_PROJECTS)}")
    elif isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(v, str) and _utf8(v) for v in value):
            raise ConfigError(f"{where} must be a list of strings")
        value = list(value)
    elif isinstance(default, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a table")
        out = {}
        for k, v in value.items():
            if not re.fullmatch(r"[A-Za-z0-9_-]+", str(k)):
                raise ConfigError(f"{where}: bad name {k!r}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 100):
                raise ConfigError(f"{where}.{k} must be a positive number")
            out[str(k)] = float(v)
        value = out
    return value


def merge(base: dict, changes: dict) -> dict:
    """A new config: `base` with `changes` (same shape, any subset) applied and validated."""
    if not isinstance(changes, dict):
        raise ConfigError("config must be a table of sections")
    out = copy.deepcopy(base)
    for section, values in changes.items():
        if section not in DEFAULTS:
            raise ConfigError(f"unknown section [{section}]")
        if not isinstance(values, dict):
            raise ConfigError(f"[{section}] must be a table")
        for key, value in values.items():
            if key not in DEFAULTS[section]:
                raise ConfigError(f"unknown key {section}.{key}")
            checked = _check(section, key, value)
            if isinstance(checked, dict):  # tables merge key by key (ratio.<family>)
                out[section][key] = {**out[section].get(key, {}), **checked}
            else:
                out[section][key] = checked
    return out


def load(path: Path) -> dict:
    """Defaults overlaid with the file; writes the commented defaults on first run.

    A file that does not parse is reported (ConfigError), never overwritten.
    """
    if not path.exists():
        save(path, DEFAULTS)
        return copy.deepcopy(DEFAULTS)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return merge(DEFAULTS, data)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        out = []
        for ch in value:
            if ch in ('"', "\\"):
                out.append("\\" + ch)
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(type(value))


def dumps(config: dict) -> str:
    """TOML text: values equal to the default are written commented out."""
    lines = ["# ctxlamp settings. Lines starting with # are defaults; uncomment to change.", ""]
    for section, defaults in DEFAULTS.items():
        lines.append(f"# {COMMENTS[section]}")
        lines.append(f"[{section}]")
        values = config.get(section, {})
        for key, default in defaults.items():
            value = values.get(key, default)
            if isinstance(default, dict):
                if not value:
                    lines.append(f"# {key}.sonnet = 1.0")
                for fam, ratio in sorted(value.items()):
                    lines.append(f"{key}.{fam} = {_toml_value(ratio)}")
                continue
            prefix = "# " if value == default else ""
            lines.append(f"{prefix}{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def save(path: Path, config: dict) -> None:
    write_private(path, dumps(config).encode("utf-8"))
