"""The user's settings: `config.toml` in the config dir.

Written on first run with every default commented out, so the file documents
itself and a default that changes in a later version reaches users who never
touched it. Read with tomllib; `merge()` + `save()` back POST /api/v1/config
(a small writer for this flat two-level structure: no TOML dependency).
"""
from __future__ import annotations

import copy
import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.client.privdir import write_private
from service.statusline.line import DEFAULT_FORMAT

log = logging.getLogger("ctxlamp.config")

# section -> key -> default. `tokenizer.ratio` is a table family -> ratio.
DEFAULTS: dict[str, dict[str, Any]] = {
    "engine": {"g_floor": 500, "eps_amber": 0.05, "eps_crit": 0.20},
    "selection": {"exclude": []},
    "reminders": {"min_gap": "10m"},
    "history": {"store_prompts": True},
    "sessions": {"live_hours": 24, "live_max": 16},
    "database": {"url": ""},
    "tokenizer": {"ratio": {}},
    "statusline": {"format": DEFAULT_FORMAT},
    "limits": {"notice_pct": 80.0, "alert_pct": 95.0, "idle_rewrite_usd": 0.5, "idle_notice_s": 60},
    "transcripts": {"max_line_mb": 128, "keep_copies": True},
    "report": {"timezone": ""},
    "budgets": {"daily_usd": 0.0, "monthly_usd": 0.0, "notice_pct": 80.0},

    "team": {"url": "", "member": "", "projects": "hash", "push_every": "10m", "key": ""},
    "sync": {"folder": "", "name": "", "projects": "hash", "every": "10m", "stale_after": "7d"},
}
TEAM_PROJECTS = ("hash", "name", "private", "none")

COMMENTS = {
    "engine": "g_floor: context growth per call, at least (tokens); eps_*: how far above the best average cost amber/red start",
    "selection": "exclude: globs of paths a restart need not rebuild (e.g. \"**/node_modules/**\")",
    "reminders": "min_gap: at most one reminder popup per session this often (e.g. 10m, 1h)",
    "history": "store_prompts: keep prompt previews in turn records (false stores no prompt text)",
    "sessions": "live_hours: transcripts modified this recently are live sessions at start; live_max: at most "
                "this many of them, the newest (the rest are history until they grow again); over it, sessions "
                "idle longer than live_hours leave the live list",
    "database": "url: empty for the local SQLite file; postgresql://... keeps it on a server (a team: [team])",
    "tokenizer": "ratio.<family>: Claude-to-o200k token ratio per model family (ctxlamp calibrate fits it)",
    "statusline": "format: parts of `ctxlamp statusline` (lamp position rent limits turn cache context); "
                  "| separates pieces, a piece whose parts are all empty is left out",
    "limits": "notice_pct/alert_pct: plan-limit notices (once each per window); idle_rewrite_usd/idle_notice_s: "
              "warn this long before an idle session's cache expires when re-writing it costs at least this",
    "transcripts": "max_line_mb: a transcript line longer than this (MB) is skipped and counted, never held whole; "
                   "keep_copies: keep a compressed copy of each transcript read (only with history.store_prompts), "
                   "read once Claude Code deletes the transcript",
    "report": "timezone: IANA zone the report and the Overview cut days in (e.g. America/Los_Angeles); "
              "empty: the machine's zone",
    "budgets": "daily_usd/monthly_usd: what you mean to spend (0: no budget, at most 1000000); notice_pct: "
               "a notice when this share is spent (1-100), and one at 100 %, once per day or month",

    "team": "url: postgresql://... of the team database (empty: no team); member: default user@host; "
            "projects: hash | name | private | none; push_every: e.g. 10m; key: the project-hash key (docs/team.md)",
    "sync": "folder: a folder you already sync (Dropbox, iCloud Drive, OneDrive, Syncthing, a share; empty: off); "
            "name: this device's (default: the host's); projects: hash | name | private | none; every: how "
            "often the service syncs; stale_after: when a device's last sync shows as long ago (docs/sync.md)",
}

_DURATION = re.compile(r"^\s*(\d{1,9}(?:\.\d{1,9})?)\s*([smhd]?)\s*$")


@dataclass(frozen=True)
class Range:
    """Where a setting's number may lie (`low_open`: the low end itself is refused)."""

    low: float
    high: float
    low_open: bool = False
    whole: bool = False   # a count: a fraction is refused, never rounded

    def says(self) -> str:
        low = f"above {self.low:g}" if self.low_open else f"at least {self.low:g}"
        return f"{'a whole number ' if self.whole else ''}{low} and at most {self.high:g}"

    def holds(self, value: float) -> bool:
        return (value > self.low if self.low_open else value >= self.low) and value <= self.high \
            and (not self.whole or float(value).is_integer())


DAY_S = 86400.0
# every number a setting holds (durations in seconds); engine.eps_amber < engine.eps_crit is checked on the whole
RANGES: dict[tuple[str, str], Range] = {
    ("engine", "g_floor"): Range(1, 10_000_000),
    ("engine", "eps_amber"): Range(0, 10, low_open=True),
    ("engine", "eps_crit"): Range(0, 10, low_open=True),
    ("reminders", "min_gap"): Range(0, 7 * DAY_S),
    ("sessions", "live_hours"): Range(0, 24 * 366),
    ("sessions", "live_max"): Range(0, 1000, whole=True),
    ("limits", "notice_pct"): Range(0, 100),
    ("limits", "alert_pct"): Range(0, 100),
    ("limits", "idle_rewrite_usd"): Range(0, 10_000),
    ("limits", "idle_notice_s"): Range(0, 3600),
    ("transcripts", "max_line_mb"): Range(0.001, 4096),
    ("team", "push_every"): Range(1, DAY_S),
    ("sync", "every"): Range(10, DAY_S),
    ("sync", "stale_after"): Range(3600, 366 * DAY_S),
    ("budgets", "daily_usd"): Range(0, 1_000_000),
    ("budgets", "monthly_usd"): Range(0, 1_000_000),
    ("budgets", "notice_pct"): Range(1, 100),
}
RATIO_RANGE = Range(0, 100, low_open=True)
MAX_TEXT = 4096        # characters of one string setting
MAX_LIST = 1000        # entries of a list setting
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class ConfigError(ValueError):
    """A value of the wrong type or an unknown key: the caller says which."""


class ConfigUnreadable(ConfigError):
    """config.toml does not parse: its str() is one sentence naming the file and the line.

    Every command that meets it (serve, status, report, doctor, the tray) says that sentence and
    nothing more: no traceback, no default silently used instead."""

    def __init__(self, path: Path, line: int, reason: str):
        self.path, self.line, self.reason = path, line, reason
        super().__init__(f"the settings file {path} cannot be read: line {line}: {reason}; fix that line, "
                         "or move the file away to start from the defaults")


_AT = re.compile(r"^(.*?) \((?:at line (\d+), column \d+|at end of document)\)$", re.DOTALL)
_PLAIN_REASONS = (  # tomllib's words -> a newcomer's
    (re.compile(r"^Cannot declare \((.*)\) twice$"), lambda m: f"the section [{_section_of(m.group(1))}] "
                                                              "appears twice (merge the two)"),
    (re.compile(r"^Cannot overwrite a value$"), lambda m: "this setting is already set above"),
    (re.compile(r"^Invalid value$"), lambda m: "the value is not one TOML reads (text needs \"quotes\")"),
    (re.compile(r"^Invalid statement$"), lambda m: "this is not `name = value` nor a [section]"),
)


def _section_of(names: str) -> str:
    return ".".join(n.strip().strip("'\"") for n in names.split(",") if n.strip())


def unreadable(path: Path, text: str | bytes, exc: Exception) -> ConfigUnreadable:
    """The sentence for a config.toml that does not parse (tomllib's error or a bad byte)."""
    from service.client.textsafe import printable

    if isinstance(exc, UnicodeDecodeError):
        data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
        return ConfigUnreadable(path, data.count(b"\n", 0, exc.start) + 1, "it is not UTF-8 text")
    message = str(exc)
    found = _AT.match(message)
    reason = found.group(1) if found else message
    line = int(found.group(2)) if found and found.group(2) else \
        (text.count("\n") + 1 if isinstance(text, str) else 1)
    for pattern, words in _PLAIN_REASONS:
        plain = pattern.match(reason)
        if plain:
            reason = words(plain)
            break
    else:
        reason = reason[:1].lower() + reason[1:]
    return ConfigUnreadable(path, line, printable(reason, 200))


def check_file(path: Path) -> ConfigUnreadable | None:
    """Whether config.toml parses (never writes it; a missing file is fine: the defaults)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ConfigUnreadable(path, 1, f"it cannot be opened ({exc.strerror or exc})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return unreadable(path, data, exc)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return unreadable(path, text, exc)
    return None


def max_line_bytes(cfg: dict | None) -> int:
    """[transcripts] max_line_mb in bytes (the default when absent; at least 1 KB)."""
    mb = ((cfg or {}).get("transcripts") or {}).get("max_line_mb", DEFAULTS["transcripts"]["max_line_mb"])
    return max(1024, int(float(mb) * (1 << 20)))


def keeps_copies(cfg: dict | None) -> bool:
    """Whether the service keeps compressed copies of the transcripts: [transcripts] keep_copies, and only
    where the user keeps prompt text ([history] store_prompts): a copy holds every prompt."""
    cfg = cfg or {}
    return bool((cfg.get("transcripts") or {}).get("keep_copies", True)) and \
        bool((cfg.get("history") or {}).get("store_prompts", True))


def report_timezone(cfg: dict | None) -> str:
    """[report] timezone of a loaded config ("" = the machine's zone)."""
    return str(((cfg or {}).get("report") or {}).get("timezone") or "")


def configured_timezone() -> str:
    """[report] timezone of the user's config.toml ("" = the machine's zone; never writes the file)."""
    from service.client.paths import app_paths

    path = app_paths().config_file
    try:
        cfg = load(path) if path.is_file() else None
    except (ConfigError, OSError):
        cfg = None
    return report_timezone(cfg)


def configured_max_line() -> int:
    """max_line_bytes of the user's config.toml, for commands that do not otherwise read it (never writes it)."""
    from service.client.paths import app_paths

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
        raise ConfigError(f"not a duration: {_shown(text)} (use e.g. 90s, 10m, 1h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _number(where: str, value: Any, span: Range) -> float:
    """A finite number inside `span`; a huge integer (400 digits) or inf/nan is refused, never converted."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where} must be a number")
    if isinstance(value, int) and abs(value) > 10**15:
        raise ConfigError(f"{where} is too large: it must be {span.says()}")
    if not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number ({span.says()})")
    if not span.holds(value):
        raise ConfigError(f"{where} must be {span.says()}")
    return value


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not _utf8(value):
        raise ConfigError(f"{where} must be a string")
    if len(value) > MAX_TEXT:
        raise ConfigError(f"{where} is longer than {MAX_TEXT} characters")
    if _CONTROL.search(value):  # a terminal would obey them (the status line prints its format at every prompt)
        raise ConfigError(f"{where} must not hold control characters")
    return value


def _check(section: str, key: str, value: Any) -> Any:
    """The value, validated against the default's type and its range (RANGES)."""
    default = DEFAULTS[section][key]
    where = f"{section}.{key}"
    span = RANGES.get((section, key))
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false")
    elif isinstance(default, (int, float)):
        value = _number(where, value, span or Range(0, 10**15))
        if isinstance(default, int) and float(value).is_integer():
            value = int(value)
    elif isinstance(default, str):
        value = _text(where, value)
        if (section, key) in (("reminders", "min_gap"), ("team", "push_every"), ("sync", "every"),
                              ("sync", "stale_after")):
            try:
                seconds = parse_duration(value)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            if span is not None and not span.holds(seconds):
                raise ConfigError(f"{where} must be {span.says()} seconds")
        if section == "statusline":
            from service.statusline.line import check_format

            try:
                check_format(value)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        if (section, key) == ("report", "timezone"):
            from service.days import UnknownZone, check_zone

            try:
                value = check_zone(value)
            except UnknownZone as exc:
                raise ConfigError(f"{where}: {exc}") from None
        if (section, key) in (("team", "projects"), ("sync", "projects")) and value not in TEAM_PROJECTS:
            raise ConfigError(f"{where} must be one of {', '.join(TEAM_PROJECTS)}")
        if (section, key) == ("sync", "folder") and value and not os.path.isabs(os.path.expanduser(value)):
            raise ConfigError(f"{where} must be a whole path (e.g. ~/Dropbox/ctxlamp), or empty for off")
        if (section, key) == ("sync", "name") and len(value) > 200:
            raise ConfigError(f"{where} is longer than 200 characters")
    elif isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(v, str) and _utf8(v) for v in value):
            raise ConfigError(f"{where} must be a list of strings")
        if len(value) > MAX_LIST:
            raise ConfigError(f"{where} holds more than {MAX_LIST} entries")
        value = [_text(where, v) for v in value]
    elif isinstance(default, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a table")
        out = {}
        for k, v in value.items():
            if not re.fullmatch(r"[A-Za-z0-9_-]+", str(k)):
                raise ConfigError(f"{where}: bad name {k!r}")
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"{where}.{k} must be a positive number")
            out[str(k)] = float(_number(f"{where}.{k}", v, RATIO_RANGE))
        value = out
    return value


def merge(base: dict, changes: dict) -> dict:
    """A new config: `base` with `changes` (same shape, any subset) applied and validated."""
    out = _apply(copy.deepcopy(base), changes)
    _check_whole(out)
    return out


def _apply(out: dict, changes: Any) -> dict:
    """`changes` checked value by value and written into `out` (ConfigError names the first bad one)."""
    if not isinstance(changes, dict):
        raise ConfigError("config must be a table of sections")
    for section, values in changes.items():
        if section not in DEFAULTS:
            raise ConfigError(f"unknown section [{_name(section)}]")
        if not isinstance(values, dict):
            raise ConfigError(f"[{section}] must be a table")
        for key, value in values.items():
            if key not in DEFAULTS[section]:
                raise ConfigError(f"unknown key {section}.{_name(key)}")
            checked = _check(section, key, value)
            if isinstance(checked, dict):  # tables merge key by key (ratio.<family>)
                out[section][key] = {**out[section].get(key, {}), **checked}
            else:
                out[section][key] = checked
    return out


def _check_whole(cfg: dict) -> None:
    """What no single value shows: amber must start below red."""
    engine = cfg.get("engine") or {}
    amber, crit = engine.get("eps_amber"), engine.get("eps_crit")
    if isinstance(amber, (int, float)) and isinstance(crit, (int, float)) and not amber < crit:
        raise ConfigError(f"engine.eps_amber ({amber:g}) must be below engine.eps_crit ({crit:g})")


def _name(key: Any) -> str:
    """An unknown section or key as a message may show it."""
    from service.client.textsafe import printable

    return printable(key, 80)


def _shown(value: Any) -> str:
    """A bad value as a log line may show it: one short line without control characters."""
    from service.client.textsafe import printable

    return printable(repr(value), 80)


def merge_leniently(base: dict, changes: Any) -> tuple[dict, list[str]]:
    """`base` with every good value of `changes` applied; each bad one is named and left at `base`'s.

    For config.toml at start: a setting out of range must not stop measurement."""
    out = copy.deepcopy(base)
    if not isinstance(changes, dict):
        return out, ["config must be a table of sections; using the defaults"]
    problems: list[str] = []
    for section, values in changes.items():
        if not isinstance(values, dict):
            pieces: list[tuple[Any, dict]] = [(values, {section: values})]
        else:
            pieces = []
            for key, value in values.items():
                table = isinstance(value, dict) and isinstance(DEFAULTS.get(section, {}).get(key), dict)
                pieces += [(v, {section: {key: {k: v}}}) for k, v in value.items()] if table \
                    else [(value, {section: {key: value}})]  # a table (ratio.<family>): entry by entry
        for shown, change in pieces:
            try:
                _apply(out, change)
            except ConfigError as exc:
                problems.append(f"{exc} (found {_shown(shown)}); using the default")
    return out, problems


def load(path: Path, problems: list[str] | None = None) -> dict:
    """Defaults overlaid with the file; writes the commented defaults on first run.

    A value that is wrong or out of range is named (appended to `problems`, else logged) and its
    default used: a bad setting never stops start-up. A file that does not parse is reported
    (ConfigError), never overwritten.
    """
    if not path.exists():
        save(path, DEFAULTS)
        return copy.deepcopy(DEFAULTS)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise unreadable(path, raw, exc) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise unreadable(path, text, exc) from None
    cfg, found = merge_leniently(DEFAULTS, data)
    try:
        _check_whole(cfg)
    except ConfigError as exc:
        found.append(f"{exc}; using the defaults of both")
        for key in ("eps_amber", "eps_crit"):
            cfg["engine"][key] = DEFAULTS["engine"][key]
    for problem in found:
        if problems is None:
            log.warning("%s: %s", path, problem)
        else:
            problems.append(f"{path}: {problem}")
    return cfg


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
