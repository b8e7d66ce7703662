from __future__ import annotations

import re

import pytest
import torch

from agentrl_trainer.advantages import group_advantages, task_normalize


def test_group_advantages_center_and_scale_per_group() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0])
    centered = group_advantages(rewards, 2, scale_rewards="none")
    assert torch.allclose(centered, torch.tensor([0.5, -0.5, -0.5, 0.5, 0.0, 0.0]))
    scaled = group_advantages(rewards, 2, scale_rewards="group")
    std = torch.tensor([1.0, 0.0]).std()  # std of {1, 0} with Bessel's correction = 0.7071
    assert torch.allclose(scaled[:2], torch.tensor([0.5, -0.5]) / (std + 1e-4))
    assert torch.equal(scaled[4:], torch.zeros(2))


def test_group_advantages_reject_ragged_groups() -> None:
    with pytest.raises(ValueError, match=re.escape("5 rewards do not split into groups of 2")):
        group_advantages(torch.zeros(5), 2)


def test_task_normalization_matches_hand_computation() -> None:
    # Two tasks: "a" has action tokens with advantages 1, 1, -1 (row 0: two tokens, row 1: one token);
    # "b" has 4, 4, 4, 0 (row 2: three tokens, row 3: one). Padding/env tokens (mask 0) must stay 0.
    adv = torch.tensor(
        [[1.0, 1.0, 9.0], [-1.0, 9.0, 9.0], [4.0, 4.0, 4.0], [0.0, 9.0, 9.0]],
    )
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 0, 0]], dtype=torch.float32)
    out = task_normalize(adv, mask, ["a", "a", "b", "b"], eps=0.0)
    # task a: values [1, 1, -1], mean 1/3, sample std = sqrt(((2/3)^2*2 + (4/3)^2) / 2) = sqrt(4/3)
    mean_a, std_a = 1 / 3, (4 / 3) ** 0.5
    # task b: values [4, 4, 4, 0], mean 3, sample std = sqrt((1+1+1+9)/3) = 2
    expected = torch.tensor(
        [
            [(1 - mean_a) / std_a, (1 - mean_a) / std_a, 0.0],
            [(-1 - mean_a) / std_a, 0.0, 0.0],
            [0.5, 0.5, 0.5],
            [-1.5, 0.0, 0.0],
        ]
    )
    assert torch.allclose(out, expected, atol=1e-6)
    for task_rows in ([0, 1], [2, 3]):
        values = out[task_rows][mask[task_rows].bool()]
        assert abs(values.mean().item()) < 1e-6
        assert abs(values.std().item() - 1.0) < 1e-6


def test_task_normalization_leaves_constant_and_tiny_tasks_alone() -> None:
    adv = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.7, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    out = task_normalize(adv, mask, ["flat", "flat", "single"])
    assert torch.equal(out, adv)
    assert torch.isfinite(out).all()
