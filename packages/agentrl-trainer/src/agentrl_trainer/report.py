"""End-of-run report: ``summary.json`` and PNG plots (reward per task over steps, rollout throughput)."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["summarize", "write_report"]

logger = logging.getLogger(__name__)


def _series(log_history: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    steps, values = [], []
    for entry in log_history:
        if entry.get(key) is not None and "step" in entry:
            steps.append(int(entry["step"]))
            values.append(float(entry[key]))
    return steps, values


def summarize(trainer: Any) -> dict[str, Any]:
    """The run's figures: per-task reward first/last logged, throughput, idle time, staleness, drops."""
    history = trainer.state.log_history
    tasks = sorted({k.split("/")[1] for e in history for k in e if k.startswith("env/") and k.endswith("/reward")})
    per_task = {}
    for task in tasks:
        _, rewards = _series(history, f"env/{task}/reward")
        _, success = _series(history, f"env/{task}/success")
        per_task[task] = {
            "reward_first": rewards[0] if rewards else None,
            "reward_last": rewards[-1] if rewards else None,
            "success_last": success[-1] if success else None,
        }
    producer = trainer.producer
    stats = producer.stats if producer is not None else None
    _, throughput = _series(history, "rollout/trajectories_per_s")
    return {
        "steps": trainer.state.global_step,
        "tasks": per_task,
        "episodes": stats.episodes if stats else 0,
        "infra_errors": stats.infra_errors if stats else 0,
        "infra_dropped_groups": stats.dropped_groups if stats else 0,
        "stale_dropped_groups": trainer.stale_dropped,
        "staleness_histogram": {str(k): v for k, v in sorted(trainer.staleness_histogram.items())},
        "trainer_idle_s": trainer.idle_s,
        # The first step's share of it: the pipeline filling once, before rollouts could run beside training.
        "trainer_first_step_idle_s": trainer.first_idle_s,
        "mean_trajectories_per_s": sum(throughput) / len(throughput) if throughput else None,
        "status_counts": dict(producer.status_counts) if producer is not None else {},
        "infra_errors_by_kind": dict(producer.faults.counts) if producer is not None else {},
        "unstartable_samples": (
            [
                {"task": r.task, "split": r.split, "index": r.index, "error": e}
                for r, e in producer.faults.unstartable.items()
            ]
            if producer is not None
            else []
        ),
        "prompt_tokens": dict(trainer.prompt_tokens),
        "sft_warmup": trainer.sft_warmup,
    }


def write_report(trainer: Any) -> Path | None:
    """Write ``summary.json`` and ``reward.png``/``throughput.png`` to the output directory."""
    out = Path(trainer.args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(trainer)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    try:
        _plot(trainer.state.log_history, out)
    except Exception:  # a plotting failure must not hide the training result
        logger.exception("could not draw the run's plots")
    return out / "summary.json"


def _plot(history: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rewards: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    for key in sorted({k for e in history for k in e if k.startswith("env/") and k.endswith("/reward")}):
        rewards[key.split("/")[1]] = _series(history, key)
    fig, ax = plt.subplots(figsize=(6, 4))
    for task, (steps, values) in rewards.items():
        ax.plot(steps, values, label=task)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("mean reward")
    ax.set_title("Reward per task")
    if rewards:
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "reward.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    steps, values = _series(history, "rollout/trajectories_per_s")
    ax.plot(steps, values)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("trajectories / s")
    ax.set_title("Rollout throughput")
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=100)
    plt.close(fig)
