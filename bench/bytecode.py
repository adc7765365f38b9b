"""A checkout's modules compiled to bytecode before a bench times the commands that import them.

An installed ctxlamp runs from bytecode: pip compiles a wheel's modules, `make run` compiles the checkout's,
and Python writes the rest on their first import. A shell with PYTHONDONTWRITEBYTECODE set (CI images, the
machines these benches ran on) writes none, so a checkout edited since its last `make` recompiled every
changed module in every timed run: 0.15-0.25 s of a first pass's service (decision 503).
"""
from __future__ import annotations

import compileall
from pathlib import Path

PACKAGES = ("service", "models", "resources")  # what `ctxlamp` imports (the Makefile compiles desktop/ too)


def compile_checkout(root: Path, packages: tuple[str, ...] = PACKAGES) -> None:
    """Bytecode for every module of `root`'s packages that lacks a current one (those up to date are kept)."""
    for package in packages:
        if not compileall.compile_dir(str(root / package), quiet=1):
            raise SystemExit(f"cannot compile {root / package}: the bench would time the compiler")
