"""Evaluation outputs: ``episodes.jsonl`` (one line per episode), ``results.json`` (per-task figures), a table.

``results.json`` follows DESIGN.md: ``{"tasks": {"db": {"n", "runs", "success_rate", "mean_reward", "std",
"status_counts", ...}}, "average": ...}``. An episode whose environment failed (``infra_error``) is counted in
``status_counts`` and ``infra_errors`` but left out of ``success_rate`` and ``mean_reward``: it says nothing
about the agent. ``success_rate`` is the mean over runs of each run's success rate and ``std`` their
population standard deviation (0 for one run); ``average`` is the mean of the tasks' success rates.

Beside those (added, never renamed): ``pass_at_k`` with ``--runs`` > 1 (the unbiased estimator of Chen et al.
2021, ``1 - C(n-c, k) / C(n, k)`` per sample, averaged over samples), ``usage`` (the tokens the server
reported), ``turns_by_model`` (which model played how many turns), ``fidelity`` and ``backend`` per task, and
a top-level ``config`` block saying what was evaluated (see :mod:`agentrl_envs.eval.runconfig`).

When BFCL categories were played, a ``bfcl`` block gives their figures in BFCL's own terms (see
:mod:`agentrl_envs.tasks.bfcl.report`).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.tasks.bfcl.report import bfcl_results

__all__ = ["EpisodeWriter", "pass_at_k", "print_table", "summarize", "write_results"]

RESULTS_FILE = "results.json"
EPISODES_FILE = "episodes.jsonl"


class EpisodeWriter:
    """Appends each finished episode to ``DIR/episodes.jsonl`` at once, so an interrupted run keeps them."""

    def __init__(self, output_dir: Path, *, append: bool = False) -> None:
        """Create ``output_dir`` and start a fresh ``episodes.jsonl`` in it (or add to it, with ``append``)."""
        output_dir.mkdir(parents=True, exist_ok=True)
        self.path = output_dir / EPISODES_FILE
        self._file: IO[str] = self.path.open("a" if append else "w", encoding="utf-8")

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


def summarize(
    records: Iterable[EpisodeRecord],
    planned: dict[str, int],
    runs: int,
    *,
    engines: Mapping[str, Mapping[str, str | None]] | None = None,
) -> dict[str, Any]:
    """The ``results.json`` object (without ``config``, which the caller adds).

    Args:
        records: Finished episodes.
        planned: Samples per task (``n``), in the order the tasks were given.
        runs: How many times each sample was meant to be played.
        engines: ``{task: {"fidelity": ..., "backend": ...}}`` as the envs said when made; what the episodes'
            ``info`` says wins (a controller's env tells only there).
    """
    records = list(records)
    by_task: dict[str, list[EpisodeRecord]] = {task: [] for task in planned}
    for record in records:
        by_task.setdefault(record.task, []).append(record)
    tasks = {}
    for task, task_records in by_task.items():
        tasks[task] = _task_figures(task_records, planned.get(task, 0), runs)
        tasks[task].update(_engine(task_records, (engines or {}).get(task, {})))
    rates = [figures["success_rate"] for figures in tasks.values() if figures["success_rate"] is not None]
    results: dict[str, Any] = {
        "tasks": tasks,
        "average": statistics.fmean(rates) if rates else None,
        "usage": _usage(records),
        "turns_by_model": _turns_by_model(records),
    }
    bfcl = bfcl_results(records)
    if bfcl is not None:
        results["bfcl"] = bfcl
    return results


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate for one sample played ``n`` times with ``c`` successes (needs ``n >= k``)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}.")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _pass_at_ks(scored: list[EpisodeRecord], runs: int) -> dict[str, float]:
    """pass@k for k = 1, 2, 4, ... and ``runs``, averaged over the samples played at least k times."""
    per_sample: dict[int, list[bool]] = {}
    for record in scored:
        per_sample.setdefault(record.index, []).append(record.success)
    ks = sorted({2**i for i in range(runs.bit_length()) if 2**i <= runs} | {runs})
    figures = {}
    for k in ks:
        estimates = [pass_at_k(len(s), sum(s), k) for s in per_sample.values() if len(s) >= k]
        if estimates:
            figures[str(k)] = statistics.fmean(estimates)
    return figures


def _usage(records: Iterable[EpisodeRecord]) -> dict[str, int] | None:
    """Tokens summed over the episodes whose server reported usage; ``None`` if none did."""
    reported = [usage for usage in (r.usage for r in records) if usage is not None]
    if not reported:
        return None
    totals = {key: sum(u[key] for u in reported) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return {**totals, "episodes": len(reported)}


def _turns_by_model(records: Iterable[EpisodeRecord]) -> dict[str, int]:
    counts = Counter(turn.model for record in records for turn in record.turns if turn.model is not None)
    return dict(sorted(counts.items()))


def _engine(records: list[EpisodeRecord], made: Mapping[str, str | None]) -> dict[str, str | None]:
    """The task's ``fidelity`` and ``backend``: the most common in the episodes' ``info``, else as made."""
    engine = {}
    for key in ("fidelity", "backend"):
        seen = Counter(r.info[key] for r in records if r.info.get(key) is not None)
        engine[key] = seen.most_common(1)[0][0] if seen else made.get(key)
    return engine


def _task_figures(records: list[EpisodeRecord], n: int, runs: int) -> dict[str, Any]:
    scored = [r for r in records if not r.infra_error]
    run_rates = []
    for run in range(runs):
        in_run = [r for r in scored if r.run == run]
        if in_run:
            run_rates.append(sum(r.success for r in in_run) / len(in_run))
    extra: dict[str, Any] = {"pass_at_k": _pass_at_ks(scored, runs)} if runs > 1 else {}
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
        **extra,
        "usage": _usage(records),
        "turns_by_model": _turns_by_model(records),
    }


def write_results(output_dir: Path, results: dict[str, Any]) -> Path:
    """Write ``DIR/results.json``; returns its path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / RESULTS_FILE
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return path


def print_table(results: dict[str, Any], console: Console) -> None:
    """Print one row per task (and the average), status counts, a note on emulated backends, and BFCL's table."""
    runs = max((f["runs"] for f in results["tasks"].values()), default=1)
    table = Table(title="agentrl-eval results (fidelity per task: upstream engine or emulated)")
    columns = ["task", "fidelity", "n", "runs", "success", "rate", "± std"]
    columns += [f"pass@{runs}"] if runs > 1 else []
    columns += ["reward", "tokens", "infra"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("task", "fidelity") else "right", no_wrap=True)
    for task, f in results["tasks"].items():
        row = [
            task,
            _fidelity(f),
            str(f["n"]),
            str(f["runs"]),
            f"{f['successes']}/{f['episodes'] - f['infra_errors']}",
            _percent(f["success_rate"]),
            _percent(f["std"]),
        ]
        row += [_percent(f.get("pass_at_k", {}).get(str(runs)))] if runs > 1 else []
        row += [_number(f["mean_reward"]), _tokens(f.get("usage")), str(f["infra_errors"])]
        table.add_row(*row)
    table.add_section()
    table.add_row("average", *[""] * 4, _percent(results["average"]), *[""] * (len(columns) - 6))
    console.print(table)
    for task, f in results["tasks"].items():
        statuses = ", ".join(f"{status}: {count}" for status, count in f["status_counts"].items())
        console.print(f"{task} statuses: {statuses or '-'}", highlight=False, soft_wrap=True)
    if results.get("turns_by_model") and len(results["turns_by_model"]) > 1:
        turns = ", ".join(f"{model}: {count}" for model, count in results["turns_by_model"].items())
        console.print(f"turns by model: {turns}", highlight=False, soft_wrap=True)
    if results.get("usage"):
        u = results["usage"]
        console.print(
            f"tokens: {u['prompt_tokens']} prompt + {u['completion_tokens']} completion = {u['total_tokens']}",
            highlight=False,
            soft_wrap=True,
        )
    emulated = [task for task, f in results["tasks"].items() if f.get("fidelity") == "emulated"]
    if emulated:
        console.print(
            f"[yellow]Note:[/yellow] the scores of {', '.join(emulated)} come from emulated backends (an embedded "
            "stand-in for AgentBench's engine; each task's docs list the differences): they are not comparable "
            "with AgentBench's published numbers.",
            highlight=False,
            soft_wrap=True,
        )
    if "bfcl" in results:
        _print_bfcl(results["bfcl"], console)


def _fidelity(figures: dict[str, Any]) -> str:
    fidelity = figures.get("fidelity") or "-"
    return f"{fidelity} ({figures['backend']})" if figures.get("backend") else fidelity


def _tokens(usage: dict[str, int] | None) -> str:
    return "-" if not usage else f"{usage['total_tokens']:,}"


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
