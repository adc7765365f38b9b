"""How the engine's immutable values cross to a worker process: rebuilt from what made them.

The report's and the first pass's spawned workers get the price table and the engine's settings
pickled. A compiled class (mypyc, `make compiled`) is pickled as its attributes and set back one by
one, which a frozen dataclass refuses; rebuilt by calling the class with its fields, it unpickles in
both builds, equal to what was sent.
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any


def by_fields(obj: Any) -> tuple[Any, tuple[Any, ...]]:
    """`__reduce__` of a frozen dataclass: the class and its fields, in order."""
    return type(obj), tuple(getattr(obj, f.name) for f in fields(obj))
