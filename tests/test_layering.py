"""The layering, pinned: imports point down, only the top names the facade, stores know no feature.

Every import counts: module level, inside functions, and under ``TYPE_CHECKING``, since each is a
dependency a reader has to follow. A submodule's implicit import of its package is not counted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "engram"

#: The facade and what sits above it: they may import ``engram.memory`` and name ``Memory``. (The
#: package ``engram`` itself re-exports it lazily; it is matched exactly, not as a prefix.)
TOP = ("engram.memory", "engram.mem0", "engram.aio", "engram.default_memory", "engram.service", "engram.client",
       "engram.mcp", "engram.cli", "engram.documents_cli", "engram.tune_cli", "engram.integrations", "engram.demo",
       "engram.eval", "engram.testing")

#: Modules below the top that still import the facade, owned elsewhere, until moved.
KNOWN_FACADE_IMPORTERS: set[str] = set()

#: Features over a context: storage must not depend on any of them.
FEATURES = ("engram.recall", "engram.documents", "engram.keyword_search", "engram.feedback", "engram.ontology",
            "engram.salience", "engram.tune", "engram.retrieve")

#: Cycles known and owned elsewhere, each broken here by one edge (importer, imported) until removed.
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()


def _name_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_name_of(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@cache
def _tree(module: str) -> ast.Module:
    path = _modules()[module]
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _resolve(name: str) -> str | None:
    """The engram module ``name`` refers to: itself, or the nearest package or module holding it."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str) -> Iterator[str]:
    """Every engram module ``module`` imports, wherever the import statement stands."""
    is_package = _modules()[module].name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # ``from engram import recall`` imports a module; ``from engram.model import Link`` a name.
            names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in _modules() else source
                     for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name) if name == "engram" or name.startswith("engram.") else None
            if target is not None and target != module:
                yield target


@cache
def _graph() -> dict[str, frozenset[str]]:
    return {module: frozenset(_imported(module)) for module in _modules()}


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_import_graph_is_read_from_every_kind_of_import() -> None:
    # The checks below are only as good as the graph: these edges exist as a lazy import, a
    # TYPE_CHECKING import, a relative import and a plain one.
    graph = _graph()
    assert "engram.retrieve.render" in graph["engram.retrieve.types"]  # inside a function
    assert "engram.context" in graph["engram.recall"]  # TYPE_CHECKING
    assert "engram.memory" in graph["engram"]  # TYPE_CHECKING, in a package __init__
    assert "engram.validate" in graph["engram.ingest.normalize"]
    assert len(graph) > 50


def test_no_import_cycles() -> None:
    graph = {module: frozenset(t for t in targets if (module, t) not in KNOWN_CYCLE_EDGES)
             for module, targets in _graph().items()}
    assert _cycles(graph) == []


def test_known_exceptions_still_hold() -> None:
    # An exception that no longer applies is stale: remove it here so it cannot hide a new offence.
    graph = _graph()
    assert [edge for edge in sorted(KNOWN_CYCLE_EDGES) if edge[1] not in graph.get(edge[0], ())] == []
    assert [m for m in sorted(KNOWN_FACADE_IMPORTERS) if "engram.memory" not in graph.get(m, ())] == []


def _names_memory(module: str) -> list[str]:
    found = []
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Name) and node.id == "Memory":
            found.append(f"line {node.lineno}: Memory")
        elif isinstance(node, ast.alias) and node.name == "Memory":
            found.append(f"line {node.lineno}: import Memory")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() == "Memory":
            found.append(f"line {node.lineno}: 'Memory' annotation")
    return found


def test_only_the_top_layer_knows_the_facade() -> None:
    offenders = {}
    for module, targets in _graph().items():
        if module == "engram" or _under(module, TOP) or module in KNOWN_FACADE_IMPORTERS:
            continue
        problems = _names_memory(module) + (["imports engram.memory"] if "engram.memory" in targets else [])
        if problems:
            offenders[module] = problems
    assert offenders == {}


def test_stores_import_no_feature() -> None:
    offenders = {
        module: sorted(t for t in targets if _under(t, FEATURES))
        for module, targets in _graph().items()
        if _under(module, ("engram.stores",))
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_the_bottom_layer_imports_only_itself() -> None:
    # errors, model, validate and config are what every other module stands on; pools (what each
    # process makes for itself: the ids' lock is one) stands on the standard library alone.
    bottom = ("engram.errors", "engram.model", "engram.validate", "engram.config", "engram.pools")
    graph = _graph()
    assert {m: sorted(t for t in graph[m] if t not in bottom) for m in bottom} == {m: [] for m in bottom}


#: The team guide's "under ~400 lines", with the slack its "~" gives: past this a module does two things.
MAX_MODULE_LINES = 450


def test_modules_stay_small() -> None:
    sizes = {module: len(path.read_text(encoding="utf-8").splitlines()) for module, path in _modules().items()}
    assert {module: n for module, n in sizes.items() if n > MAX_MODULE_LINES} == {}
