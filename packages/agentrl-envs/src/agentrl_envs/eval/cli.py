"""``agentrl-eval``: evaluate an agent on AgentBench tasks and write ``results.json`` + ``episodes.jsonl``.

Exit codes: 0 done; 1 the evaluation could not run (an environment could not be made, the model endpoint
refused the key/URL/model); 2 bad flags; 130 interrupted (Ctrl-C), after writing what finished.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import AgentRLError, EnvError, UnknownTaskError
from agentrl_envs.core.registry import TASKS, expand_tasks, resolve_task
from agentrl_envs.eval.agents import AgentFactory, OracleAgent, RandomAgent
from agentrl_envs.eval.openai_agent import OpenAIAgent, OpenAIChatClient, RetryPolicy
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import EpisodeWriter, print_table, summarize, write_results
from agentrl_envs.eval.runner import Evaluation, TaskPlan

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="agentrl-eval",
        description="Evaluate an agent on AgentBench-FC tasks; writes DIR/results.json and DIR/episodes.jsonl.",
    )
    parser.add_argument(
        "--tasks", required=True, help="comma-separated task names: db,kg or dbbench-dev or bfcl (its 4 categories)"
    )
    parser.add_argument("--split", choices=("test", "dev", "train"), help="default: test (or the upstream name's)")
    parser.add_argument("--agent", choices=("oracle", "random", "openai"), default="oracle")
    model = parser.add_argument_group("openai agent")
    model.add_argument("--base-url", help="API root of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    model.add_argument("--model", help="model name sent with every request")
    model.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY)")
    model.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    model.add_argument("--top-p", type=float, help="nucleus sampling (default: the server's)")
    model.add_argument("--max-tokens", type=int, help="completion length limit per turn")
    model.add_argument("--request-timeout", type=float, default=300.0, help="seconds per request (default 300)")
    model.add_argument("--max-retries", type=int, default=5, help="retries on 429/5xx/transport errors (default 5)")
    parser.add_argument("--concurrency", type=int, default=1, help="episodes (and envs per task) in flight")
    parser.add_argument("--runs", type=int, default=1, help="times each sample is played (mean and std over runs)")
    parser.add_argument("--output", type=Path, help="output directory (default: runs/eval-<UTC time>)")
    parser.add_argument("--limit", type=int, help="play only the first N selected samples")
    parser.add_argument("--indices", help="sample indices to play, e.g. 0,5,9 or 0-9")
    parser.add_argument("--backend", help="the task's backend where it has several (db: sqlite, mariadb)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="task option for the env and oracle, e.g. train_file=path.jsonl (repeatable; VALUE is JSON or text)",
    )
    parser.add_argument("--data-root", help="AgentBench data root (default: $AGENTRL_DATA_ROOT)")
    parser.add_argument(
        "--controller",
        metavar="URL",
        help="run the episodes on an agentrl-controller, e.g. http://127.0.0.1:5020/api (default: in process)",
    )
    parser.add_argument("--controller-token", help="the controller's bearer token (default: $AGENTRL_CONTROLLER_TOKEN)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent (default 0)")
    parser.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agentrl-eval``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    stderr = Console(stderr=True)
    logging.basicConfig(level=args.log_level, handlers=[RichHandler(console=stderr)], format="%(message)s")
    try:
        plans = _plans(args)
        _check_agent_flags(args, plans)
    except (AgentRLError, ValueError) as e:
        parser.print_usage(sys.stderr)
        stderr.print(f"[red]agentrl-eval: error:[/red] {e}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    output = args.output or Path("runs") / f"eval-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    session = _Session(plans=plans, runs=args.runs, writer=EpisodeWriter(output))
    began = time.perf_counter()
    try:
        code = asyncio.run(_evaluate(args, session, stderr))
    except KeyboardInterrupt:
        stderr.print("[yellow]Interrupted: keeping the episodes that finished.[/yellow]")
        code = EXIT_INTERRUPTED
    finally:
        session.writer.close()
    results = summarize(session.records, session.planned or {p.name: 0 for p in plans}, args.runs)
    path = write_results(output, results)
    print_table(results, Console())
    elapsed_s = time.perf_counter() - began
    stderr.print(f"{len(session.records)} episodes in {elapsed_s:.1f}s; wrote {path}", highlight=False, soft_wrap=True)
    return code


@dataclass
class _Session:
    """What outlives the event loop, so Ctrl-C keeps the finished episodes."""

    plans: list[TaskPlan]
    runs: int
    writer: EpisodeWriter
    records: list[EpisodeRecord] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)


async def _evaluate(args: argparse.Namespace, session: _Session, console: Console) -> int:
    client = _openai_client(args) if args.agent == "openai" else None
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )

    def finished(record: EpisodeRecord) -> None:
        session.records.append(record)
        session.writer.write(record)
        successes = sum(r.success for r in session.records)
        progress.update(bar, advance=1, description=f"episodes ({successes} succeeded)")

    evaluation = Evaluation(
        session.plans, _agent_factory(args, client), concurrency=args.concurrency, runs=args.runs, on_episode=finished
    )
    try:
        with progress:
            bar = progress.add_task("starting environments", total=None)
            try:
                await evaluation.prepare()
            except EnvError as e:
                # escape(): an error's text is printed as is; rich would take "[alfworld]" for markup and drop it
                console.print(f"[red]agentrl-eval: error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
                return EXIT_USAGE
            session.planned = evaluation.planned_samples()
            progress.update(bar, total=evaluation.total, description="episodes")
            await evaluation.run()
    except AgentRLError as e:  # AgentConfigError, or an environment that cannot be made at all
        console.print(f"[red]agentrl-eval: failed:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        return EXIT_FAILED
    finally:
        if client is not None:
            await client.aclose()
    return EXIT_OK


def _plans(args: argparse.Namespace) -> list[TaskPlan]:
    """One plan per ``--tasks`` entry.

    Raises:
        UnknownTaskError: For an unknown or not yet implemented task.
        EnvError: For conflicting or malformed flags.
        DataError: If the data root is missing.
    """
    for flag in ("concurrency", "runs"):
        if getattr(args, flag) < 1:
            raise EnvError(f"--{flag} must be at least 1, got {getattr(args, flag)}.")
    if args.limit is not None and args.limit < 1:
        raise EnvError(f"--limit must be at least 1, got {args.limit}.")
    names = expand_tasks(args.tasks)
    needs_data_root = [resolve_task(name)[0].benchmark == "agentbench" for name in names]
    if any(needs_data_root):
        DataRoot.find(args.data_root)
    indices = _parse_indices(args.indices) if args.indices else None
    options = _parse_options(args.option)
    if args.backend:
        options["backend"] = args.backend
    env_options = dict(options)
    if args.controller:
        if args.backend or options:
            raise EnvError("--backend and --option configure the controller's tasks, not --controller runs; drop them.")
        env_options["controller_url"] = args.controller
        token = args.controller_token or os.environ.get("AGENTRL_CONTROLLER_TOKEN")
        if token:
            env_options["token"] = token
    plans: list[TaskPlan] = []
    for name, needs_root in zip(names, needs_data_root, strict=True):
        spec, implied_split = resolve_task(name)
        if spec.entry_point is None and not args.controller:  # a controller may serve it from elsewhere
            implemented = [t.short_name for t in TASKS.values() if t.entry_point]
            raise UnknownTaskError(f"Task {spec.short_name!r} is not implemented yet; available: {implemented}.")
        if args.split and implied_split and args.split != implied_split:
            raise EnvError(f"{name!r} names the {implied_split} split but --split says {args.split}; drop one.")
        if any(p.name == spec.short_name for p in plans):
            raise EnvError(f"Task {spec.short_name!r} is given twice in --tasks.")
        split = args.split or implied_split or "test"
        if split not in spec.splits:
            raise EnvError(f"Task {spec.short_name!r} has no {split} split; it has {list(spec.splits)}.")
        task_options = dict(env_options)
        if args.data_root and needs_root:  # the AgentBench data root; BFCL reads its own fetched tree
            task_options["data_root"] = args.data_root
        plans.append(TaskPlan(spec.short_name, split, task_options, indices, args.limit))
    if not plans:
        raise EnvError("--tasks is empty; give e.g. --tasks db.")
    return plans


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` flags into task options; a VALUE that parses as JSON is taken as JSON."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip().isidentifier():
            raise EnvError(f"--option {pair!r} is not KEY=VALUE (e.g. --option train_file=train.jsonl).")
        if key.strip() in ("split", "data_root", "backend"):
            raise EnvError(f"--option {key.strip()}=... has its own flag: use --{key.strip().replace('_', '-')}.")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def _parse_indices(text: str) -> tuple[int, ...]:
    """``0,5,9`` or ranges ``0-9`` (inclusive) into indices."""
    indices: list[int] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        first, dash, last = part.partition("-")
        try:
            indices += range(int(first), int(last) + 1) if dash else [int(part)]
        except ValueError:
            raise EnvError(f"--indices: {part!r} is not an index or a range like 0-9.") from None
    return tuple(indices)


def _check_agent_flags(args: argparse.Namespace, plans: list[TaskPlan]) -> None:
    if args.agent == "openai":
        missing = [flag for flag, value in (("--base-url", args.base_url), ("--model", args.model)) if not value]
        if missing:
            raise EnvError(f"--agent openai needs {' and '.join(missing)} (e.g. --base-url http://127.0.0.1:8000/v1).")
        if args.max_retries < 0:
            raise EnvError(f"--max-retries must be at least 0, got {args.max_retries}.")
    if args.agent == "oracle":
        without = [plan.name for plan in plans if TASKS[plan.name].oracle is None]
        if without:
            raise UnknownTaskError(f"No oracle for task(s) {without}; use --agent random or openai.")


def _openai_client(args: argparse.Namespace) -> OpenAIChatClient:
    sampling = {
        key: value
        for key, value in (("temperature", args.temperature), ("top_p", args.top_p), ("max_tokens", args.max_tokens))
        if value is not None
    }
    return OpenAIChatClient(
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key or os.environ.get("OPENAI_API_KEY"),
        sampling=sampling,
        timeout_s=args.request_timeout,
        max_connections=args.concurrency,
        retry=RetryPolicy(max_retries=args.max_retries),
    )


def _agent_factory(args: argparse.Namespace, client: OpenAIChatClient | None) -> AgentFactory:
    if client is not None:
        return lambda task, split: OpenAIAgent(client)
    if args.agent == "random":
        return lambda task, split: RandomAgent(seed=args.seed)
    options = _parse_options(args.option)

    def oracle(task: str, split: str) -> OracleAgent:
        data_root = args.data_root if TASKS[task].benchmark == "agentbench" else None
        return OracleAgent(task, split=split, data_root=data_root, **options)

    return oracle
