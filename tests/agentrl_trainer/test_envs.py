from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agentrl_trainer import AgentRLConfig
from agentrl_trainer.cli import load_config
from agentrl_trainer.envs import make_env_factory, num_samples

QUICKSTART = Path(__file__).parents[2] / "examples" / "configs" / "quickstart.yaml"


def _db_train_file(tmp_path: Path, lines: int) -> Path:
    data_root = Path(os.environ["AGENTRL_DATA_ROOT"])  # set by tests/conftest.py
    rows = (data_root / "data/dbbench/dev.jsonl").read_text().splitlines()[:lines]
    train = tmp_path / "db_train.jsonl"
    train.write_text("\n".join(rows) + "\n")
    return train


def test_the_db_train_split_reads_the_train_file_named_in_env_kwargs(tmp_path: Path) -> None:
    train = _db_train_file(tmp_path, 3)
    _, config = load_config(
        QUICKSTART, ["tasks=[db]", "task_split=train", f"env_kwargs={{db: {{train_file: {train}}}}}"]
    )
    assert config.env_kwargs == {"db": {"train_file": str(train)}}
    factory = make_env_factory(env_kwargs=config.env_kwargs)
    assert num_samples(factory, "db", "train") == 3
    # Without the option, the DB train split cannot open: the option is what made it work.
    with pytest.raises(Exception, match="train_file"):
        make_env_factory()("db", "train")


def test_env_kwargs_from_a_json_flag_are_parsed_like_trls_dict_fields(tmp_path: Path) -> None:
    options = {"db": {"train_file": "db_train.jsonl"}}
    config = AgentRLConfig(output_dir=str(tmp_path), tasks=["db", "kg"], env_kwargs=json.dumps(options))
    assert config.env_kwargs == options


def test_env_kwargs_reach_custom_factories_only_for_their_task() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def factory(split: str, **options: Any) -> str:
        calls.append((split, options))
        return "env"

    make = make_env_factory({"a": factory, "b": factory}, {"a": {"level": 3}})
    make("a", "dev")
    make("b", "dev")
    assert calls == [("dev", {"level": 3}), ("dev", {})]


@pytest.mark.parametrize(
    ("env_kwargs", "message"),
    [
        ({"dbb": {"x": 1}}, "neither in tasks ['db'] nor AgentBench tasks"),
        ({"db": "train.jsonl"}, "must map a task"),
        ({"db": {"split": "dev"}}, "task_split"),
    ],
)
def test_bad_env_kwargs_are_refused_with_the_fix(tmp_path: Path, env_kwargs: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        AgentRLConfig(output_dir=str(tmp_path), tasks=["db"], env_kwargs=env_kwargs)


def test_the_quickstart_trains_alfworld_on_pooled_engines_and_a_subset_override_still_parses() -> None:
    _, config = load_config(QUICKSTART, [])
    assert "alfworld" in config.tasks and config.env_kwargs["alfworld"] == {"engine_pool_size": 2}
    # Options for a registered task the run leaves out are not an error (make train TRAIN_ARGS="tasks=[db]").
    _, config = load_config(QUICKSTART, ["tasks=[db]"])
    assert config.tasks == ["db"] and "alfworld" in config.env_kwargs
