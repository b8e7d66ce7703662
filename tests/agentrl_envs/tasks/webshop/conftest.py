from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentrl_envs.tasks.webshop import Catalogue, WebShopEnv, load_catalogue


@pytest.fixture(scope="session")
def catalogue(data_root: Path) -> Catalogue:
    """The generated catalogue the env uses on this data root (no upstream files here)."""
    return load_catalogue(data_root)


@pytest.fixture(scope="session")
def env(catalogue: Catalogue) -> WebShopEnv:
    return WebShopEnv(split="test")


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def search(keywords: str) -> dict[str, Any]:
    return call("search_action", keywords=keywords)


def click(value: str) -> dict[str, Any]:
    return call("click_action", value=value)
