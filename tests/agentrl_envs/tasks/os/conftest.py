"""The OS task's tests use the sandbox backends' fixtures."""

from tests.agentrl_envs.sandboxes.conftest import (  # noqa: F401
    backend,
    bwrap_backend,
    bwrap_pool_backend,
    docker_backend,
    docker_engine,
    docker_pool_backend,
)
