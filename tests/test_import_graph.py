"""The three packages' modules import one another without cycles, and the packages import one way.

The graph is read with ``ast`` (nothing is imported): an edge for every ``import``/``from ... import`` of one of
the packages' modules, at module level or inside a function (a lazy import still ties the two modules
together), except those under ``if TYPE_CHECKING:``. A parent package that Python imports first is not an edge.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

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


def test_the_graph_sees_the_packages_and_their_imports():
    graph = import_graph()
    assert {"agentrl_envs.core.env", "agentrl_controller.controller", "agentrl_trainer.trainer"} <= graph.keys()
    assert "agentrl_envs.core.status" in graph["agentrl_envs.core.env"]
    # a lazy import counts; one under TYPE_CHECKING does not
    assert "agentrl_envs.tasks.db.sqlite_backend" in graph["agentrl_envs.tasks.db.backend"]
    assert "agentrl_trainer.trainer" not in graph["agentrl_trainer"]


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert sorted(cycles(graph), key=sorted) == [frozenset("abc"), frozenset("d")]


def test_no_import_cycles():
    found = set(cycles(import_graph()))
    new = [sorted(cycle) for cycle in found - KNOWN_CYCLES]
    assert not new, (
        f"Import cycles among the packages' modules: {new}. Move what both sides need to a module below them."
    )
    stale = [sorted(cycle) for cycle in KNOWN_CYCLES - found]
    assert not stale, f"Cycles {stale} are gone: remove them from KNOWN_CYCLES."


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("agentrl_envs", ("agentrl_controller", "agentrl_trainer")), ("agentrl_controller", ("agentrl_trainer",))],
)
def test_packages_import_one_way(package: str, forbidden: tuple[str, ...]):
    graph = import_graph()
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == package
        for target in targets
        if target.split(".")[0] in forbidden
    )
    assert not wrong, f"{package} must not import {forbidden}: {wrong}"
