r"""Turn complete groups into the tensors TRL's GRPO loss reads.

Layout follows ``GRPOTrainer._generate_and_score_completions``: prompts left-padded, completions
right-padded, ``completion_mask`` marks real completion tokens and ``tool_mask`` the model's own tokens
(TRL multiplies the two, so environment tokens carry no loss). ``old_per_token_logps`` are the log-probs
of the engine that sampled each token, so the loss's ratio :math:`\pi_\theta / \pi_{\text{behaviour}}` is
the token-level importance-sampling correction for asynchrony and for cross-policy sampling alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from agentrl_trainer.advantages import group_advantages, task_normalize
from agentrl_trainer.types import Group, Trajectory

__all__ = ["ROW_KEYS", "BatchOptions", "build_inputs", "without_zero_advantage_rows"]


PROMPT_KEYS = ("prompt_ids", "prompt_mask")
COMPLETION_KEYS = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "old_per_token_logps",
    "sampling_per_token_logps",
    "advantages",
    "ref_per_token_logps",
)
ROW_KEYS = PROMPT_KEYS + COMPLETION_KEYS
"""The per-row tensors of a batch (the rest, ``num_items_in_batch``, is batch-wide)."""


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How advantages are formed."""

    scale_rewards: str = "group"
    task_advantage_normalization: bool = True
    pad_token_id: int = 0
    task_names: tuple[str, ...] | None = None
    """Every task of the run, in one order (needed by ``all_reduce``)."""
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None
    """Sums over the training processes, so that batch-wide statistics cover every process's groups."""


def _pad(rows: Sequence[Sequence[float]], value: float, *, left: bool, dtype: torch.dtype) -> torch.Tensor:
    width = max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), max(width, 1)), value, dtype=dtype)
    for i, row in enumerate(rows):
        if row:
            values = torch.tensor(row, dtype=dtype)
            if left:
                out[i, out.size(1) - len(row) :] = values
            else:
                out[i, : len(row)] = values
    return out


def build_inputs(groups: list[Group], options: BatchOptions) -> tuple[dict[str, torch.Tensor], list[Trajectory]]:
    """The loss inputs for ``groups`` and the trajectories in row order.

    Returns:
        ``prompt_ids``, ``prompt_mask``, ``completion_ids``, ``completion_mask``, ``tool_mask``,
        ``old_per_token_logps``, ``sampling_per_token_logps``, token-level ``advantages`` and
        ``num_items_in_batch`` (action tokens), plus the trajectories.
    """
    if not groups:
        raise ValueError("build_inputs needs at least one group.")
    size = len(groups[0].trajectories)
    if any(len(g.trajectories) != size for g in groups):
        raise ValueError("Every group must have the same number of episodes (num_generations).")
    trajectories = [t for g in groups for t in g.trajectories]
    rewards = torch.tensor([t.reward for t in trajectories], dtype=torch.float32)
    # TRL's config types scale_rewards as str; its __post_init__ accepts only the three values
    advantages = group_advantages(
        rewards,
        size,
        scale_rewards=options.scale_rewards,  # pyright: ignore[reportArgumentType]
    )
    advantages = advantages * torch.tensor([g.weight for g in groups]).repeat_interleave(size)

    prompt_ids = _pad([t.prompt_ids for t in trajectories], options.pad_token_id, left=True, dtype=torch.long)
    prompt_mask = _pad([[1] * len(t.prompt_ids) for t in trajectories], 0, left=True, dtype=torch.long)
    completion_ids = _pad([t.completion_ids for t in trajectories], options.pad_token_id, left=False, dtype=torch.long)
    completion_mask = _pad([[1] * len(t.completion_ids) for t in trajectories], 0, left=False, dtype=torch.long)
    tool_mask = _pad([t.action_mask for t in trajectories], 0, left=False, dtype=torch.long)
    logps = _pad([t.sampling_logprobs for t in trajectories], 0.0, left=False, dtype=torch.float32)

    mask = (completion_mask * tool_mask).float()
    token_advantages = advantages.unsqueeze(1) * mask
    if options.task_advantage_normalization:
        token_advantages = task_normalize(
            token_advantages,
            mask,
            [t.row.task for t in trajectories],
            task_names=options.task_names,
            all_reduce=options.all_reduce,
        )
    inputs = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "old_per_token_logps": logps,
        "sampling_per_token_logps": logps,
        "advantages": token_advantages,
        # TRL's dapo loss divides by the action tokens of the whole batch, over every process.
        "num_items_in_batch": options.all_reduce(mask.sum()) if options.all_reduce is not None else mask.sum(),
    }
    return inputs, trajectories


def without_zero_advantage_rows(inputs: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], int]:
    """The batch without the rows whose every token advantage is 0, and how many rows are left.

    Under a loss that is a sum over tokens of ``advantage x ratio`` divided by a batch-wide token count (TRL's
    ``dapo``, ``cispo`` and ``vespo``, with no KL term, entropy bonus or entropy mask), such a row adds exactly
    nothing to the gradient, yet costs a forward and backward pass: a group whose episodes all succeed or all
    fail, and every group of a task the policy cannot solve yet. ``num_items_in_batch`` keeps counting their
    tokens, so the loss of the rows left is unchanged. One row is always left (the step still runs, with a zero
    gradient), and padding that only the dropped rows needed is cut (rotary positions are relative, so a prompt's
    left padding does not change its log-probs beyond float rounding).
    """
    keep = inputs["advantages"].ne(0).any(dim=1)
    if not keep.any():
        keep[0] = True
    rows = {k: v[keep] for k, v in inputs.items() if k in ROW_KEYS}
    prompt_start = int((rows["prompt_mask"].sum(dim=0) > 0).nonzero()[0]) if rows["prompt_mask"].any() else 0
    completion_end = max(int(rows["completion_mask"].sum(dim=1).max()), 1)
    for key in PROMPT_KEYS:
        rows[key] = rows[key][:, prompt_start:]
    for key in COMPLETION_KEYS:
        if key in rows:
            rows[key] = rows[key][:, :completion_end]
    return {**inputs, **rows}, int(keep.sum())
