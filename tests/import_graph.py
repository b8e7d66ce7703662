"""The import graph of the three packages' modules, for the tests that keep it acyclic and layered.

The graph is read with ``ast`` (nothing is imported): an edge for every ``import``/``from ... import`` of one of
the packages' modules, at module level or inside a function (a lazy import still ties the two modules
together), except those under ``if TYPE_CHECKING:``. A parent package that Python imports first is not an edge.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGES = Path(__file__).resolve().parents[1] / "packages"
SOURCE_ROOTS = sorted(PACKAGES.glob("*/src"))

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Cycles tolerated for now (none: a new one is a regression)."""


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for root in SOURCE_ROOTS:
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node)
        for statement in node.body
        for child in ast.walk(statement)
    }
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:  # ``from package import module``
                    targets.add(f"{source}.{alias.name}")
                elif source in modules:
                    targets.add(source)
    return targets


@cache
def import_graph() -> dict[str, set[str]]:
    """``module -> the package modules it imports``, over the three packages."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        # Tarjan's algorithm, iterative: (node, iterator over its successors)
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(frozenset(component))
    return found


def imports_between(sources: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
    """``module -> target`` for each import from a module under one of ``sources`` into one under ``targets``."""

    def under(module: str, prefixes: tuple[str, ...]) -> bool:
        return any(module == p or module.startswith(p + ".") for p in prefixes)

    return sorted(
        f"{module} -> {target}"
        for module, imported in import_graph().items()
        if under(module, sources)
        for target in imported
        if under(target, targets)
    )
