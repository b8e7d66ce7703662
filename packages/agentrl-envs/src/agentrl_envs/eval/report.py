"""Evaluation outputs: ``episodes.jsonl`` (one line per episode), ``results.json`` (per-task figures), a table.

``results.json`` follows DESIGN.md: ``{"tasks": {"db": {"n", "runs", "success_rate", "mean_reward", "std",
"status_counts", ...}}, "average": ...}``. An episode whose environment failed (``infra_error``) is counted in
``status_counts`` and ``infra_errors`` but left out of ``success_rate`` and ``mean_reward``: it says nothing
about the agent. ``success_rate`` is the mean over runs of each run's success rate and ``std`` their
population standard deviation (0 for one run); ``average`` is the mean of the tasks' success rates.
When BFCL categories were played, a ``bfcl`` block gives their figures in BFCL's own terms (see
:mod:`agentrl_envs.tasks.bfcl.report`).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.tasks.bfcl.report import bfcl_results

__all__ = ["EpisodeWriter", "print_table", "summarize", "write_results"]

RESULTS_FILE = "results.json"
EPISODES_FILE = "episodes.jsonl"


class EpisodeWriter:
    """Appends each finished episode to ``DIR/episodes.jsonl`` at once, so an interrupted run keeps them."""

    def __init__(self, output_dir: Path) -> None:
        """Create ``output_dir`` and start a fresh ``episodes.jsonl`` in it."""
        output_dir.mkdir(parents=True, exist_ok=True)
        self.path = output_dir / EPISODES_FILE
        self._file: IO[str] = self.path.open("w", encoding="utf-8")

    def write(self, record: EpisodeRecord) -> None:
        """Write one episode as a JSON line."""
        self._file.write(json.dumps(record.to_json(), ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def summarize(records: Iterable[EpisodeRecord], planned: dict[str, int], runs: int) -> dict[str, Any]:
    """The ``results.json`` object.

    Args:
        records: Finished episodes.
        planned: Samples per task (``n``), in the order the tasks were given.
        runs: How many times each sample was meant to be played.
    """
    records = list(records)
    by_task: dict[str, list[EpisodeRecord]] = {task: [] for task in planned}
    for record in records:
        by_task.setdefault(record.task, []).append(record)
    tasks = {task: _task_figures(by_task[task], planned.get(task, 0), runs) for task in by_task}
    rates = [figures["success_rate"] for figures in tasks.values() if figures["success_rate"] is not None]
    results: dict[str, Any] = {"tasks": tasks, "average": statistics.fmean(rates) if rates else None}
    bfcl = bfcl_results(records)
    if bfcl is not None:
        results["bfcl"] = bfcl
    return results


def _task_figures(records: list[EpisodeRecord], n: int, runs: int) -> dict[str, Any]:
    scored = [r for r in records if not r.infra_error]
    run_rates = []
    for run in range(runs):
        in_run = [r for r in scored if r.run == run]
        if in_run:
            run_rates.append(sum(r.success for r in in_run) / len(in_run))
    return {
        "n": n,
        "runs": runs,
        "success_rate": statistics.fmean(run_rates) if run_rates else None,
        "mean_reward": statistics.fmean(r.reward for r in scored) if scored else None,
        "std": statistics.pstdev(run_rates) if run_rates else None,
        "status_counts": dict(sorted(Counter(r.status for r in records).items())),
        "successes": sum(r.success for r in scored),
        "episodes": len(records),
        "infra_errors": len(records) - len(scored),
        "run_success_rates": run_rates,
    }


def write_results(output_dir: Path, results: dict[str, Any]) -> Path:
    """Write ``DIR/results.json``; returns its path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / RESULTS_FILE
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return path


def print_table(results: dict[str, Any], console: Console) -> None:
    """Print one row per task (and the average) to ``console``, then each task's status counts."""
    table = Table(title="AgentBench evaluation")
    for column in ("task", "n", "runs", "success", "rate", "± std", "reward", "infra"):
        table.add_column(column, justify="left" if column == "task" else "right", no_wrap=True)
    for task, f in results["tasks"].items():
        table.add_row(
            task,
            str(f["n"]),
            str(f["runs"]),
            f"{f['successes']}/{f['episodes'] - f['infra_errors']}",
            _percent(f["success_rate"]),
            _percent(f["std"]),
            _number(f["mean_reward"]),
            str(f["infra_errors"]),
        )
    table.add_section()
    table.add_row("average", "", "", "", _percent(results["average"]), "", "", "")
    console.print(table)
    for task, f in results["tasks"].items():
        statuses = ", ".join(f"{status}: {count}" for status, count in f["status_counts"].items())
        console.print(f"{task} statuses: {statuses or '-'}", highlight=False, soft_wrap=True)
    if "bfcl" in results:
        _print_bfcl(results["bfcl"], console)


def _print_bfcl(bfcl: dict[str, Any], console: Console) -> None:
    """BFCL's multi-turn columns: overall (unweighted mean of the four categories), then each category."""
    table = Table(title="BFCL multi-turn (BFCL's accuracy: every entry counts)")
    for column in ("category", "accuracy", "correct", "total"):
        table.add_column(column, justify="left" if column == "category" else "right", no_wrap=True)
    for name, figures in bfcl.items():
        if name == "multi_turn_overall":
            continue
        table.add_row(name, _percent(figures["accuracy"]), str(figures["correct_count"]), str(figures["total_count"]))
    overall = bfcl["multi_turn_overall"]
    table.add_section()
    accuracy = _percent(overall["accuracy"]) if overall["complete"] else "N/A (not all four categories)"
    table.add_row("multi_turn_overall", accuracy, "", str(overall["total_count"]))
    console.print(table)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
