"""Fixtures of the synthesis tests: the data root as a :class:`DataRoot`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrl_envs.core.data import DataRoot


@pytest.fixture(scope="session")
def data(data_root: Path) -> DataRoot:
    """The AgentBench data root the tests read."""
    return DataRoot(data_root)
