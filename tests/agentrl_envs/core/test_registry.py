import re

import gymnasium as gym
import pytest

import agentrl_envs
import agentrl_envs.data
from agentrl_envs.core import TASKS, UnknownTaskError, resolve_task
from agentrl_envs.core.registry import TASK_GROUPS, expand_tasks


def test_short_names_are_the_contract() -> None:
    bfcl = ["bfcl_base", "bfcl_long_context", "bfcl_miss_func", "bfcl_miss_param"]
    assert sorted(TASKS) == ["alfworld", *bfcl, "db", "kg", "os", "webshop"]
    assert {spec.env_id for spec in TASKS.values()} == {
        "AgentBench/ALFWorld-v0",
        "AgentBench/BFCL-Base-v0",
        "AgentBench/BFCL-LongContext-v0",
        "AgentBench/BFCL-MissFunc-v0",
        "AgentBench/BFCL-MissParam-v0",
        "AgentBench/DB-v0",
        "AgentBench/KG-v0",
        "AgentBench/OS-v0",
        "AgentBench/WebShop-v0",
    }
    assert TASK_GROUPS["bfcl"] == ("bfcl_base", "bfcl_miss_func", "bfcl_miss_param", "bfcl_long_context")
    assert expand_tasks("db, bfcl") == ["db", *TASK_GROUPS["bfcl"]]


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
        ("bfcl_multi_turn_base-std", "bfcl_base", "test"),
        ("AgentBench/BFCL-MissFunc-v0", "bfcl_miss_func", None),
    ],
)
def test_resolve_task(name: str, short: str, split: str | None) -> None:
    spec, got_split = resolve_task(name)
    assert (spec.short_name, got_split) == (short, split)


def test_unknown_task_suggests_the_closest_name() -> None:
    with pytest.raises(UnknownTaskError, match=re.escape("Unknown task 'dbbench-stdd'. Did you mean 'dbbench-std'?")):
        resolve_task("dbbench-stdd")


def test_unknown_task_hint_ignores_case() -> None:
    with pytest.raises(UnknownTaskError, match=re.escape("Unknown task 'Db'. Did you mean 'db'?")):
        resolve_task("Db")


@pytest.mark.parametrize(
    ("env_id", "error", "meant"),
    [
        ("AgentBench/DB-v1", gym.error.VersionNotFound, "AgentBench/DB-v0"),  # Gymnasium: a list of versions
        ("AgentBench/Db-v0", gym.error.NameNotFound, "AgentBench/DB-v0"),  # Gymnasium: no hint
        ("AgentBench/DBB-v0", gym.error.NameNotFound, "AgentBench/DB-v0"),  # Gymnasium: the name only
        ("AgentBench/Webshop-v0", gym.error.NameNotFound, "AgentBench/WebShop-v0"),
        ("AgentBench/dbbench-v0", gym.error.NameNotFound, "AgentBench/DB-v0"),
        ("AgentBench/alfwrld-v0", gym.error.NameNotFound, "AgentBench/ALFWorld-v0"),
        ("Agentbench/KG-v0", gym.error.NamespaceNotFound, "AgentBench/KG-v0"),
        ("DB-v0", gym.error.NameNotFound, "AgentBench/DB-v0"),  # the namespace forgotten
        ("os", gym.error.NameNotFound, "AgentBench/OS-v0"),
        ("dbbench-std", gym.error.NameNotFound, "AgentBench/DB-v0"),
    ],
)
def test_gym_make_of_a_misspelled_id_says_which_was_meant(env_id: str, error: type[Exception], meant: str) -> None:
    with pytest.raises(error, match=re.escape(f"Environment `{env_id}` doesn't exist. Did you mean: `{meant}`?")):
        gym.make(env_id)
    with pytest.raises(error, match=re.escape(f"Did you mean: `{meant}`?")):
        gym.spec(env_id)


def test_gym_make_of_an_unknown_agentbench_id_lists_the_ids() -> None:
    with pytest.raises(gym.error.NameNotFound, match=re.escape("The AgentBench ids are `AgentBench/ALFWorld-v0`")):
        gym.make("AgentBench/Chess-v0")


def test_other_ids_keep_gymnasiums_errors() -> None:
    with pytest.raises(gym.error.NameNotFound, match=re.escape("Environment `CartPol` doesn't exist. Did you mean")):
        gym.make("CartPol-v1")
    with pytest.raises(gym.error.NameNotFound, match=re.escape("Environment `Chess` doesn't exist.")):
        gym.make("Chess-v0")


def _isort_key(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("module", [agentrl_envs, agentrl_envs.core, agentrl_envs.data])
def test_public_api_is_sorted_and_exported(module: object) -> None:
    assert module.__all__ == sorted(set(module.__all__), key=_isort_key)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_bfcl_has_only_a_test_split() -> None:
    with pytest.raises(UnknownTaskError, match=re.escape("Did you mean 'bfcl_multi_turn_base-std'?")):
        resolve_task("bfcl_multi_turn_base-dev")
