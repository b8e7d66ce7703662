"""``agentrl-envs synth``: synthesize training tasks validated by the environments.

Writes ``OUT/<task>.jsonl`` (DB) or ``OUT/<task>.json`` (OS, KG) in the upstream sample formats, usable as
the env's ``train_file=``, and ``OUT/report.json`` with the counts by reason; prints the counts as a table.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, cast, get_args

from agentrl_envs.core.data import DataRoot, resolve_cache_dir
from agentrl_envs.core.errors import EnvError
from agentrl_envs.synth.dedupe import texts_in
from agentrl_envs.synth.pipeline import Generator, synthesize
from agentrl_envs.synth.types import DIFFICULTIES, TaskName
from agentrl_envs.synth.validate import TaskAdapter

__all__ = ["add_commands", "run"]

TASKS: tuple[TaskName, ...] = get_args(TaskName)


def add_commands(groups: Any) -> None:
    """Add the ``synth`` command to the ``agentrl-envs`` CLI."""
    parser = groups.add_parser("synth", help="synthesize training tasks validated by the envs", description=__doc__)
    parser.add_argument("--task", default="db", help="comma-separated tasks: db, os, kg (default db)")
    parser.add_argument("--generator", choices=("procedural", "llm"), default="procedural")
    parser.add_argument("--n", type=int, default=100, help="tasks to keep per task (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed; a run is deterministic per seed (default 0)")
    parser.add_argument(
        "--difficulty", default="1,2,3", help="levels 1 (easy) to 3 (hard), comma-separated; written easiest first"
    )
    parser.add_argument(
        "--types",
        default=None,
        help="DB only: comma-separated question types to keep (upstream's `type`: other, counting, "
        "aggregation-MIN, aggregation-MAX, ranking, comparison, INSERT, UPDATE, DELETE; default all)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output directory (default $AGENTRL_CACHE_DIR/synth/...)"
    )
    parser.add_argument("--data-root", default=None, help="the AgentBench data root (default $AGENTRL_DATA_ROOT)")
    parser.add_argument("--backend", default=None, help="DB backend for validation: sqlite (default) or mariadb")
    parser.add_argument(
        "--base-url", default=None, help="LLM mode: an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    parser.add_argument("--model", default=None, help="LLM mode: the model name to ask")
    parser.add_argument("--api-key", default=None, help="LLM mode: API key (default $OPENAI_API_KEY or none)")
    parser.add_argument(
        "--exclude",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a directory `synth` wrote (repeatable): leave out tasks whose text (question and schema) one of its "
        "task files has, drawing others instead; use it to synthesize a held-out set that no training set overlaps",
    )
    parser.add_argument("--no-oracle-check", action="store_true", help="skip replaying the oracle on the output")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; prints the table and writes the report."""
    tasks = _comma_list(args.task)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise EnvError(f"Unknown synth task(s) {unknown}; choose from {list(TASKS)}.")
    names: list[TaskName] = [cast(TaskName, t) for t in tasks]  # each is one of TASKS
    levels = _levels(args.difficulty)
    if args.types and (names != ["db"] or args.generator != "procedural"):
        raise EnvError(
            "--types selects the question types of the procedural DB generator; use it with --task db alone "
            f"and --generator procedural (got --task {args.task} --generator {args.generator})."
        )
    if args.n < 1:
        raise EnvError(f"--n must be at least 1, got {args.n}.")
    for directory in args.exclude:
        if not directory.is_dir():
            raise EnvError(f"--exclude {directory}: no such directory; give a directory `synth --out` wrote.")
    data = DataRoot.find(args.data_root)
    out = args.out or resolve_cache_dir() / "synth" / f"{args.generator}-seed{args.seed}"
    report = []
    for task in names:
        adapter = make_adapter(task, data, backend=args.backend)
        generator = make_generator(task, data, args)
        path = out / f"{task}{adapter.suffix}"
        result = synthesize(
            adapter, generator, name=args.generator, n=args.n, difficulties=levels, out=path,
            check_oracle=not args.no_oracle_check,
            exclude=texts_in(task, [d / f"{task}{adapter.suffix}" for d in args.exclude]),
        )  # fmt: skip
        entry = result.counts.to_json() | {"file": str(result.path) if result.path else None}
        report.append(entry)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps({"runs": report}, indent=1) + "\n", encoding="utf-8")
    print(format_table(report))
    print(f"wrote {out}/report.json")
    return 0


def _comma_list(text: str) -> list[str]:
    """The items of a comma-separated option, blanks dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError as e:
        raise EnvError(f"--difficulty takes levels 1-3 separated by commas, e.g. 1,2; got {text!r}.") from e
    if not levels or any(level not in DIFFICULTIES for level in levels):
        raise EnvError(f"--difficulty takes levels 1-3 separated by commas, e.g. 1,2; got {text!r}.")
    return levels


def make_adapter(task: str, data: DataRoot, *, backend: str | None = None) -> TaskAdapter:
    """The validation adapter of a task."""
    if task == "db":
        from agentrl_envs.synth.db import DBAdapter

        return DBAdapter(data, **({"backend": backend} if backend else {}))
    if task == "os":
        from agentrl_envs.synth.shell import OSAdapter

        return OSAdapter(data)
    from agentrl_envs.synth.kg import KGAdapter

    return KGAdapter(data)


def make_generator(task: TaskName, data: DataRoot, args: argparse.Namespace) -> Generator:
    """The procedural generator of a task, or the LLM mode."""
    if args.generator == "llm":
        from agentrl_envs.synth.llm import LLMGenerator

        if not args.base_url or not args.model:
            raise EnvError("--generator llm needs --base-url (an OpenAI-compatible endpoint) and --model.")
        api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
        return LLMGenerator(task, data, base_url=args.base_url, model=args.model, api_key=api_key, seed=args.seed)
    if task == "db":
        from agentrl_envs.synth.db import DBGenerator

        types = _comma_list(args.types) if args.types else None
        return DBGenerator(data, seed=args.seed, types=types)
    if task == "os":
        from agentrl_envs.synth.shell import OSGenerator

        return OSGenerator(seed=args.seed)
    from agentrl_envs.synth.kg import KGGenerator

    return KGGenerator(data, seed=args.seed)


def format_table(report: list[dict[str, Any]]) -> str:
    """The counts as a plain-text table, one row per (task, generator)."""
    lines = [
        f"{'task':5} {'generator':11} {'generated':>9} {'validated':>9} {'kept':>5} {'oracle':>6}  rejected by reason"
    ]
    for entry in report:
        oracle = "-" if entry["oracle_success"] is None else f"{entry['oracle_success']:.0%}"
        reasons = ", ".join(f"{k} {v}" for k, v in entry["rejected"].items()) or "-"
        lines.append(
            f"{entry['task']:5} {entry['generator']:11} {entry['generated']:>9} {entry['validated']:>9} "
            f"{entry['kept']:>5} {oracle:>6}  {reasons}"
        )
    return "\n".join(lines)
