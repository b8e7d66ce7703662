import re

import gymnasium as gym
import pytest

import agentrl_envs
import agentrl_envs.data
from agentrl_envs.core import TASKS, UnknownTaskError, resolve_task


def test_short_names_are_the_contract() -> None:
    assert sorted(TASKS) == ["alfworld", "db", "kg", "os", "webshop"]
    assert {spec.env_id for spec in TASKS.values()} == {
        "AgentBench/ALFWorld-v0",
        "AgentBench/DB-v0",
        "AgentBench/KG-v0",
        "AgentBench/OS-v0",
        "AgentBench/WebShop-v0",
    }


def test_import_registers_every_implemented_task() -> None:
    for spec in TASKS.values():
        assert (spec.env_id in gym.registry) == (spec.entry_point is not None)


@pytest.mark.parametrize(
    ("name", "short", "split"),
    [
        ("db", "db", None),
        ("AgentBench/DB-v0", "db", None),
        ("dbbench-std", "db", "test"),
        ("dbbench-env_train", "db", "train"),
        ("kg-dev", "kg", "dev"),
        ("os-std", "os", "test"),
    ],
)
def test_resolve_task(name: str, short: str, split: str | None) -> None:
    spec, got_split = resolve_task(name)
    assert (spec.short_name, got_split) == (short, split)


def test_unknown_task_suggests_the_closest_name() -> None:
    with pytest.raises(UnknownTaskError, match=re.escape("Unknown task 'dbbench-stdd'. Did you mean 'dbbench-std'?")):
        resolve_task("dbbench-stdd")


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("module", [agentrl_envs, agentrl_envs.core, agentrl_envs.data])
def test_public_api_is_sorted_and_exported(module: object) -> None:
    assert module.__all__ == sorted(set(module.__all__), key=_isort_key)
    for name in module.__all__:
        assert hasattr(module, name), name
