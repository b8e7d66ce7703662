from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agentrl_envs.core.toy_env import TOOLS
from tests.agentrl_trainer.envs import CORPUS


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    from agentrl_trainer.tiny import build_tiny_model

    return build_tiny_model([*CORPUS, json.dumps(TOOLS)])


@pytest.fixture(scope="session")
def tokenizer(tiny_model_path: Path) -> Any:
    from agentrl_trainer.tiny import load_tokenizer

    return load_tokenizer(tiny_model_path)


@pytest.fixture(scope="session")
def model(tiny_model_path: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_path)
