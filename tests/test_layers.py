"""Imports run one way between the layers (read from the source, function-level imports included)."""

from __future__ import annotations

import pytest

from tests.import_graph import import_graph, imports_between

_CONTROLLER_BELOW_API = ("agentrl_controller.workers", "agentrl_controller.sessions", "agentrl_controller.controller")


@pytest.mark.parametrize(
    ("sources", "forbidden"),
    [
        # the controller: api -> sessions/workers -> http -> agentrl_envs.wire, never back up
        (_CONTROLLER_BELOW_API, ("agentrl_controller.api",)),
        (("agentrl_controller.http",), ("agentrl_controller.api", *_CONTROLLER_BELOW_API)),
        # envs: the registry and the other contracts never import the client (it resolves names there)
        (("agentrl_envs.core",), ("agentrl_envs.client",)),
        (("agentrl_envs.wire",), ("agentrl_envs.client", "agentrl_controller", "agentrl_trainer")),
    ],
    ids=["controller-below-api", "controller-http", "envs-core", "envs-wire"],
)
def test_no_layer_imports_from_above(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    graph = import_graph()
    assert all(any(m == s or m.startswith(s + ".") for m in graph) for s in sources), "a layer has no modules"
    assert imports_between(sources, forbidden) == []


def test_a_layer_violation_is_found() -> None:
    # the controller's api does import the controller and the http layer: the check turned around must see it
    assert imports_between(("agentrl_controller.api",), ("agentrl_controller.controller",)) == [
        "agentrl_controller.api.app -> agentrl_controller.controller"
    ]
