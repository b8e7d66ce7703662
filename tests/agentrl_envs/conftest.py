"""Fixtures shared by the envs tests of several packages' folders.

The MariaDB server fixture lives here, once: a session fixture imported into a second conftest is a second fixture
(two acquisitions of the shared server, one release at each teardown), and the server outlived the first teardown.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentrl_envs.tasks.db.mariadb_server import MariaDBServer, acquire_server, release_server


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    """The process's private MariaDB server, held for the whole session so tests share one start-up."""
    server = acquire_server()
    yield server
    release_server()
    assert not server.running
