"""What Claude Code's status-line JSON says, kept to known fields of the right types.

Claude Code may add, drop or change any field; a field of the wrong type is dropped, not
fatal. The command sends the result to the service, which passes the body through the
same function again: a client cannot make the service keep more than this shape allows.
"""

LIMIT_WINDOWS = ("five_hour", "seven_day", "spend_limit")
_MAX_TEXT = 4096
_SID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def safe_session_id(value) -> str | None:
    """A session id usable as a key and a file name, else None."""
    if isinstance(value, str) and 0 < len(value) <= 200 and not value.startswith(".") \
            and all(ch in _SID_CHARS for ch in value):
        return value
    return None


def _number(value, lo: float = 0.0, hi: float = 1e15) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if lo <= value <= hi else None  # finite bounds: NaN and the infinities fail (no math import)


def _text(value, cap: int = _MAX_TEXT) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= cap else None


def to_epoch(value) -> float | None:
    """Epoch seconds from seconds, milliseconds or an ISO 8601 text; None when unreadable."""
    number = _number(value, 0, 1e14)
    if number is not None:
        return number / 1000.0 if number > 1e11 else number
    text = _text(value, 64)
    if text is None:
        return None
    from datetime import datetime, timezone  # only for ISO texts: the usual epoch numbers need no import

    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _numbers(obj, keys: tuple[str, ...]) -> dict:
    if not isinstance(obj, dict):
        return {}
    out = {}
    for key in keys:
        value = _number(obj.get(key))
        if value is not None:
            out[key] = value
    return out


def _window(obj) -> dict | None:
    if not isinstance(obj, dict):
        return None
    pct = _number(obj.get("used_percentage"), 0, 1000)
    if pct is None:
        pct = _number(obj.get("utilization"), 0, 1000)
    if pct is None:
        return None
    out = {"used_percentage": pct}
    resets = to_epoch(obj.get("resets_at"))
    if resets is not None:
        out["resets_at"] = resets
    return out


_CACHE_COUNTS = ("requests", "misses", "expected_rebuilds")
_CACHE_TOKENS = ("cache_write_tokens", "miss_recache_tokens", "recache_tokens_if_cold")
_TTL_UNITS = {"s": 1, "m": 60, "h": 3600}
MAX_CAUSES = 16


def _ttl_s(value) -> float | None:
    """The cache's lifetime in seconds: Claude Code writes "5m" or "1h"; a number is seconds. At most a day."""
    if isinstance(value, str) and 1 < len(value) <= 8 and value[-1] in _TTL_UNITS and value[:-1].isdigit():
        return _number(int(value[:-1]) * _TTL_UNITS[value[-1]], 0, 86400)
    return _number(value, 0, 86400)


def _cause(value) -> str | None:
    """A miss cause's name (`ttl_expired_5m`, `model_changed`, ...): lower-case letters, digits and _ only."""
    if (isinstance(value, str) and 0 < len(value) <= 40 and value.isascii() and value.strip("_")  # no "²", no "_"
            and all(c.isdigit() or "a" <= c <= "z" or c == "_" for c in value)):
        return value
    return None


def prompt_cache(obj) -> dict:
    """The known fields of Claude Code's `prompt_cache`, each of its type and within its range; the
    rest dropped. Misses by cause keep at most MAX_CAUSES names."""
    if not isinstance(obj, dict):
        return {}
    cache: dict = {}
    for key in ("warm", "caching_observed"):
        if isinstance(obj.get(key), bool):
            cache[key] = obj[key]
    ttl = _ttl_s(obj.get("ttl"))
    if ttl is not None:
        cache["ttl"] = ttl
    for key in ("expires_at", "last_miss_at"):
        at = to_epoch(obj.get(key))
        if at is not None:
            cache[key] = at
    for key in _CACHE_COUNTS:
        n = _number(obj.get(key), 0, 1e9)
        if n is not None:
            cache[key] = int(n)
    for key in _CACHE_TOKENS:
        n = _number(obj.get(key), 0, 1e10)
        if n is not None:
            cache[key] = int(n)
    ratio = _number(obj.get("hit_ratio"), 0, 1)
    if ratio is not None:
        cache["hit_ratio"] = ratio
    last = obj.get("last_miss_cause")
    causes = last.get("causes") if isinstance(last, dict) else None
    if isinstance(causes, list):
        named = [c for c in (_cause(x) for x in causes[:MAX_CAUSES]) if c is not None]
        if named:
            cache["last_miss_cause"] = {"causes": named}
    by_cause = obj.get("miss_causes")
    if isinstance(by_cause, dict):
        counted = {}
        for name, n in list(by_cause.items())[:MAX_CAUSES]:
            name, n = _cause(name), _number(n, 0, 1e9)
            if name is not None and n is not None:
                counted[name] = int(n)
        if counted:
            cache["miss_causes"] = counted
    return cache


def parse(obj) -> dict:
    """The known fields of one status-line object (any input: a non-dict gives {})."""
    if not isinstance(obj, dict):
        return {}
    out: dict = {}
    sid = safe_session_id(obj.get("session_id"))
    if sid:
        out["session_id"] = sid
    for key in ("transcript_path", "cwd", "version"):
        value = _text(obj.get(key))
        if value is not None:
            out[key] = value
    model = obj.get("model")
    if isinstance(model, dict):
        m = {k: v for k in ("id", "display_name") if (v := _text(model.get(k), 200)) is not None}
        if m:
            out["model"] = m
    cost = _numbers(obj.get("cost"), ("total_cost_usd", "total_duration_ms", "total_api_duration_ms",
                                      "total_lines_added", "total_lines_removed"))
    if cost:
        out["cost"] = cost
    ctx = _numbers(obj.get("context_window"), ("total_input_tokens", "total_output_tokens", "context_window_size",
                                               "used_percentage", "remaining_percentage"))
    if ctx:
        out["context_window"] = ctx
    cache = prompt_cache(obj.get("prompt_cache"))
    if cache:
        out["prompt_cache"] = cache
    limits_in = obj.get("rate_limits")
    if isinstance(limits_in, dict):
        limits = {name: w for name in LIMIT_WINDOWS if (w := _window(limits_in.get(name))) is not None}
        if limits:
            out["rate_limits"] = limits
    return out
