"""``agentrl-eval``: evaluate an agent on AgentBench tasks and write ``results.json`` + ``episodes.jsonl``.

``agentrl-eval compare DIR [DIR...]`` tables and plots several runs (:mod:`agentrl_envs.eval.compare`).

Exit codes: 0 done; 1 the evaluation could not run or produced nothing (an environment could not be made, the
model endpoint is unreachable, failing or refused the key/URL/model, every episode was cancelled or hit an
infrastructure error); 2 bad flags (or an ``--output`` that holds a run); 130 interrupted (Ctrl-C), after
writing what finished.
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
from agentrl_envs.core.errors import AgentRLError, DataError, EnvError, UnknownTaskError
from agentrl_envs.core.registry import TASKS, expand_tasks, resolve_task
from agentrl_envs.eval.agents import Agent, AgentFactory, MixedAgent, OracleAgent, RandomAgent
from agentrl_envs.eval.help_format import DefaultsHelpFormatter
from agentrl_envs.eval.openai_agent import OpenAIAgent, OpenAIChatClient, RetryPolicy
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import EpisodeWriter, print_table, summarize, write_results
from agentrl_envs.eval.runconfig import data_commit, now, package_versions
from agentrl_envs.eval.rundir import OutputMode, prepare_output
from agentrl_envs.eval.runner import Evaluation, TaskPlan

__all__ = ["DefaultsHelpFormatter", "build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="agentrl-eval",
        description="Evaluate an agent on AgentBench-FC tasks; writes DIR/results.json and DIR/episodes.jsonl. "
        "'agentrl-eval compare DIR [DIR...]' tables and plots several runs.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "--tasks",
        required=True,
        help="comma-separated task names: short names (db,kg), upstream names (dbbench-dev), bfcl (its 4 categories), "
        "tasks registered with agentrl_envs.register_task or the agentrl_envs.tasks entry point, or module:Class",
    )
    parser.add_argument("--split", choices=("test", "dev", "train"), help="default: test (or the upstream name's)")
    parser.add_argument(
        "--agent", choices=("oracle", "random", "openai"), default="oracle", help="who plays the episodes"
    )
    model = parser.add_argument_group("openai agent")
    model.add_argument(
        "--base-url",
        action="append",
        help="API root of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1; once for all models, or once "
        "per --model (in the same order) when they are served apart",
    )
    model.add_argument(
        "--model",
        action="append",
        help="model name sent with the requests; give it twice or more to pick the model per turn (cross-sampling)",
    )
    model.add_argument(
        "--model-weights", help="with several --model: each model's share of turns, e.g. 3,1 (default: equal)"
    )
    model.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY)")
    model.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    model.add_argument("--top-p", type=float, help="nucleus sampling (default: the server's)")
    model.add_argument("--max-tokens", type=int, help="completion length limit per turn")
    model.add_argument("--request-timeout", type=float, default=300.0, help="seconds per request")
    model.add_argument("--max-retries", type=int, default=5, help="retries on 429/5xx/transport errors")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="episodes (and envs per task) in flight; 16 suits an API server"
    )
    parser.add_argument("--runs", type=int, default=1, help="times each sample is played (mean, std and pass@k)")
    parser.add_argument("--output", type=Path, help="output directory (default: runs/eval-<UTC time>)")
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true", help="replace the run an --output already holds")
    existing.add_argument(
        "--resume", action="store_true", help="finish the run in --output: play only the episodes it lacks"
    )
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
    parser.add_argument("--seed", type=int, default=0, help="seed of the random agent and of the per-turn model choice")
    parser.add_argument(
        "--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="logs go to stderr"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agentrl-eval`` (or ``agentrl-eval compare``); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["compare"]:
        from agentrl_envs.eval.compare import main as compare_main  # matplotlib only when comparing

        return compare_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    stderr = Console(stderr=True)
    logging.basicConfig(level=args.log_level, handlers=[RichHandler(console=stderr)], format="%(message)s")
    output = args.output or Path("runs") / f"eval-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    try:
        plans = _plans(args)
        _check_agent_flags(args, plans)
        config = _config(args, plans)
        kept = prepare_output(output, config, _output_mode(args))
    except (AgentRLError, ValueError) as e:
        parser.print_usage(sys.stderr)
        stderr.print(f"[red]agentrl-eval: error:[/red] {e}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    session = _Session(plans=plans, runs=args.runs, writer=EpisodeWriter(output, append=True), kept=kept)
    if kept:
        stderr.print(f"Resuming {output}: {len(kept)} finished episodes kept.", highlight=False, soft_wrap=True)
    began = time.perf_counter()
    try:
        code = asyncio.run(_evaluate(args, session, stderr))
    except KeyboardInterrupt:
        stderr.print("[yellow]Interrupted: keeping the episodes that finished.[/yellow]")
        code = EXIT_INTERRUPTED
    finally:
        session.writer.close()
    records = [*session.kept, *session.records]
    if code != EXIT_OK and not records:  # nothing ran: no results to write, nothing to block a rerun
        return code
    planned = session.planned or {p.name: 0 for p in plans}
    results = summarize(records, planned, args.runs, engines=session.engines)
    for name, figures in results["tasks"].items():
        if name in config["tasks"]:
            config["tasks"][name].update(fidelity=figures["fidelity"], backend=figures["backend"], n=figures["n"])
    if session.data is not None:
        config["data"] = data_commit(session.data)
    config["finished_at"] = now()
    path = write_results(output, {**results, "config": config})
    stdout = Console()
    print_table(results, stdout if stdout.is_terminal else Console(width=160))  # a pipe or file gets whole rows
    elapsed_s = time.perf_counter() - began
    stderr.print(f"{len(session.records)} episodes in {elapsed_s:.1f}s; wrote {path}", highlight=False, soft_wrap=True)
    if code == EXIT_OK and records and not any(r.is_finished for r in records):
        stderr.print(
            "[red]agentrl-eval: failed:[/red] no episode finished: every one was cancelled (the model endpoint "
            "stopped answering) or hit an infrastructure error; see the errors in episodes.jsonl, then --resume.",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_FAILED
    return code


def _output_mode(args: argparse.Namespace) -> OutputMode:
    return "resume" if args.resume else "overwrite" if args.overwrite else "new"


def _config(args: argparse.Namespace, plans: list[TaskPlan]) -> dict[str, Any]:
    """The ``config`` block of ``results.json`` (fidelity, backend and ``n`` per task are filled in at the end)."""
    is_openai = args.agent == "openai"
    return {
        "agent": args.agent,
        "models": list(args.model or []) if is_openai else [],
        "model_weights": _model_weights(args) if is_openai else None,
        "base_url": args.base_url[0] if is_openai else None,
        "base_urls": _base_urls(args) if is_openai else [],
        "sampling": _sampling(args) if is_openai else {},
        "controller": args.controller,
        "tasks": {
            plan.name: {
                "split": plan.split,
                "options": {k: v for k, v in plan.env_options.items() if k not in ("token", "controller_url")},
                "indices": list(plan.indices) if plan.indices is not None else None,
                "limit": plan.limit,
                "backend": plan.env_options.get("backend"),
                "fidelity": None,
                "n": None,
            }
            for plan in plans
        },
        "runs": args.runs,
        "seed": args.seed,
        "concurrency": args.concurrency,
        "versions": package_versions(),
        "data": data_commit(None),  # what the envs read, filled in once they are made
        "started_at": now(),
        "argv": sys.argv[1:],
    }


@dataclass
class _Session:
    """What outlives the event loop, so Ctrl-C keeps the finished episodes."""

    plans: list[TaskPlan]
    runs: int
    writer: EpisodeWriter
    kept: list[EpisodeRecord] = field(default_factory=list)
    """Episodes an earlier run finished (``--resume``)."""
    records: list[EpisodeRecord] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)
    engines: dict[str, dict[str, str | None]] = field(default_factory=dict)
    data: DataRoot | None = None
    """The data root the envs read."""


async def _evaluate(args: argparse.Namespace, session: _Session, console: Console) -> int:
    clients = _openai_clients(args) if args.agent == "openai" else []
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
        session.plans,
        _agent_factory(args, clients),
        concurrency=args.concurrency,
        runs=args.runs,
        on_episode=finished,
        skip={record.key for record in session.kept},
    )
    try:
        with progress:
            bar = progress.add_task("checking the model endpoint" if clients else "starting environments", total=None)
            for client in clients:
                await client.check()
                progress.update(bar, description="starting environments")
            try:
                await evaluation.prepare()
            except (EnvError, DataError) as e:
                # escape(): an error's text is printed as is; rich would take "[alfworld]" for markup and drop it
                console.print(f"[red]agentrl-eval: error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
                return EXIT_USAGE
            session.planned = evaluation.planned_samples()
            session.engines = {
                name: {"fidelity": info.fidelity, "backend": info.backend}
                for name, info in evaluation.task_envs.items()
            }
            session.data = next(
                (
                    info.data
                    for name, info in evaluation.task_envs.items()
                    if info.data is not None and name in TASKS and TASKS[name].benchmark == "agentbench"
                ),
                None,
            )  # the AgentBench data root (BFCL's tree, read by its tasks, is no AgentBench commit)
            progress.update(bar, total=evaluation.total, description="episodes")
            await evaluation.run()
    except AgentRLError as e:  # AgentConfigError, or an environment that cannot be made at all
        console.print(f"[red]agentrl-eval: failed:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        return EXIT_FAILED
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
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
    tasks = [_task_name(name, is_remote=bool(args.controller)) for name in names]
    # Only AgentBench tasks read the AgentBench data root: BFCL reads its own fetched tree, tasks of one's own and
    # names only a controller knows read none, and a controller reads its own.
    needs_data_root = [name in TASKS and TASKS[name].benchmark == "agentbench" for name, _ in tasks]
    if any(needs_data_root) and (args.data_root or not args.controller):
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
    for name, (short_name, implied_split), needs_root in zip(names, tasks, needs_data_root, strict=True):
        if args.split and implied_split and args.split != implied_split:
            raise EnvError(f"{name!r} names the {implied_split} split but --split says {args.split}; drop one.")
        if any(p.name == short_name for p in plans):
            raise EnvError(f"Task {short_name!r} is given twice in --tasks.")
        split = args.split or implied_split or "test"
        if short_name in TASKS and split not in TASKS[short_name].splits:
            raise EnvError(f"Task {short_name!r} has no {split} split; it has {list(TASKS[short_name].splits)}.")
        task_options = dict(env_options)
        if args.data_root and needs_root:
            task_options["data_root"] = args.data_root
        plans.append(TaskPlan(short_name, split, task_options, indices, args.limit))
    if not plans:
        raise EnvError("--tasks is empty; give e.g. --tasks db.")
    return plans


def _task_name(name: str, *, is_remote: bool) -> tuple[str, str | None]:
    """A ``--tasks`` entry's short name and the split it implies.

    Under ``--controller`` a name this machine does not know is sent as is: the controller may serve it.

    Raises:
        UnknownTaskError: For an unknown or not yet implemented task (run locally).
    """
    try:
        spec, implied_split = resolve_task(name)
    except UnknownTaskError:
        if is_remote and ":" not in name:
            return name, None
        raise
    if spec.entry_point is None and not is_remote:  # a controller may serve it from elsewhere
        implemented = [t.short_name for t in TASKS.values() if t.entry_point]
        raise UnknownTaskError(f"Task {spec.short_name!r} is not implemented yet; available: {implemented}.")
    return spec.short_name, implied_split


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
        if len(args.base_url) not in (1, len(args.model)):
            raise EnvError(
                f"--base-url is given {len(args.base_url)} times for {len(args.model)} --model; give it once (one "
                "server for every model) or once per model, in the same order."
            )
        if len(set(args.model)) != len(args.model):
            raise EnvError(f"--model is given twice with the same name: {args.model}; use --model-weights to weigh.")
        _model_weights(args)
    elif args.model or args.model_weights or args.base_url:
        raise EnvError(f"--base-url, --model and --model-weights are for --agent openai, not --agent {args.agent}.")
    if args.agent == "oracle":
        without = [plan.name for plan in plans if plan.name not in TASKS or TASKS[plan.name].oracle is None]
        if without:
            raise UnknownTaskError(f"No oracle for task(s) {without}; use --agent random or openai.")


def _model_weights(args: argparse.Namespace) -> list[float] | None:
    """``--model-weights`` as one weight per ``--model``; ``None`` if not given."""
    if not args.model_weights:
        return None
    try:
        weights = [float(w) for w in args.model_weights.split(",")]
    except ValueError:
        raise EnvError(f"--model-weights {args.model_weights!r} is not a list of numbers like 3,1.") from None
    if len(weights) != len(args.model or []) or len(weights) < 2:
        raise EnvError(
            f"--model-weights gives {len(weights)} weights for {len(args.model or [])} --model; give one per model "
            "(and two or more models)."
        )
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise EnvError(f"--model-weights must be >= 0 and not all 0, got {weights}.")
    return weights


def _sampling(args: argparse.Namespace) -> dict[str, Any]:
    pairs = (("temperature", args.temperature), ("top_p", args.top_p), ("max_tokens", args.max_tokens))
    return {key: value for key, value in pairs if value is not None}


def _base_urls(args: argparse.Namespace) -> list[str]:
    """The endpoint of each ``--model``, in order."""
    return list(args.base_url) if len(args.base_url) > 1 else [args.base_url[0]] * len(args.model)


def _openai_clients(args: argparse.Namespace) -> list[OpenAIChatClient]:
    """One client per ``--model``, each on its endpoint."""
    return [
        OpenAIChatClient(
            base_url=base_url,
            model=model,
            api_key=args.api_key or os.environ.get("OPENAI_API_KEY"),
            sampling=_sampling(args),
            timeout_s=args.request_timeout,
            max_connections=args.concurrency,
            retry=RetryPolicy(max_retries=args.max_retries),
        )
        for model, base_url in zip(args.model, _base_urls(args), strict=True)
    ]


def _agent_factory(args: argparse.Namespace, clients: list[OpenAIChatClient]) -> AgentFactory:
    if len(clients) == 1:
        return lambda task, split: OpenAIAgent(clients[0])
    if clients:

        def mixed(task: str, split: str) -> Agent:
            agents = [OpenAIAgent(client) for client in clients]
            return MixedAgent(agents, args.model, weights=_model_weights(args), seed=args.seed)

        return mixed
    if args.agent == "random":
        return lambda task, split: RandomAgent(seed=args.seed)
    options = _parse_options(args.option)

    def oracle(task: str, split: str) -> OracleAgent:
        data_root = args.data_root if TASKS[task].benchmark == "agentbench" else None
        return OracleAgent(task, split=split, data_root=data_root, **options)

    return oracle
