"""``agentrl-eval compare DIR [DIR...]``: several runs side by side, as a per-task table and a PNG bar chart.

Runs are comparable when they scored the same data (the data root's upstream commit) with engines of the same
fidelity: a DB score on SQLite is not a DB score on MySQL. Runs that differ are refused unless
``--allow-mismatch`` says the difference is understood; the table shows fidelity either way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agentrl_envs.core.errors import EnvError
from agentrl_envs.eval.help_format import DefaultsHelpFormatter
from agentrl_envs.eval.report import RESULTS_FILE

__all__ = ["Run", "check_comparable", "load_run", "main", "plot_runs"]

EXIT_OK, EXIT_USAGE = 0, 2


@dataclass(frozen=True)
class Run:
    """One evaluation's ``results.json``, labelled."""

    label: str
    results: dict[str, Any]

    @property
    def tasks(self) -> dict[str, dict[str, Any]]:
        """Per-task figures."""
        return self.results["tasks"]

    @property
    def data_commit(self) -> str | None:
        """The upstream commit of the data root the run read (``None``: not recorded or no data root)."""
        return ((self.results.get("config") or {}).get("data") or {}).get("commit")


def load_run(directory: Path, label: str | None = None) -> Run:
    """Read ``DIR/results.json``.

    Raises:
        EnvError: If it is missing or not a results file.
    """
    path = directory / RESULTS_FILE
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise EnvError(f"{path} cannot be read as an agentrl-eval results file: {e}") from e
    if not isinstance(results, dict) or not isinstance(results.get("tasks"), dict):
        raise EnvError(f"{path} has no 'tasks'; is {directory} an agentrl-eval --output directory?")
    return Run(label or directory.name, results)


def check_comparable(runs: Sequence[Run]) -> None:
    """Refuse runs whose data commit differs, or whose fidelity differs on a task they share.

    Raises:
        EnvError: Naming what differs, run by run, and the way out.
    """
    problems = []
    commits = {run.label: run.data_commit for run in runs}
    if len(set(commits.values())) > 1:
        problems.append(f"data commit: {commits}")
    for task in sorted({task for run in runs for task in run.tasks}):
        fidelity = {run.label: run.tasks[task].get("fidelity") for run in runs if task in run.tasks}
        if len(set(fidelity.values())) > 1:
            problems.append(f"{task} fidelity: {fidelity}")
    if problems:
        raise EnvError(
            "These runs are not comparable (" + "; ".join(problems) + "). Evaluate on the same data and backends, "
            "or pass --allow-mismatch to compare them anyway."
        )


def print_comparison(runs: Sequence[Run], console: Console) -> None:
    """One row per task and run: fidelity, success ± std, pass@k, tokens."""
    table = Table(title="agentrl-eval compare")
    for column in ("task", "run", "fidelity", "episodes", "success ± std", "pass@k", "tokens"):
        table.add_column(column, justify="left" if column in ("task", "run", "fidelity") else "right", no_wrap=True)
    tasks = list(dict.fromkeys(task for run in runs for task in run.tasks))
    for number, task in enumerate(tasks):
        if number:
            table.add_section()
        for run in runs:
            f = run.tasks.get(task)
            if f is None:
                table.add_row(task, run.label, "-", "-", "not evaluated", "-", "-")
                continue
            table.add_row(
                task,
                run.label,
                str(f.get("fidelity") or "-"),
                str(f.get("episodes", "-")),
                _rate(f.get("success_rate"), f.get("std")),
                _pass_at_k(f.get("pass_at_k")),
                f"{f['usage']['total_tokens']:,}" if f.get("usage") else "-",
            )
    table.add_section()
    for run in runs:
        table.add_row("average", run.label, "", "", _rate(run.results.get("average"), None), "", "")
    console.print(table)


def plot_runs(runs: Sequence[Run], path: Path) -> Path:
    """A grouped bar chart of success rate per task (one bar per run, ± std), written as a PNG.

    Raises:
        EnvError: If matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise EnvError("The chart needs matplotlib: pip install 'agentrl-envs[plot]' (or --no-plot).") from e
    tasks = list(dict.fromkeys(task for run in runs for task in run.tasks))
    width = 0.8 / len(runs)
    figure, axes = plt.subplots(figsize=(max(5.0, 1.6 * len(tasks) * max(1, len(runs)) / 2 + 2), 4))
    for position, run in enumerate(runs):
        xs = [i + (position - (len(runs) - 1) / 2) * width for i in range(len(tasks))]
        rates = [100 * (run.tasks.get(t, {}).get("success_rate") or 0.0) for t in tasks]
        errors = [100 * (run.tasks.get(t, {}).get("std") or 0.0) for t in tasks]
        bars = axes.bar(xs, rates, width, yerr=errors, capsize=3, label=run.label)
        axes.bar_label(bars, fmt="%.1f", fontsize=8, padding=2)
    labels = [f"{t}\n({_fidelities(runs, t)})" for t in tasks]
    axes.set_xticks(range(len(tasks)), labels)
    axes.set_ylabel("success rate (%)")
    axes.set_ylim(0, 110)
    axes.set_title("agentrl-eval: success rate per task")
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def build_parser() -> argparse.ArgumentParser:
    """The ``compare`` sub-command's interface."""
    parser = argparse.ArgumentParser(
        prog="agentrl-eval compare",
        description="Compare agentrl-eval runs: a per-task table and a PNG bar chart of success rates.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", type=Path, metavar="DIR", help="--output directories of agentrl-eval")
    parser.add_argument("--labels", help="comma-separated names of the runs (default: the directory names)")
    parser.add_argument("--plot", type=Path, default=Path("compare.png"), help="where the bar chart goes")
    parser.add_argument("--no-plot", action="store_true", help="print the table only")
    parser.add_argument(
        "--allow-mismatch", action="store_true", help="compare runs whose data commit or fidelity differ"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agentrl-eval compare``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    stderr = Console(stderr=True)
    try:
        labels = [label.strip() for label in args.labels.split(",")] if args.labels else [None] * len(args.runs)
        if len(labels) != len(args.runs):
            raise EnvError(f"--labels names {len(labels)} runs but {len(args.runs)} are given.")
        runs = [load_run(directory, label) for directory, label in zip(args.runs, labels, strict=True)]
        if len({run.label for run in runs}) != len(runs):
            raise EnvError("Two runs have the same label; name them with --labels a,b,...")
        if not args.allow_mismatch:
            check_comparable(runs)
        stdout = Console()
        print_comparison(runs, stdout if stdout.is_terminal else Console(width=160))
        if not args.no_plot:
            stderr.print(f"wrote {plot_runs(runs, args.plot)}", highlight=False, soft_wrap=True)
    except EnvError as e:
        parser.print_usage(sys.stderr)
        stderr.print(f"[red]agentrl-eval compare: error:[/red] {e}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    return EXIT_OK


def _rate(rate: float | None, std: float | None) -> str:
    if rate is None:
        return "-"
    return f"{100 * rate:.1f}%" + (f" ± {100 * std:.1f}" if std else "")


def _pass_at_k(figures: dict[str, float] | None) -> str:
    if not figures:
        return "-"
    k = max(figures, key=int)
    return f"pass@{k} {100 * figures[k]:.1f}%"


def _fidelities(runs: Sequence[Run], task: str) -> str:
    seen = dict.fromkeys(str(run.tasks[task].get("fidelity") or "?") for run in runs if task in run.tasks)
    return "/".join(seen)
