"""Sandbox options: what ``gym.make("AgentBench/OS-v0", ...)`` and the controller accept parses into one typed
object with one set of defaults, and a bad option fails with an error that names it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentrl_envs.core.errors import EnvError
from agentrl_envs.sandboxes.base import Limits
from agentrl_envs.sandboxes.options import SandboxOptions, split_task_options
from agentrl_envs.sandboxes.pool import PoolSettings

SMALL = {"memory_mb": 256, "pids": 128, "cpus": 1.0, "command_timeout_s": 5.0, "disk_mb": 128}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, SandboxOptions(backend="bwrap", limits=Limits(), pool=PoolSettings(warm=2, maximum=64))),
        ({"backend": "docker"}, SandboxOptions(backend="docker")),
        ({"limits": Limits(**SMALL)}, SandboxOptions(limits=Limits(**SMALL))),
        ({"limits": SMALL}, SandboxOptions(limits=Limits(**SMALL))),
        ({"backend_options": {"pool_size": 0}}, SandboxOptions(pool=None)),
        ({"backend_options": {"pool_size": 5}}, SandboxOptions(pool=PoolSettings(warm=5))),
        ({"backend_options": {"pool_size": 100}}, SandboxOptions(pool=PoolSettings(warm=100, maximum=100))),
        (
            {"pool": {"warm": 1, "maximum": 8, "images": ["default"]}},
            SandboxOptions(pool=PoolSettings(warm=1, maximum=8, images=["default"])),
        ),
        ({"pool": PoolSettings(exec_check=True)}, SandboxOptions(pool=PoolSettings(exec_check=True))),
    ],
)
def test_parse_accepts_what_the_env_and_the_controller_take(kwargs: dict[str, Any], expected: SandboxOptions) -> None:
    assert SandboxOptions.parse(**kwargs) == expected


def test_the_env_default_and_the_controller_default_are_one() -> None:
    assert SandboxOptions.parse().pool == SandboxOptions.parse(pool={}).pool == PoolSettings()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "lxc"}, "Invalid sandbox options: backend: Input should be 'bwrap' or 'docker' (got 'lxc')"),
        ({"limits": {"memory_mb": 1}}, "Invalid sandbox options: limits: Value error, Sandbox limits out of range"),
        ({"limits": {"memory": 512}}, "Invalid sandbox options: limits.memory: Unexpected keyword argument"),
        ({"backend_options": {"size": 2}}, "Unknown sandbox backend option(s) ['size']; backend_options takes only"),
        ({"backend_options": {"pool_size": -1}}, "backend_options.pool_size must be 0 (no pool) or more, not -1."),
        ({"backend_options": {"pool_size": "2"}}, "backend_options.pool_size must be 0 (no pool) or more, not '2'."),
        ({"pool": {"warm": 5, "maximum": 2}}, "sandbox_pool.warm (5) exceeds sandbox_pool.maximum (2)"),
        ({"pool": {"size": 3}}, "Invalid sandbox options: pool.size: Extra inputs are not permitted"),
        ({"backend_options": {"pool_size": 1}, "pool": {}}, "The sandbox pool is given twice"),
    ],
)
def test_bad_options_say_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EnvError, match=re.escape(message)):
        SandboxOptions.parse(**kwargs)


def test_split_task_options_keeps_the_envs_own_options() -> None:
    options = {"backend": "docker", "limits": SMALL, "max_rounds": 3, "mode": "fc"}
    sandbox, rest = split_task_options(options, pool={"warm": 1})
    assert rest == {"max_rounds": 3, "mode": "fc"}
    assert sandbox == SandboxOptions(backend="docker", limits=Limits(**SMALL), pool=PoolSettings(warm=1))
    with pytest.raises(EnvError, match=re.escape("options.backend must be a backend name (bwrap, docker), not 3.")):
        split_task_options({"backend": 3})


def test_image_set_names_an_importable_image_set() -> None:
    from agentrl_envs.tasks.os.images import OS_IMAGES

    assert SandboxOptions().image_set() is OS_IMAGES
    with pytest.raises(EnvError, match=re.escape("Sandbox image set 'nowhere:X' cannot be imported")):
        SandboxOptions(images="nowhere:X").image_set()
    with pytest.raises(EnvError, match=re.escape("is a tuple, not an ImageSet")):
        SandboxOptions(images="agentrl_envs.tasks.os.images:IMAGES").image_set()
