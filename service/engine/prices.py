"""Per-token prices by model id (docs/measurement.md section 6).

Pure: the caller loads `resources/prices.json` (and the user's override file)
and hands the parsed objects in. Lookups say how they found the price, because
a guessed price must be flagged in the data-quality panel:

    "table"    the id (or the id without its `-YYYYMMDD` snapshot date) is in the table
    "family"   not in the table; priced at its family's newest entry
    "unknown"  no family we price (e.g. `<synthetic>`): no price at all

An entry's rates are today's. A price that changed carries its history in `changes`:
`[{"from": "2026-10-07", "was": {"cache_read": 0.2}, "source": "..."}]` says that from that
day (00:00 UTC) on the entry's rates apply and that before it the rates in `was` did (the
others as today). `lookup_at(model, time)` prices a call at the rates of its own time; the
time comes from the transcript line, so the lookup stays pure. A user's override of a rate
applies at every date (it removes that rate from the history).

Price modifiers (docs/measurement.md section 6): a call's `usage.speed` and `usage.inference_geo`
multiply every rate, cache rates and long-context rates included, by a figure the entry gives per
value and period: `"modifiers": {"speed": {"fast": [{"from": "2026-05-28", "until": "2026-11-30",
"multiplier": 2}]}, "inference_geo": {"us": [{"multiplier": 1.1}]}}`. The modifiers stack with
each other. A fast call's model is spelled `<model>-fast` (its label: reports and the engine keep
fast calls apart, and a speed switch is a model switch). A value the entry gives no figure for at
the call's time is priced at standard and named in the price's `unknown_modifiers`, so the
data-quality panel can count it.
"""
from __future__ import annotations

import bisect
import copy
import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any, Mapping

from service.engine.pickling import by_fields

PER_MILLION = 1_000_000
RATE_FIELDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")

_DATE_SUFFIX = re.compile(r"[-@]\d{8}$")
_BRACKET_SUFFIX = re.compile(r"\[[^\]]*\]$")          # Claude Code's "claude-opus-4-6[1m]"
_BEDROCK_VERSION = re.compile(r"-v\d+(:\d+)?$")        # "anthropic.claude-...-v1:0"
_RELEASED = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")

FAST = "fast"
FAST_SUFFIX = "-fast"
MODIFIER_FIELDS = ("speed", "inference_geo")
# the values every model is billed at standard for: they never need a figure
_STANDARD_VALUES = {"speed": {"", "standard"}, "inference_geo": {"", "global", "not_available"}}
MAX_MULTIPLIER = 100.0  # a figure above this is a typo in a price file, not a price


@dataclass(frozen=True)
class LongContextRates:
    """Rates for a whole request whose prompt exceeds `threshold_tokens` (USD per token)."""
    threshold_tokens: int
    p_in: float
    p_out: float
    p_r: float
    p_w5: float
    p_w1h: float

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)


@dataclass(frozen=True)
class Price:
    """USD per token. `model` is the table entry that supplied the figures."""
    model: str
    family: str | None
    p_in: float
    p_out: float
    p_r: float
    p_w5: float
    p_w1h: float
    context_window: int
    long_context: LongContextRates | None = None
    unknown_modifiers: tuple[str, ...] = ()  # "speed=fast" etc.: values priced at standard for want of a figure

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)

    def for_prompt(self, prompt_tokens: int) -> "Price":
        """The rates a request with this many prompt tokens (input + cache reads + writes) pays."""
        lc = self.long_context
        if lc is None or prompt_tokens <= lc.threshold_tokens:
            return self
        return replace(self, p_in=lc.p_in, p_out=lc.p_out, p_r=lc.p_r,
                       p_w5=lc.p_w5, p_w1h=lc.p_w1h, long_context=None)


def normalize_model_id(model: str) -> str:
    """Canonical spelling: lower case, no `[1m]` tag, Bedrock/Vertex decorations removed."""
    mid = model.strip().lower()
    mid = _BRACKET_SUFFIX.sub("", mid)
    if "anthropic." in mid and "claude-" in mid:          # "us.anthropic.claude-opus-4-1-20250805-v1:0"
        mid = mid[mid.index("claude-"):]
        mid = _BEDROCK_VERSION.sub("", mid)
    return mid.replace("@", "-")                           # Vertex "claude-opus-4@20250514"


def strip_date(model: str) -> str:
    return _DATE_SUFFIX.sub("", model)


def modifier_value(field: str, value: Any) -> str | None:
    """A usage field as the price lookup takes it: None for the standard values (and absence), else the text.

    Transcript text is untrusted: a value that is not text is named as such, never passed on."""
    if value is None:
        return None
    if not isinstance(value, str):
        return "(not text)"
    value = value.strip()[:40]
    return None if value in _STANDARD_VALUES[field] else value


def call_label(model: str, speed: Any) -> str:
    """The name a call is booked under: `<model>-fast` for a fast call, else its model."""
    return model + FAST_SUFFIX if modifier_value("speed", speed) == FAST and model else model


def split_label(label: str) -> tuple[str, str | None]:
    """(model, speed) of a label: `claude-opus-5-5-fast` is Opus 5.5 at fast speed."""
    if label.endswith(FAST_SUFFIX) and len(label) > len(FAST_SUFFIX):
        return label[:-len(FAST_SUFFIX)], FAST
    return label, None


def label_text(label: str) -> str:
    """A label for a line of text: `claude-opus-5-5 (fast)`."""
    model, speed = split_label(label)
    return f"{model} (fast)" if speed == FAST else label


def family_of(model: str) -> str | None:
    """`claude-<family>-…` or old style `claude-3-5-<family>-…`; None when not a Claude id."""
    mid = normalize_model_id(model)
    if not mid.startswith("claude-"):
        return None
    for part in mid.split("-")[1:]:
        if part.isalpha():
            return part
    return None


def _version_key(model: str) -> tuple[int, ...]:
    return tuple(int(p) for p in strip_date(model).split("-") if p.isdigit())


class PriceTable:
    """Immutable price table; `lookup` is memoized."""

    def __reduce__(self) -> tuple[Any, ...]:
        """A worker rebuilds the table from its entries (the compiled build cannot set a class's attributes back)."""
        return PriceTable, (self._raw, self.source, self.source_date)

    def __init__(self, raw: Mapping[str, Any], source: str = "", source_date: str = ""):
        self.source = source
        self.source_date = source_date
        # Any: an entry is checked by _parse_entry, which names a malformed one (a ValueError, compiled too)
        self._raw: dict[str, Any] = {mid: copy.deepcopy(dict(entry)) if isinstance(entry, Mapping) else entry
                                     for mid, entry in raw.items()}
        self._prices: dict[str, Price] = {}
        self._released: dict[str, tuple[int, int, int]] = {}
        self._index: dict[str, str] = {}
        for mid, entry in self._raw.items():
            self._prices[mid] = _parse_entry(mid, entry)
            self._released[mid] = _parse_released(mid, entry.get("released"))
        for mid in self._raw:                                  # aliases never shadow a real id
            for alias in self._raw[mid].get("aliases") or ():
                self._index.setdefault(normalize_model_id(alias), mid)
        for mid in self._raw:
            self._index[normalize_model_id(mid)] = mid
        self._newest: dict[str, str] = {}
        for mid, price in self._prices.items():
            fam = price.family
            if fam is None:
                continue
            best = self._newest.get(fam)
            if best is None or self._order_key(mid) > self._order_key(best):
                self._newest[fam] = mid
        self._memo: dict[str, tuple[Price | None, str]] = {}
        # entry -> (the UTC instants its changes took effect, ascending; the rates in force before each)
        self._history: dict[str, tuple[list[float], list[Price]]] = {}
        for mid, entry in self._raw.items():
            changes = _parse_changes(mid, entry.get("changes"))
            if changes:
                self._history[mid] = _periods(self._prices[mid], changes)
        # entry -> (field, value) -> [(from, until, multiplier)] in file order (epoch seconds; open ends infinite)
        self._modifiers: dict[str, dict[tuple[str, str], list[tuple[float, float, float]]]] = {
            mid: mods for mid, entry in self._raw.items() if (mods := _parse_modifiers(mid, entry.get("modifiers")))}

    # -- construction -------------------------------------------------------
    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "PriceTable":
        models = obj.get("models") if isinstance(obj, Mapping) else None
        if not isinstance(models, Mapping):
            raise ValueError("prices: expected an object with a 'models' object")
        return cls(models, source=str(obj.get("source", "")), source_date=str(obj.get("source_date", "")))

    def merged(self, override: Mapping[str, Any]) -> "PriceTable":
        """A new table with the user's entries applied field by field.

        An entry for a known model changes only the fields it names (so a user can
        correct one rate); an entry for a new model must be complete.
        """
        models = override.get("models") if isinstance(override, Mapping) else None
        if not isinstance(models, Mapping):
            raise ValueError("prices override: expected an object with a 'models' object")
        raw = copy.deepcopy(self._raw)
        for mid, entry in models.items():
            if not isinstance(entry, Mapping):
                raise ValueError(f"prices override: model {mid!r}: entry must be an object")
            known = self._index.get(normalize_model_id(mid))
            if known is not None:
                fields = copy.deepcopy(dict(entry))
                if "changes" not in fields and raw[known].get("changes"):
                    fields["changes"] = _without_rates(raw[known]["changes"], set(fields) & set(RATE_FIELDS))
                if isinstance(fields.get("modifiers"), Mapping):
                    fields["modifiers"] = _merged_modifiers(raw[known].get("modifiers"), fields["modifiers"])
                raw[known].update(fields)
            else:
                raw[mid] = copy.deepcopy(dict(entry))
        source = self.source
        if override.get("source"):
            source = f"{source}; overridden by {override['source']}"
        return PriceTable(raw, source=source, source_date=str(override.get("source_date", self.source_date)))

    # -- queries ------------------------------------------------------------
    # speed, geo and at come from transcripts as written (Any: the compiled engine checks annotated types at the
    # call, and an odd value is read as no modifier or no time, never refused)
    def lookup(self, model: str, speed: Any = None, geo: Any = None) -> tuple[Price | None, str]:
        """Today's rates of `model` (a label: `<model>-fast` is the model at fast speed), with the modifiers
        of `speed` and `geo` (usage values; None or a standard value: none) at their latest figures."""
        return self.lookup_at(model, None, speed, geo)

    def lookup_at(self, model: str, at: Any, speed: Any = None, geo: Any = None) -> tuple[Price | None, str]:
        """The price of a call of `model` made at `at` (epoch seconds or ISO-8601 text from the transcript):
        the rates and modifiers in force then. Without a readable time, today's rates (as `lookup`)."""
        if isinstance(model, str) and model.endswith(FAST_SUFFIX):
            model, speed = split_label(model)
        hit = self._memo.get(model)
        if hit is None:
            hit = self._memo[model] = self._resolve(model)
        price, how = hit
        if price is None:
            return hit
        t = None
        if at is not None:
            t = at if isinstance(at, (int, float)) and not isinstance(at, bool) else _epoch(at)
        history = self._history.get(price.model)
        if history is not None and t is not None:
            starts, before = history
            k = bisect.bisect_right(starts, t)  # the first change that came after the call
            if k < len(starts):
                price = before[k]
        speed, geo = modifier_value("speed", speed), modifier_value("inference_geo", geo)
        if speed is None and geo is None:
            return hit if price is hit[0] else (price, how)
        return self._modified(price, (("speed", speed), ("inference_geo", geo)), t), how

    def _modified(self, price: Price, values: tuple[tuple[str, str | None], ...], t: float | None) -> Price:
        """The price with each modifier's multiplier in force at `t` (None: its latest figure) laid on."""
        mods = self._modifiers.get(price.model, {})
        factor, unknown = 1.0, []
        for name, value in values:
            if value is None:
                continue
            m = _in_force(mods.get((name, value)), t)
            if m is None:
                unknown.append(f"{name}={value}")
            else:
                factor *= m
        if factor == 1.0 and not unknown:
            return price
        return _scaled(price, factor, tuple(unknown))

    def modifiers(self, model: str) -> dict[str, Any]:
        """The modifiers of a table entry, as the file gives them."""
        return copy.deepcopy(dict(self._raw[model].get("modifiers") or {}))

    def changes(self, model: str) -> list[dict[str, Any]]:
        """The dated changes of a table entry, as the file gives them (for the data-quality panel)."""
        return copy.deepcopy(list(self._raw[model].get("changes") or []))

    def models(self) -> list[str]:
        return sorted(self._prices)

    def _resolve(self, model: str) -> tuple[Price | None, str]:
        if not isinstance(model, str) or not model:
            return None, "unknown"
        mid = normalize_model_id(model)
        for candidate in (mid, strip_date(mid)):
            known = self._index.get(candidate)
            if known is not None:
                return self._prices[known], "table"
        fam = family_of(mid)
        newest = self._newest.get(fam) if fam else None
        if newest is None:
            return None, "unknown"
        return self._prices[newest], "family"

    def _order_key(self, mid: str) -> tuple[Any, ...]:
        return (self._released[mid], _version_key(mid))


def _rate(mid: str, where: Mapping[str, Any], field: str, label: str) -> float:
    if field not in where:
        raise ValueError(f"prices: model {mid!r}: missing field {label!r}")
    value = where[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"prices: model {mid!r}: field {label!r} must be a non-negative number, got {value!r}")
    return float(value) / PER_MILLION


def _parse_entry(mid: str, entry: Any) -> Price:
    if not isinstance(mid, str) or not mid:
        raise ValueError(f"prices: model id must be a non-empty string, got {mid!r}")
    if not isinstance(entry, Mapping):
        raise ValueError(f"prices: model {mid!r}: entry must be an object, got {type(entry).__name__}")
    p_in, p_out, p_r, p_w5, p_w1h = (_rate(mid, entry, f, f) for f in RATE_FIELDS)
    cw = entry.get("context_window")
    if isinstance(cw, bool) or not isinstance(cw, int) or cw <= 0:
        raise ValueError(f"prices: model {mid!r}: field 'context_window' must be a positive integer, got {cw!r}")
    family = entry.get("family", family_of(mid))
    if family is not None and (not isinstance(family, str) or not family):
        raise ValueError(f"prices: model {mid!r}: field 'family' must be a non-empty string or null, got {family!r}")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise ValueError(f"prices: model {mid!r}: field 'aliases' must be a list of strings")
    return Price(model=mid, family=family, p_in=p_in, p_out=p_out, p_r=p_r, p_w5=p_w5, p_w1h=p_w1h,
                 context_window=cw, long_context=_parse_long(mid, entry.get("long_context")))


def _parse_long(mid: str, lc: Any) -> LongContextRates | None:
    if lc is None:
        return None
    if not isinstance(lc, Mapping):
        raise ValueError(f"prices: model {mid!r}: field 'long_context' must be an object or null")
    thr = lc.get("threshold_tokens")
    if isinstance(thr, bool) or not isinstance(thr, int) or thr <= 0:
        raise ValueError(f"prices: model {mid!r}: field 'long_context.threshold_tokens' must be a positive integer, got {thr!r}")
    rates = [_rate(mid, lc, f, f"long_context.{f}") for f in RATE_FIELDS]
    return LongContextRates(thr, *rates)


def _epoch(text: Any) -> float | None:
    """Epoch seconds of an ISO-8601 time (UTC when it names no offset); None when unreadable."""
    if not isinstance(text, str) or len(text) < 10:
        return None
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _parse_changes(mid: str, changes: Any) -> list[tuple[float, dict[str, float]]]:
    """[(epoch of the day it took effect, {rate field: USD per token before it})], ascending, checked."""
    if changes is None:
        return []
    where = f"prices: model {mid!r}: field 'changes'"
    if not isinstance(changes, list):
        raise ValueError(f"{where} must be a list")  # noqa: TRY004 - a bad price file is a ValueError to callers
    out: list[tuple[float, dict[str, float]]] = []
    for i, change in enumerate(changes):
        if not isinstance(change, Mapping):
            raise ValueError(f"{where}[{i}] must be an object")  # noqa: TRY004 - as above
        unknown = set(change) - {"from", "was", "source", "note"}
        if unknown:
            raise ValueError(f"{where}[{i}]: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        day = change.get("from")
        at = _day_epoch(f"{where}[{i}].from", day)
        was = change.get("was")
        if not isinstance(was, Mapping) or not was or set(was) - set(RATE_FIELDS):
            raise ValueError(f"{where}[{i}].was must name one or more of {', '.join(RATE_FIELDS)}")
        rates = {f: _rate(mid, was, f, f"changes[{i}].was.{f}") for f in RATE_FIELDS if f in was}
        if out and at <= out[-1][0]:
            raise ValueError(f"{where}: days must be in order, each once ({day!r})")
        out.append((at, rates))
    return out


def _periods(today: Price, changes: list[tuple[float, dict[str, float]]]) -> tuple[list[float], list[Price]]:
    """The rates in force before each change: today's, with the later changes' `was` laid on first."""
    before: list[Price] = []
    current = today
    for _, was in reversed(changes):
        current = replace(current, p_in=was.get("input", current.p_in), p_out=was.get("output", current.p_out),
                          p_r=was.get("cache_read", current.p_r), p_w5=was.get("cache_write_5m", current.p_w5),
                          p_w1h=was.get("cache_write_1h", current.p_w1h))
        before.append(current)
    return [at for at, _ in changes], before[::-1]


def _without_rates(changes: Any, fields: set[str]) -> Any:
    """The history with the rates a user overrides taken out (the override applies at every date)."""
    if not isinstance(changes, list) or not fields:
        return copy.deepcopy(changes)
    out = []
    for change in changes:
        if isinstance(change, Mapping) and isinstance(change.get("was"), Mapping):
            was = {k: v for k, v in change["was"].items() if k not in fields}
            if not was:
                continue
            change = {**change, "was": was}
        out.append(copy.deepcopy(change))
    return out


def _parse_released(mid: str, value: Any) -> tuple[int, int, int]:
    """'YYYY-MM-DD' or 'YYYY-MM' -> sortable tuple; missing sorts oldest."""
    if value is None:
        return (0, 0, 0)
    m = _RELEASED.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"prices: model {mid!r}: field 'released' must be 'YYYY-MM-DD' or 'YYYY-MM', got {value!r}")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def _parse_modifiers(mid: str, mods: Any) -> dict[tuple[str, str], list[tuple[float, float, float]]]:
    """`{"speed": {"fast": [period, ...]}, ...}` checked -> {(field, value): [(from, until, multiplier)]}."""
    if mods is None:
        return {}
    where = f"prices: model {mid!r}: field 'modifiers'"
    if not isinstance(mods, Mapping) or set(mods) - set(MODIFIER_FIELDS):
        raise ValueError(f"{where} must be an object with {' and/or '.join(MODIFIER_FIELDS)}")
    out: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for name, by_value in mods.items():
        if not isinstance(by_value, Mapping):
            raise ValueError(f"{where}.{name} must be an object of value -> periods")  # noqa: TRY004 - a bad file
        for value, periods in by_value.items():
            if not isinstance(value, str) or not value or value in _STANDARD_VALUES[name]:
                raise ValueError(f"{where}.{name}: {value!r} is not a value that changes the price")
            out[(name, value)] = _parse_mod_periods(f"{where}.{name}.{value}", periods)
    return out


def _parse_mod_periods(where: str, periods: Any) -> list[tuple[float, float, float]]:
    if not isinstance(periods, list) or not periods:
        raise ValueError(f"{where} must be a non-empty list of periods")
    out: list[tuple[float, float, float]] = []
    for i, period in enumerate(periods):
        if not isinstance(period, Mapping) or set(period) - {"from", "until", "multiplier", "source", "note"}:
            raise ValueError(f"{where}[{i}] must be an object of from, until, multiplier, source, note")
        m = period.get("multiplier")
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) \
                or not 0 < m <= MAX_MULTIPLIER:
            raise ValueError(f"{where}[{i}].multiplier must be a number above 0 and at most {MAX_MULTIPLIER:g}")
        start = _day_epoch(f"{where}[{i}].from", period.get("from"), -math.inf)
        end = _day_epoch(f"{where}[{i}].until", period.get("until"), math.inf)
        if end <= start or (out and start < out[-1][1]):
            raise ValueError(f"{where}[{i}]: periods must be in order, each ending after it starts, none overlapping")
        out.append((start, end, float(m)))
    return out


def _day_epoch(where: str, day: Any, missing: float | None = None) -> float:
    """Epoch seconds of 00:00 UTC of a day YYYY-MM-DD; `missing` when it is absent and may be."""
    if day is None and missing is not None:
        return missing
    try:
        d = date.fromisoformat(day) if isinstance(day, str) and len(day) == 10 else None
    except ValueError:
        d = None
    if d is None:
        raise ValueError(f"{where} must be a day YYYY-MM-DD, got {day!r}")
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


def _in_force(periods: list[tuple[float, float, float]] | None, t: float | None) -> float | None:
    """The multiplier of the period holding `t` (from 00:00 UTC of its first day to 00:00 of `until`);
    without a time, the latest period's. None when no period holds it."""
    if not periods:
        return None
    if t is None:
        return periods[-1][2]
    for start, end, m in periods:
        if start <= t < end:
            return m
    return None


def _scaled(price: Price, factor: float, unknown: tuple[str, ...]) -> Price:
    lc = price.long_context
    if lc is not None:
        lc = LongContextRates(lc.threshold_tokens, lc.p_in * factor, lc.p_out * factor, lc.p_r * factor,
                              lc.p_w5 * factor, lc.p_w1h * factor)
    return replace(price, p_in=price.p_in * factor, p_out=price.p_out * factor, p_r=price.p_r * factor,
                   p_w5=price.p_w5 * factor, p_w1h=price.p_w1h * factor, long_context=lc, unknown_modifiers=unknown)


def _merged_modifiers(ours: Any, theirs: Mapping[str, Any]) -> dict[str, Any]:
    """A user's modifiers laid on the entry's, value by value (each value's periods replaced whole)."""
    out = copy.deepcopy(dict(ours)) if isinstance(ours, Mapping) else {}
    for name, by_value in theirs.items():
        if isinstance(by_value, Mapping) and isinstance(out.get(name), Mapping):
            out[name] = {**out[name], **copy.deepcopy(dict(by_value))}
        else:
            out[name] = copy.deepcopy(by_value)
    return out
