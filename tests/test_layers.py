"""Imports run one way between the layers (read from the source, function-level imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "packages"
CONTROLLER = SRC / "agentrl-controller" / "src" / "agentrl_controller"
ENVS = SRC / "agentrl-envs" / "src" / "agentrl_envs"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _offenders(files: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path in files:
        bad = sorted(n for n in _imports(path) if any(n == f or n.startswith(f + ".") for f in forbidden))
        if bad:
            found[str(path.relative_to(SRC))] = bad
    return found


@pytest.mark.parametrize(
    ("files", "forbidden"),
    [
        # the controller: api -> sessions/workers -> http -> agentrl_envs.wire, never back up
        (
            [*CONTROLLER.glob("workers/*.py"), *CONTROLLER.glob("sessions/*.py"), CONTROLLER / "controller.py"],
            ("agentrl_controller.api",),
        ),
        (
            list(CONTROLLER.glob("http/*.py")),
            tuple(f"agentrl_controller.{m}" for m in ("api", "sessions", "workers", "controller")),
        ),
        # envs: the registry and the other contracts never import the client (it resolves names there)
        (list(ENVS.glob("core/*.py")), ("agentrl_envs.client",)),
        ([ENVS / "wire.py"], ("agentrl_envs.client", "agentrl_controller", "agentrl_trainer")),
    ],
    ids=["controller-below-api", "controller-http", "envs-core", "envs-wire"],
)
def test_no_layer_imports_from_above(files: list[Path], forbidden: tuple[str, ...]) -> None:
    assert files
    assert _offenders(files, forbidden) == {}
