"""The OS task's tests use the sandbox backends' fixtures (every backend: plain, pooled, and through a broker)."""

from tests.agentrl_envs.sandboxes.conftest import (  # noqa: F401
    backend,
    bwrap_backend,
    bwrap_broker_backend,
    bwrap_broker_session,
    bwrap_pool_backend,
    docker_backend,
    docker_broker_backend,
    docker_broker_session,
    docker_engine,
    docker_pool_backend,
)
