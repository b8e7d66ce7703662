from pathlib import Path

import pytest

from agentrl_envs.core import DataError, DataRoot, resolve_data_root


def test_argument_wins_over_environment(data_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTRL_DATA_ROOT", str(tmp_path))
    assert resolve_data_root(data_root) == data_root.resolve()


def test_environment_variable_is_used(data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRL_DATA_ROOT", str(data_root))
    assert resolve_data_root() == data_root.resolve()


def test_missing_root_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"`agentrl-envs data fetch`.*data_root=\.\.\. / --data-root"):
        resolve_data_root(tmp_path / "nowhere")


def test_prompts_and_configs_are_read(data_root: Path) -> None:
    data = DataRoot.find(data_root)
    assert data.prompts("dbbench")["sql_timeout_seconds"] == 60
    assert data.task_config("dbbench")["default"]["parameters"]["max_round"] == 15
    tools = data.task_config("dbbench")["default"]["parameters"]["tools"]
    assert [t["function"]["name"] for t in tools] == ["execute_sql", "commit_final_answer"]
    assert len(data.jsonl("data/dbbench/standard.jsonl")) == 300


def test_missing_file_names_the_root(data_root: Path) -> None:
    with pytest.raises(DataError, match="data/nope.json is missing from the data root"):
        DataRoot.find(data_root).json("data/nope.json")
