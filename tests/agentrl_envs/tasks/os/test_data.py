from __future__ import annotations

from pathlib import Path

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import EnvError
from agentrl_envs.tasks.os.data import Script, load_samples


@pytest.mark.parametrize(("split", "count"), [("test", 144), ("dev", 26), ("train", 1000)])
def test_split_sizes(data_root: Path, split: str, count: int) -> None:
    assert len(load_samples(DataRoot(data_root), split)) == count


def test_samples_read_as_upstream(data_root: Path) -> None:
    samples = load_samples(DataRoot(data_root), "test")
    first = samples[0]  # data/1/stock.json: init from a file, check chain [example, integer-match.py]
    assert first.image == "default" and first.init and first.init[0].language == "bash"
    assert first.check is not None and first.check[0] is None and first.check[1].language == "python"
    assert first.example == Script("bash", 'grep "Alice | Sell" /usr/stock.log | wc -l')
    assert sum(s.image == "packages" for s in samples) == 1
    assert sum(s.match is not None for s in samples) == 9
    assert all(s.match is None or s.match["strip"] for s in samples)


def test_unknown_split(data_root: Path) -> None:
    with pytest.raises(EnvError, match="Unknown split"):
        load_samples(DataRoot(data_root), "valid")


def test_script_argv_as_upstream() -> None:
    assert Script("bash", "echo $1").argv("x") == ["bash", "-c", "echo $1", "--", "x"]
    assert Script("bash", "true").argv() == ["bash", "-c", "true"]
    assert Script("python", "print(1)").argv("a", "b") == ["python3", "-c", "print(1)", "a", "b"]
