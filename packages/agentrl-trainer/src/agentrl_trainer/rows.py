"""Training rows ``{task, split, index}`` and the order the producer plays them in.

Tasks are mixed round-robin (the paper's default) or, with weights, drawn at random in proportion to them;
within a task the samples are shuffled once per pass.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from agentrl_trainer.types import TrainingRow

__all__ = ["mixed_rows", "task_rows"]


def task_rows(task: str, split: str, count: int) -> list[TrainingRow]:
    """Every row of one task's split."""
    return [TrainingRow(task, split, index) for index in range(count)]


def _cycle_shuffled(rows: list[TrainingRow], rng: random.Random) -> Iterator[TrainingRow]:
    while True:
        order = list(rows)
        rng.shuffle(order)
        yield from order


def mixed_rows(
    rows_by_task: dict[str, list[TrainingRow]], *, weights: Sequence[float] | None = None, seed: int = 0
) -> Iterator[TrainingRow]:
    """An endless stream of rows mixing the tasks round-robin, or by ``weights`` when given."""
    tasks = [t for t, rows in rows_by_task.items() if rows]
    if not tasks:
        raise ValueError("No training rows: every task has zero samples.")
    rng = random.Random(seed)
    streams = {t: _cycle_shuffled(rows_by_task[t], rng) for t in tasks}
    if weights is None:
        while True:
            for task in tasks:
                yield next(streams[task])
    task_weights = [w for t, w in zip(rows_by_task, weights, strict=True) if rows_by_task[t]]
    while True:
        yield next(streams[rng.choices(tasks, weights=task_weights)[0]])
