from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import toy_task
from .openai_server import FakeOpenAIServer


@pytest.fixture
def toy() -> Iterator[str]:
    """The test-only ``toy`` task, registered for the duration of a test."""
    toy_task.register()
    yield "toy"
    toy_task.unregister()


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    yield server
    server.stop()
