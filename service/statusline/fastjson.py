"""JSON through the C accelerator `_json` alone: the `json` package imports `re`, `enum` and more,
about 10 ms of a status-line run's CPU. Same parser and encoder as json.loads/json.dumps (the
package drives these very functions); only the Python wrapping is left out.
tests/unit/statusline/test_statusline.py compares both on random documents.
"""

import _json

TYPE_CHECKING = False  # typing's own flag costs an import on the status line's clock
if TYPE_CHECKING:
    from typing import Any

_NUMBER_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_WHITESPACE = " \t\n\r"


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_NUMBER_CONSTANTS.__getitem__)
    memo: dict[str, str] = {}


def _unserializable(obj: object) -> "Any":
    """What json.dumps raises for a value JSON has no form for."""
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")


# The stub asks for a make_scanner instance; the C scanner reads the attributes above off any object
# (typeshed marks this "TODO: ducktype").
_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]
_encode = _json.make_encoder(None, _unserializable, _json.encode_basestring_ascii, None, ":", ",", False, False, True)


def loads(data: bytes | str) -> "Any":
    """One JSON document; ValueError when it is not one."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    if text.startswith("\ufeff"):
        raise ValueError("unexpected UTF-8 BOM")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        obj, end = _scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    except Exception as exc:  # the scanner's own JSONDecodeError (it imports json.decoder to raise it)
        raise ValueError(str(exc)) from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError("extra data after the JSON document")
    return obj


def dumps(obj: object) -> str:
    """Compact JSON, ASCII only (as json.dumps(obj, separators=(",", ":")))."""
    return "".join(_encode(obj, 0))
