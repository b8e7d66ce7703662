"""The envs show an agent the same texts from a built data root as from the hand-made reference: the oracle's
transcript (every message's role and content, the rewards and statuses) on every dev and test sample of the five
tasks is identical with either root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentrl_envs  # noqa: F401 - registers the env ids
from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import AgentRLError
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.core.registry import TASKS

from .replay_sandbox import ReplayBackend

Transcript = list[tuple[Any, ...]]

CASES = [
    pytest.param(task, split, marks=[pytest.mark.slow] if task == "alfworld" else [])
    for task in ("db", "kg", "webshop", "os", "alfworld")
    for split in ("test", "dev")
]
"""ALFWorld plays its games in TextWorld (minutes per root on a loaded machine), so it is ``slow``."""
OPTIONS: dict[str, dict[str, Any]] = {"alfworld": {"engine": "process"}, "os": {"backend": ReplayBackend()}}
"""The OS env runs on :class:`ReplayBackend`: a real shell's output varies between runs whatever the data root."""


def play(task: str, split: str, root: Path) -> list[Transcript]:
    """The oracle's transcript of every sample of a split, read from ``root``."""
    if task == "alfworld":
        from agentrl_envs.tasks.alfworld.games import prepare_games, split_entries

        data = DataRoot(root)
        prepare_games(data, split_entries(data, split), workers=2)  # cached by content: shared by both roots
    env = gym.make(TASKS[task].env_id, split=split, data_root=str(root), **OPTIONS.get(task, {})).unwrapped
    oracle = load_oracle(task, split=split, data_root=str(root))
    transcripts = []
    try:
        for index in range(env.num_samples()):
            try:
                observation, _ = env.reset(options={"index": index})
            except AgentRLError as e:  # a sample upstream cannot start either (e.g. a DB column named '')
                transcripts.append([("reset refused", str(e))])
                continue
            oracle.begin(index)
            transcript: Transcript = [(m["role"], m.get("content")) for m in observation]
            terminated = truncated = False
            while not (terminated or truncated):
                action = oracle.act(observation)
                observation, reward, terminated, truncated, info = env.step(action)
                transcript += [(m["role"], m.get("content")) for m in observation]
                transcript.append((reward, info["status"]))
            transcripts.append(transcript)
    finally:
        env.close()
    return transcripts


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("task", "split"), CASES)
def test_oracle_transcripts_are_identical_with_either_root(
    task: str, split: str, built_root: Path, reference_root: Path
) -> None:
    built = play(task, split, built_root)
    reference = play(task, split, reference_root)
    assert len(built) == len(reference) > 0
    differing = [index for index, (a, b) in enumerate(zip(built, reference, strict=True)) if a != b]
    assert differing == [], f"{task}/{split}: samples {differing[:10]} differ"
