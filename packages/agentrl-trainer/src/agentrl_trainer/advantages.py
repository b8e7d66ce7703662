r"""Advantages: GRPO's group baseline, then the paper's task advantage normalization.

For rewards :math:`r_{i}` of the :math:`G` episodes of one sample, the group advantage is
:math:`\hat A_i = r_i - \operatorname{mean}(r_{1..G})` (divided by the group's standard deviation when
``scale_rewards="group"``, as TRL does). Every action token of episode :math:`i` carries :math:`\hat A_i`.

Task advantage normalization (AgentRL Eq. 1): for each task :math:`k` in the batch, with :math:`T_k` its
action tokens, :math:`\tilde A_t = (\hat A_t - \mu_k) / (\sigma_k + \epsilon)` where :math:`\mu_k, \sigma_k`
are the mean and standard deviation of :math:`\hat A` over :math:`T_k`. Tasks with fewer than two action
tokens, or whose advantages are (nearly) constant, are left as they are: dividing by a zero spread would
blow noise up into a signal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch

__all__ = ["group_advantages", "task_normalize"]


def group_advantages(
    rewards: torch.Tensor, group_size: int, *, scale_rewards: Literal["group", "batch", "none"] = "group"
) -> torch.Tensor:
    """GRPO advantages of consecutive groups of ``group_size`` rewards (TRL's ``scale_rewards`` semantics).

    Args:
        rewards: Shape ``(N,)``, groups contiguous.
        group_size: G.
        scale_rewards: ``group`` divides by each group's std, ``batch`` by the batch std, ``none`` only centers.

    Returns:
        Shape ``(N,)``.
    """
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}.")
    grouped = rewards.view(-1, group_size)
    advantages = (grouped - grouped.mean(dim=1, keepdim=True)).view(-1)
    if scale_rewards == "group" and group_size > 1:
        advantages = advantages / (grouped.std(dim=1).repeat_interleave(group_size) + 1e-4)
    elif scale_rewards == "batch" and rewards.numel() > 1:
        advantages = advantages / (rewards.std() + 1e-4)
    elif scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}.")
    return advantages


def task_normalize(
    advantages: torch.Tensor,
    mask: torch.Tensor,
    tasks: Sequence[str],
    *,
    eps: float = 1e-6,
    min_std: float = 1e-6,
    task_names: Sequence[str] | None = None,
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Normalize token-level advantages per task over action tokens (the paper's Eq. 1).

    The statistics are formed from per-task sums (count, sum, sum of squares, in float64), so that with several
    training processes ``all_reduce`` can add them up: every process then normalizes with the statistics of the
    whole batch, exactly as one process holding all of it would.

    Args:
        advantages: Shape ``(B, T)``, token-level advantages.
        mask: Shape ``(B, T)``, 1 on action tokens (the only ones that count and that change).
        tasks: The task of each of the B rows.
        eps: Added to the standard deviation.
        min_std: Below this spread a task's advantages are left unchanged.
        task_names: Every task any process may hold, in one order shared by all processes (needed with
            ``all_reduce``, since a process may hold no row of some task); defaults to the tasks of ``tasks``.
        all_reduce: Sums a tensor over the training processes (None: this process holds the whole batch).

    Returns:
        A new ``(B, T)`` tensor; non-action tokens are zero.
    """
    if advantages.shape != mask.shape or advantages.size(0) != len(tasks):
        raise ValueError(
            f"advantages {tuple(advantages.shape)}, mask {tuple(mask.shape)} and {len(tasks)} tasks do not match."
        )
    names = sorted(set(task_names if task_names is not None else tasks))
    if not set(tasks) <= set(names):
        raise ValueError(f"Rows of tasks {sorted(set(tasks) - set(names))} are not in task_names {names}.")
    out = advantages * mask
    selected = mask.bool()
    where_by_task = {}
    stats = torch.zeros(len(names), 3, dtype=torch.float64)
    for i, task in enumerate(names):
        rows = torch.tensor([t == task for t in tasks], dtype=torch.bool, device=advantages.device)
        where = selected & rows.unsqueeze(1)
        values = advantages[where].double()
        where_by_task[task] = where
        stats[i, 0] = values.numel()
        stats[i, 1] = values.sum()
        stats[i, 2] = (values * values).sum()
    if all_reduce is not None:
        stats = all_reduce(stats)
    for i, task in enumerate(names):
        count, total, squares = stats[i].tolist()
        if count < 2:
            continue
        mean = total / count
        std = max(squares - total * mean, 0.0) ** 0.5 / (count - 1) ** 0.5  # unbiased, as torch.std
        if std < min_std:
            continue
        where = where_by_task[task]
        out[where] = ((advantages[where].double() - mean) / (std + eps)).to(out.dtype)
    return out
