"""Per-step rollout metrics: per task reward, success, score, turns and tokens; statuses; staleness; pipeline health.

Keys are namespaced (``env/<task>/reward``, ``rollout/...``) and go through TRL's metric buffer, so they
reach every ``report_to`` backend and the trainer's log history.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from agentrl_envs.core.status import SampleStatus
from agentrl_trainer.types import Group, Trajectory

__all__ = ["diversity_metrics", "is_success", "staleness_metrics", "task_metrics"]


def is_success(trajectory: Trajectory) -> bool:
    """An episode succeeded when it completed with full reward (AgentBench's success rate)."""
    return trajectory.status == SampleStatus.COMPLETED and trajectory.env_reward >= 1.0 - 1e-6


def task_metrics(trajectories: Iterable[Trajectory]) -> dict[str, float]:
    """Mean reward, success, score, turns and tokens per task, plus status counts."""
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    statuses: Counter[str] = Counter()
    for t in trajectories:
        by_task[t.row.task].append(t)
        statuses[t.status] += 1
    out: dict[str, float] = {}
    for task, items in sorted(by_task.items()):
        n = len(items)
        out[f"env/{task}/reward"] = sum(t.reward for t in items) / n
        out[f"env/{task}/success"] = sum(is_success(t) for t in items) / n
        out[f"env/{task}/score"] = sum(t.score for t in items) / n
        out[f"env/{task}/turns"] = sum(t.turns for t in items) / n
        out[f"env/{task}/action_tokens"] = sum(t.action_tokens for t in items) / n
        out[f"env/{task}/episodes"] = float(n)
    for status, count in sorted(statuses.items()):
        out[f"rollout/status/{status.replace(' ', '_')}"] = float(count)
    return out


def staleness_metrics(groups: list[Group], current_version: int, histogram: Counter[int]) -> dict[str, float]:
    """Staleness of the groups trained on this step, and the running histogram (``rollout/staleness/<k>``)."""
    values = [g.staleness(current_version) for g in groups]
    histogram.update(values)
    out = {
        "rollout/staleness_mean": sum(values) / len(values) if values else 0.0,
        "rollout/staleness_max": float(max(values, default=0)),
    }
    lags = [current_version - v for g in groups for t in g.trajectories for v in t.lagged_versions]
    out["rollout/lagged_version_lag_mean"] = sum(lags) / len(lags) if lags else 0.0
    turns = [s.lagged for g in groups for t in g.trajectories for s in t.segments if s.is_action]
    out["rollout/lagged_turn_fraction"] = sum(turns) / len(turns) if turns else 0.0
    return out


def diversity_metrics(groups: list[Group]) -> dict[str, float]:
    """Distinct action-token sequences per group (``rollout/distinct_actions_per_group``): GRPO's exploration."""
    distinct = [
        len({tuple(t for s in traj.segments if s.is_action for t in s.token_ids) for traj in g.trajectories})
        for g in groups
    ]
    return {"rollout/distinct_actions_per_group": sum(distinct) / len(distinct) if distinct else 0.0}
