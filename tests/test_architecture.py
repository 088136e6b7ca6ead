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


# --------------------------------------------------------------------------- who alone may do what

# the parts of the running event (docs/architecture.md "The parts of the event"); set-up
# (setup, builds, tournament.prepare) writes before the writer thread runs, at once
RUNNING_EVENT = ["assembly", "td.director", "td.rules", "gamelife", "held", "recording", "runloop",
                 "running", "schedule", *(f"views.{m}" for m in (
                     "alerts", "console", "epd", "gpualerts", "livepgn", "pgnfile", "progress",
                     "rewrite", "router", "runviews", "sink", "snapshot", "storesink"))]


def _store_write_methods() -> set[str]:
    """The Store methods that commit (their body opens a transaction)."""
    tree = _trees()["runner.store.database"]
    store = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Store")
    return {f.name for f in store.body if isinstance(f, ast.FunctionDef)
            and "self.transaction(" in ast.unparse(f)}


def _calls_on_the_loops_store(tree: ast.Module, methods: set[str]) -> list[int]:
    """Lines of ``self.store.M(...)`` calls (the loop's own connection) of a write method."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in methods and ast.unparse(node.func.value) == "self.store"]


def test_the_write_check_knows_the_writes() -> None:
    assert {"record_game", "start_game", "add_round", "clear_processes", "reset_running",
            "record_process", "set_meta"} <= _store_write_methods()
    sample = ast.parse("self.store.clear_processes()\nself.writes.write(lambda s: s.x())")
    assert _calls_on_the_loops_store(sample, {"clear_processes"}) == [1]


@pytest.mark.parametrize("module", RUNNING_EVENT)
def test_no_write_beside_the_writer_while_the_event_runs(module: str) -> None:
    """Every write of the running event goes through the writer (runner.service.writes:
    the store's one writer thread); none on the loop's own connection."""
    found = _calls_on_the_loops_store(_trees()[f"runner.service.{module}"],
                                      _store_write_methods())
    assert not found, f"runner/service/{module.replace('.', '/')}.py writes on the loop's store at lines {found}"


# the modules that install signal handlers, and why (docs/architecture.md)
SIGNAL_HANDLERS = {
    "runner.service.runloop": "the run loop, while the event runs (a clean stop)",
    "runner.service.setup": "stop_signals: around the whole `run` command, before and after "
                            "the loop (a first signal is a KeyboardInterrupt)",
    "runner.cli.serve": "the dashboard's own process",
    "runner.cluster.worker": "a worker's own process",
    "runner.cluster.scheduler": "the scheduler's own process",
}


def test_only_the_run_loop_installs_signal_handlers_in_run() -> None:
    found = {name for name, tree in _trees().items() for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and (node.func.attr == "add_signal_handler"
                  or ast.unparse(node.func) == "signal.signal")}
    assert found == set(SIGNAL_HANDLERS), sorted(found ^ set(SIGNAL_HANDLERS))


# module-level state in runner/domain (none; a remaining one is named here with its reason)
DOMAIN_STATE = {
    ("runner.domain.events", "_FIELDS"):
        "a memo of each dataclass's field names for the JSON codec (derived, never "
        "decides anything; measured: a fifth of the generic conversion per ply)",
}


MUTATORS = {"append", "add", "update", "pop", "popitem", "clear", "setdefault", "extend",
            "insert", "remove", "discard", "appendleft"}


def _mutable_globals(tree: ast.Module) -> list[str]:
    """Module-level names that hold state: a list, dict or set changed by a function (an
    item set or deleted, a mutating method called), or a name rebound through ``global``.
    A constant table (built once, never changed) is not state."""
    tables = set()
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp
                      | ast.SetComp) or (isinstance(value, ast.Call) and ast.unparse(
                          value.func) in ("list", "dict", "set", "collections.deque",
                                          "collections.defaultdict", "defaultdict")):
            tables.update(ast.unparse(t) for t in targets)
    changed = set()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Global):
                changed.update(node.names)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                changed.add(ast.unparse(node.value))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in MUTATORS:
                changed.add(ast.unparse(node.func.value))
    return sorted(n for n in changed if n in tables or any(
        isinstance(g, ast.Global) and n in g.names for g in ast.walk(tree)))


def test_the_domain_keeps_no_state() -> None:
    """runner/domain holds pure rules: no module-level list, dict or set, no ``global``."""
    found = {(name, var) for name, tree in _trees().items()
             if name.startswith("runner.domain.") for var in _mutable_globals(tree)}
    assert found == set(DOMAIN_STATE), sorted(found ^ set(DOMAIN_STATE))


def test_the_state_check_sees_state() -> None:
    tree = ast.parse("A = {}\nB: list[int] = []\nC = {1: 2}\nE = []\n"
                     "def f():\n    global D\n    A[1] = 2\n    B.append(1)\n    x = C[1]\n")
    assert _mutable_globals(tree) == ["A", "B", "D"]


MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 400


def oversized(source: str) -> list[str]:
    """The functions over MAX_FUNCTION_LINES and the classes over MAX_CLASS_LINES in
    ``source`` (decorators and docstrings counted), as 'name: N lines'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if lines > limit:
                found.append(f"{node.name}: {lines} lines")
    return found


def test_no_function_over_80_lines_and_no_class_over_400() -> None:
    found = {str(p.relative_to(REPO)): oversized(p.read_text(encoding="utf-8"))
             for p in sorted(RUNNER.rglob("*.py"))}
    assert {path: names for path, names in found.items() if names} == {}


def test_the_size_check_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert oversized(f"def f():\n{body}\n") == [f"f: {MAX_FUNCTION_LINES + 1} lines"]
    assert oversized("def g():\n    return 1\n") == []
