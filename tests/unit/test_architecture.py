"""The rules of docs/architecture.md ("Rules that hold"), read from the code's own imports.

Every import counts, lazy ones inside functions included; only imports under `if TYPE_CHECKING:`
are left out (they never run).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module_name(py: Path) -> str:
    parts = py.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for sub in node.body:
                skip.update(id(n) for n in ast.walk(sub))
    return skip


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(py): py for py in (ROOT / package).rglob("*.py")}


KNOWN = {**_modules("service"), **_modules("desktop"), **_modules("models")}


def imported_names(py: Path) -> set[str]:
    """Every module `py` imports at run time: `from a import b` is a.b when that is a module, else a."""
    tree = ast.parse(py.read_text(encoding="utf-8"), str(py))
    skip = _type_checking_nodes(tree)
    name = _module_name(py)
    package = name if py.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.update(f"{module}.{a.name}" if f"{module}.{a.name}" in KNOWN else module for a in node.names)
    return found


def _graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of `package` it imports."""
    modules = _modules(package)
    return {name: {n for n in imported_names(py) if n in modules} - {name} for name, py in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _ours(names: set[str], *prefixes: str) -> set[str]:
    return {n for n in names if n.split(".")[0] in ("service", "desktop", "models")
            and not any(n == p or n.startswith(p + ".") for p in prefixes)}


def test_no_import_cycle_among_the_services_modules():
    assert cycles(_graph("service")) == []


def test_the_cycle_finder_sees_a_lazy_import_cycle(tmp_path, monkeypatch):
    """The check above can fail: two modules that import each other, one of them inside a function."""
    graph = {"service.a": {"service.b"}, "service.b": {"service.a"}, "service.c": {"service.a"}}
    assert cycles(graph) == [["service.a", "service.b"]]
    lazy = ROOT / "service" / "report" / "restart.py"
    assert "service.report.forked" in imported_names(lazy)  # imported inside a function, still seen


def test_the_desktop_imports_only_the_shared_layer_of_the_service():
    for py in (ROOT / "desktop").rglob("*.py"):
        bad = _ours(imported_names(py), "desktop", "service.client")
        assert not bad, f"{py.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_shared_layer_imports_nothing_of_ours_outside_itself():
    for py in (ROOT / "service" / "client").rglob("*.py"):
        bad = _ours(imported_names(py), "service.client")
        bad.discard("service")  # `from service import __version__`-style names of the package itself
        assert not bad, f"{py.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_engine_imports_nothing_of_ours_but_the_payload_types():
    for py in (ROOT / "service" / "engine").rglob("*.py"):
        bad = _ours(imported_names(py), "service.engine", "service.client.payloads")
        bad.discard("service.client")
        assert not bad, f"{py.relative_to(ROOT)} imports {sorted(bad)}"


def test_only_the_store_imports_the_models_and_the_team_schema_only_their_runner():
    for py in (ROOT / "service").rglob("*.py"):
        rel = py.relative_to(ROOT).as_posix()
        used = {n for n in imported_names(py) if n == "models" or n.startswith("models.")}
        if rel.startswith("service/store/"):
            continue
        allowed = {"models.migrations"} if rel == "service/team/schema.py" else set()
        assert used <= allowed, f"{rel} imports {sorted(used)}"


def test_no_module_imports_another_modules_private_names():
    for package in ("service", "desktop", "models"):
        for py in (ROOT / package).rglob("*.py"):
            tree = ast.parse(py.read_text(encoding="utf-8"), str(py))
            private = [f"{node.module}.{a.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                       and (node.module or "").split(".")[0] in ("service", "desktop", "models")
                       for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            assert not private, f"{py.relative_to(ROOT)} imports {private}"


def test_the_store_is_called_through_its_parts(tmp_path):
    """One way to call each operation: `Store` binds no part's method under its own name."""
    from service.store import Store

    store = Store(tmp_path / "ctxlamp.db")
    try:
        parts = [store.sessions, store.spend, store.handoffs, store.history, store.ledgers, store.team]
        methods = {name for part in parts for name in dir(part) if not name.startswith("_")}
        assert methods & set(vars(store)) == set()
    finally:
        store.close()


def test_models_depend_on_nothing_of_ours():
    for py in (ROOT / "models").rglob("*.py"):
        bad = _ours(imported_names(py), "models")
        assert not bad, f"{py.relative_to(ROOT)} imports {sorted(bad)}"
