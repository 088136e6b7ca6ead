"""The shape docs/architecture.md draws, read from the code with ``ast``: no import circle in
``runner/``, SQL only in ``runner/store``, imports pointing down the layers only, and in
``runner/service`` no late import of the package's own modules without a comment saying why.

One case per package (and top-level module), so a red one names it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest
from testkit import REPO

RUNNER = REPO / "runner"
PACKAGES = sorted([p.name for p in RUNNER.iterdir() if (p / "__init__.py").exists()]
                  + [p.stem for p in RUNNER.glob("*.py") if not p.stem.startswith("__")])
# lower layers first; a module imports its own layer or lower ones only (docs/architecture.md)
LAYERS = [{"clock", "net"}, {"errors", "domain", "config"}, {"store"}, {"play", "books", "render"},
          {"service"}, {"cluster", "web"}, {"cli"}]
# imports against the layers (none; a new one is named here with its reason)
LAYER_EXCEPTIONS: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in RUNNER.rglob("*.py")}


@cache
def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules().items()}


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(n) for n in ast.walk(node))
    return ids


def _targets(name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The runner modules an import statement of module ``name`` loads."""
    modules = _modules()
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    base = node.module or ""
    if node.level:
        package = name.split(".")
        if modules[name].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([base] if base else []))
    found = []
    for alias in node.names:
        full = f"{base}.{alias.name}"
        found.append(full if full in modules else base)
    return [t for t in found if t in modules]


@cache
def _imports() -> dict[str, list[tuple[str, ast.stmt, bool]]]:
    """module -> (imported module, statement, at module level) for every runtime import."""
    graph: dict[str, list[tuple[str, ast.stmt, bool]]] = {}
    for name, tree in _trees().items():
        skip = _type_checking_nodes(tree)
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip:
                for target in _targets(name, node):
                    if target != name:
                        graph.setdefault(name, []).append((target, node, id(node) in top))
    return graph


def _runner_edges() -> dict[str, set[str]]:
    return {a: {t for t, _, _ in targets} for a, targets in _imports().items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        if module not in index:
            visit(module)
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package: str) -> None:
    circles = [c for c in _cycles(_runner_edges()) if any(_package(m) == package for m in c)]
    assert not circles, f"import circles through runner/{package}: {circles}"


def test_no_import_circle_through_the_package_face() -> None:
    """runner/__init__.py and runner/errors.py (modules outside any subpackage)."""
    circles = [c for c in _cycles(_runner_edges()) if any(_package(m) in ("", "errors", "__main__")
                                           for m in c)]
    assert not circles, circles


def _sql_calls(tree: ast.Module) -> list[int]:
    """Lines of ``.execute(``, ``.executemany(`` and ``.executescript(`` calls."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("execute", "executemany", "executescript")]


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "store"])
def test_sql_only_in_the_store(package: str) -> None:
    found = [f"{name}:{line}" for name, tree in sorted(_trees().items())
             if _package(name) == package for line in _sql_calls(tree)]
    assert not found, f"SQL outside runner/store: {found}"


def test_the_sql_check_sees_sql() -> None:
    """The check itself: the store's own modules do run SQL."""
    assert _sql_calls(_trees()["runner.store.database"])


def _layer(package: str) -> int | None:
    return next((i for i, layer in enumerate(LAYERS) if package in layer), None)


@pytest.mark.parametrize("package", [p for p in PACKAGES if _layer(p) is not None])
def test_imports_point_down_the_layers(package: str) -> None:
    upward = []
    for name, targets in sorted(_imports().items()):
        if _package(name) != package:
            continue
        for target, _, _ in targets:
            low, high = _layer(package), _layer(_package(target))
            if high is not None and low is not None and high > low \
                    and (name, target) not in LAYER_EXCEPTIONS:
                upward.append(f"{name} -> {target}")
    assert not upward, sorted(set(upward))


def test_service_has_no_unexplained_late_import() -> None:
    """A late import of the package's own modules in runner/service carries a comment
    saying why (start-up speed, an optional heavy library) on its line or the one above."""
    unexplained = []
    for name, targets in sorted(_imports().items()):
        if _package(name) != "service":
            continue
        lines = _modules()[name].read_text(encoding="utf-8").splitlines()
        for _target, node, top in targets:
            here = lines[node.lineno - 1]
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            if not top and "#" not in here and not above.startswith("#"):
                unexplained.append(f"{name}:{node.lineno}")
    assert not unexplained, sorted(set(unexplained))


def test_the_circle_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
