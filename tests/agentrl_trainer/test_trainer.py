from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from agentrl_trainer import AgentRLConfig, AgentRLTrainer
from agentrl_trainer.types import Group, TrainingRow, Trajectory
from tests.agentrl_trainer.envs import FlakyEnv, LengthEnv

FACTORIES = {"length": lambda split: LengthEnv(split=split), "flaky": lambda split: FlakyEnv(split=split)}


def _config(tmp_path: Path, **overrides: Any) -> AgentRLConfig:
    values: dict[str, Any] = {
        "output_dir": str(tmp_path / "run"),
        "tasks": ["length"],
        "num_generations": 4,
        "max_steps": 4,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "disable_tqdm": True,
        "learning_rate": 5e-3,
        "max_turns": 2,
        "max_new_tokens_per_turn": 8,
        "max_total_tokens": 1024,
        "min_groups_per_step": 1,
        "max_groups_per_step": 2,
        "queue_size": 3,
        "max_staleness": 2,
        "seed": 0,
    }
    values.update(overrides)
    return AgentRLConfig(**values)


def _trainer(path: Path, tokenizer: Any, config: AgentRLConfig) -> AgentRLTrainer:
    return AgentRLTrainer(str(path), config, processing_class=tokenizer, env_factories=FACTORIES)


@pytest.mark.slow
def test_a_20_step_async_run_learns_something_and_ends_cleanly(
    tmp_path: Path, tiny_model_path: Path, tokenizer: Any
) -> None:
    config = _config(tmp_path, max_steps=20, lagged_fraction=0.3, lagged_refresh_steps=3)
    trainer = _trainer(tiny_model_path, tokenizer, config)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    threads_before = set(threading.enumerate())
    trainer.train()
    assert trainer.state.global_step == 20
    assert any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    producer = trainer.producer
    assert producer is not None and producer.leaked_tasks == 0
    assert set(threading.enumerate()) <= threads_before, "threads left running after train()"
    # The trainer told the producer where the run ends: no group started that the last step could not take.
    assert producer.groups_left == 0
    assert producer.started_groups - producer.stats.dropped_groups <= producer.taken_groups + config.max_groups_per_step
    logs = [e for e in trainer.state.log_history if "env/length/reward" in e]
    assert len(logs) == 20
    assert all(e["rollout/staleness_max"] <= config.max_staleness for e in logs)
    assert all(1 <= e["rollout/groups_per_step"] <= 2 for e in logs)
    assert 0 < sum(e["rollout/lagged_turn_fraction"] for e in logs) / len(logs) < 0.6
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["steps"] == 20 and "length" in summary["tasks"]
    assert (tmp_path / "run" / "reward.png").stat().st_size > 0
    assert (tmp_path / "run" / "throughput.png").stat().st_size > 0


def test_stale_groups_are_dropped_or_downweighted(tmp_path: Path, tiny_model_path: Path, tokenizer: Any) -> None:
    trainer = _trainer(tiny_model_path, tokenizer, _config(tmp_path, max_staleness=1))

    def group(version: int) -> Group:
        row = TrainingRow("length", "train", 0)
        trajectory = Trajectory(row=row, prompt_ids=[1])
        from agentrl_trainer.types import TokenSegment

        trajectory.segments.append(TokenSegment((2,), True, (0.0,), version=version, engine="policy"))
        return Group(row, [trajectory], created_version=version)

    kept = trainer._filter_stale([group(5), group(4), group(3), group(1)], version=5)
    assert [g.min_version for g in kept] == [5, 4]
    assert trainer.stale_dropped == 2

    trainer.args.stale_policy = "downweight"
    kept = trainer._filter_stale([group(5), group(2)], version=5)
    assert [g.weight for g in kept] == [1.0, 0.25]  # staleness 3 is 2 over the limit: 0.5 ** 2


def test_sync_mode_and_an_env_that_crashes_are_retried_and_counted(
    tmp_path: Path, tiny_model_path: Path, tokenizer: Any
) -> None:
    FlakyEnv.crashed, FlakyEnv.crashes = 0, 2
    config = _config(tmp_path, tasks=["flaky"], rollout_mode="sync", max_steps=2, max_groups_per_step=1)
    trainer = _trainer(tiny_model_path, tokenizer, config)
    trainer.train()
    assert trainer.producer is not None
    assert trainer.producer.stats.infra_errors == 2 and trainer.producer.stats.infra_retries == 2
    assert trainer.producer.status_counts["task error"] == 0  # crashed episodes never reach the batch
    assert all(e.get("rollout/staleness_max", 0) == 0 for e in trainer.state.log_history)


def test_drop_group_policy_drops_the_group_of_a_crashed_episode(
    tmp_path: Path, tiny_model_path: Path, tokenizer: Any
) -> None:
    FlakyEnv.crashed, FlakyEnv.crashes = 0, 1
    config = _config(tmp_path, tasks=["flaky"], max_steps=1, infra_error_policy="drop_group", max_groups_per_step=1)
    trainer = _trainer(tiny_model_path, tokenizer, config)
    trainer.train()
    assert trainer.producer is not None and trainer.producer.stats.dropped_groups == 1


@pytest.mark.slow
def test_checkpoint_save_and_resume_mid_run(tmp_path: Path, tiny_model_path: Path, tokenizer: Any) -> None:
    config = _config(tmp_path, max_steps=4, save_strategy="steps", save_steps=2)
    _trainer(tiny_model_path, tokenizer, config).train()
    checkpoint = tmp_path / "run" / "checkpoint-2"
    assert (checkpoint / "trainer_state.json").is_file()

    resumed = _trainer(tiny_model_path, tokenizer, _config(tmp_path, max_steps=4, output_dir=str(tmp_path / "r2")))
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert resumed.state.global_step == 4
    # The log history holds the checkpoint's steps 1-2 (restored) and the two steps trained after resuming.
    steps = [e["step"] for e in resumed.state.log_history if "env/length/reward" in e]
    assert steps == [1, 2, 3, 4]
    # The rollout engine started from the checkpoint's weights and version, not from scratch.
    assert resumed.sampler is not None and resumed.sampler.policy.version == 4


def test_config_errors_name_the_field_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="queue_size \\(1\\) must be >= max_groups_per_step \\(2\\)"):
        _config(tmp_path, queue_size=1)
    with pytest.raises(ValueError, match="rollout_mode='later' is not supported"):
        _config(tmp_path, rollout_mode="later")
    with pytest.raises(ValueError, match="gradient_accumulation_steps=1"):
        _config(tmp_path, gradient_accumulation_steps=2)


def test_lagged_engine_turns_do_not_count_as_staleness() -> None:
    from agentrl_trainer.types import TokenSegment

    row = TrainingRow("length", "train", 0)
    trajectory = Trajectory(row=row, prompt_ids=[1])
    trajectory.segments.append(TokenSegment((2,), True, (0.0,), version=9, engine="policy"))
    trajectory.segments.append(TokenSegment((3,), True, (0.0,), version=4, engine="lagged0", lagged=True))
    group = Group(row, [trajectory], created_version=9)
    assert group.staleness(10) == 1
    assert trajectory.lagged_versions == [4] and trajectory.versions == [9, 4]


def test_the_progress_bar_shows_the_live_reward_per_task(tmp_path: Path, tiny_model_path: Path, tokenizer: Any) -> None:
    from agentrl_trainer.trainer import _LiveReward

    trainer = _trainer(tiny_model_path, tokenizer, _config(tmp_path))

    class Bar:
        postfix: dict[str, str] = {}

        def set_postfix(self, values: dict[str, str], refresh: bool = True) -> None:
            Bar.postfix = values

    class Progress:
        training_bar = Bar()

    trainer.callback_handler.callbacks.append(Progress())
    live = next(c for c in trainer.callback_handler.callbacks if isinstance(c, _LiveReward))
    live.on_log(trainer.args, trainer.state, None, logs={"env/db/reward": 0.25, "env/kg/reward": -0.2, "loss": 1.0})
    assert Bar.postfix == {"db": "0.25", "kg": "-0.20"}


def test_a_group_that_raises_is_logged_with_its_task_and_index(
    tmp_path: Path, tiny_model_path: Path, tokenizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    calls = []

    def broken(split: str) -> Any:  # the first env (the trainer counts samples with it) works, the next ones fail
        calls.append(split)
        if len(calls) > 1:
            raise ValueError("no such database")
        return LengthEnv(split=split)

    config = _config(tmp_path, tasks=["length"], max_steps=1, max_groups_per_step=1)
    trainer = AgentRLTrainer(str(tiny_model_path), config, processing_class=tokenizer, env_factories={"length": broken})
    with caplog.at_level(logging.WARNING, logger="agentrl_trainer.rollout.producer"):
        with pytest.raises(RuntimeError, match="no such database"):
            trainer.train()
    failed = [r for r in caplog.records if r.levelno == logging.WARNING and "group failed" in r.getMessage()]
    assert failed, [r.getMessage() for r in caplog.records]
    assert "task=length index=" in failed[0].getMessage() and "no such database" in failed[0].getMessage()


def test_rows_with_zero_advantage_are_left_out_of_the_forward_pass_without_changing_the_gradient(
    tmp_path: Path, tiny_model_path: Path, tokenizer: Any
) -> None:
    from agentrl_trainer.batch import BatchOptions, build_inputs, without_zero_advantage_rows
    from agentrl_trainer.types import TokenSegment

    trainer = _trainer(tiny_model_path, tokenizer, _config(tmp_path))
    assert trainer._zero_rows_are_inert()  # dapo, no KL term, no entropy bonus: TRL's defaults
    generator = torch.Generator().manual_seed(0)

    def group(index: int, rewards: list[float], prompt_length: int, action_length: int) -> Group:
        row = TrainingRow("length", "train", index)
        prompt = torch.randint(5, 200, (prompt_length,), generator=generator).tolist()
        trajectories = []
        for k, reward in enumerate(rewards):
            trajectory = Trajectory(row=row, prompt_ids=prompt, reward=reward)
            actions = torch.randint(5, 200, (action_length + k,), generator=generator).tolist()
            logps = (-torch.rand(len(actions), generator=generator)).tolist()
            trajectory.segments.append(TokenSegment(tuple(actions), True, tuple(logps), version=0, engine="policy"))
            trajectory.segments.append(TokenSegment((7, 8, 9), False, version=0))
            trajectories.append(trajectory)
        return Group(row, trajectories, created_version=0)

    # The longest prompt and the longest completion belong to groups whose episodes all scored the same.
    groups = [group(0, [1.0, 0.0, 0.0, 1.0], 12, 5), group(1, [0.0] * 4, 30, 3), group(2, [1.0] * 4, 8, 20)]
    inputs, _ = build_inputs(groups, BatchOptions(pad_token_id=tokenizer.pad_token_id))
    kept, rows = without_zero_advantage_rows(inputs)
    assert rows == 4 and kept["prompt_ids"].shape == (4, 12) and kept["completion_ids"].shape == (4, 5 + 3 + 3)
    assert torch.equal(kept["num_items_in_batch"], inputs["num_items_in_batch"])  # the loss's denominator is kept

    model = trainer.model
    assert model is not None

    def gradient(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        model.zero_grad()
        trainer._compute_loss(model, batch).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by TRL's training loop
    full, fewer = gradient(inputs), gradient(kept)
    assert full.keys() == fewer.keys() and any(g.abs().sum() > 0 for g in full.values())
    for name, value in full.items():
        assert torch.allclose(value, fewer[name], atol=1e-6, rtol=1e-4), name

    # A batch with no signal at all still makes a (zero) step: one row is left.
    silent, _ = build_inputs(groups[1:], BatchOptions(pad_token_id=tokenizer.pad_token_id))
    one, rows = without_zero_advantage_rows(silent)
    assert rows == 1 and one["prompt_ids"].shape[0] == 1
    # With a KL term a zero-advantage row still pulls towards the reference model: nothing is left out.
    trainer.beta = 0.1
    assert not trainer._zero_rows_are_inert()
