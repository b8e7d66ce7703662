"""The three packages' modules import one another without cycles, and the packages import one way."""

from __future__ import annotations

import pytest

from tests.import_graph import KNOWN_CYCLES, cycles, import_graph, imports_between


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
    wrong = imports_between((package,), forbidden)
    assert not wrong, f"{package} must not import {forbidden}: {wrong}"
