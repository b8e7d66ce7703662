"""Evaluate a checkpoint in process: its success per task and, for BFCL, its accuracy in BFCL's terms.

The episodes are played exactly as training plays them (``run_episode``: the tokenizer's chat template,
token-level generation by a rollout engine, tool calls parsed from the tokens), so a learning benchmark can
score the checkpoints it trains on held-out tasks without serving them. The results have the shape of
``agentrl-eval``'s ``results.json`` (``tasks``, ``average``, and ``bfcl`` when BFCL categories are played).

    python -m agentrl_trainer.evaluate CHECKPOINT --tasks bfcl --limit 20 --output runs/bfcl.json

A served checkpoint (vLLM, ``python -m agentrl_trainer.engines.serve --model CHECKPOINT``) is evaluated with
``agentrl-eval --agent openai --tasks bfcl`` instead; see docs/envs/bfcl.md.

Token-level episodes render the tools once, at reset; tools a task adds mid-episode (BFCL ``miss_func``)
are parsed when the model calls them but are not shown to it, unlike an OpenAI-compatible server, which
receives each request's tools.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl_envs.core.protocols import AsyncToolEnv, EnvFactory
from agentrl_envs.core.registry import expand_tasks, resolve_task
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import summarize
from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.envs import make_env_factory
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.types import TrainingRow

__all__ = ["aevaluate", "evaluate_checkpoint", "main"]

logger = logging.getLogger(__name__)

DEFAULT_LIMITS = EpisodeLimits(max_turns=200, max_new_tokens=512, max_total_tokens=32768, unfinished_penalty=0.0)
"""Room for BFCL's longest entries: up to 8 user turns of up to 21 steps each."""


async def aevaluate(
    engine: RolloutEngine,
    tokenizer: Any,
    tasks: Sequence[str] = ("bfcl",),
    *,
    split: str = "test",
    limit: int | None = None,
    limits: EpisodeLimits = DEFAULT_LIMITS,
    concurrency: int = 4,
    env_factory: EnvFactory | None = None,
) -> dict[str, Any]:
    """Play every selected sample of ``tasks`` once with ``engine``.

    Args:
        engine: The rollout engine holding the checkpoint.
        tokenizer: Its tokenizer (chat template and tool-call parsing).
        tasks: Task names or groups (``bfcl`` is BFCL's four multi-turn categories).
        split: The split of every task.
        limit: Play only the first ``limit`` samples of each task.
        limits: Turn and token limits per episode.
        concurrency: Episodes in flight (and environments per task).
        env_factory: ``(task, split) -> env``; default the registered tasks.

    Returns:
        ``{"tasks": {...}, "average": ..., "bfcl": {...}}`` as ``agentrl-eval`` writes them.
    """
    make_env = env_factory or make_env_factory()
    names = [resolve_task(name)[0].short_name for name in expand_tasks(",".join(tasks))]
    records: list[EpisodeRecord] = []
    planned: dict[str, int] = {}
    for task in names:
        envs: asyncio.Queue[AsyncToolEnv] = asyncio.Queue()
        for _ in range(concurrency):
            envs.put_nowait(await asyncio.to_thread(make_env, task, split))
        first = await envs.get()
        total = int(first.num_samples())
        envs.put_nowait(first)
        indices = list(range(total))[:limit]
        planned[task] = len(indices)

        async def play(index: int, task: str = task, envs: asyncio.Queue[AsyncToolEnv] = envs) -> EpisodeRecord:
            env = await envs.get()
            try:
                row = TrainingRow(task, split, index)
                trajectory = await run_episode(row, env, tokenizer=tokenizer, pick_engine=lambda: engine, limits=limits)
            finally:
                envs.put_nowait(env)
            record = EpisodeRecord(task=task, split=split, index=index, run=0, status=trajectory.status)
            record.score, record.infra_error = trajectory.score, trajectory.infra_error
            record.rewards, record.messages = [trajectory.env_reward], trajectory.messages
            return record

        try:
            records += await asyncio.gather(*(play(index) for index in indices))
        finally:
            while not envs.empty():
                await asyncio.to_thread(envs.get_nowait().close)
        logger.info("%s: %d episodes", task, len(indices))
    return summarize(records, planned, runs=1)


def evaluate_checkpoint(
    checkpoint: str | Path,
    tasks: Sequence[str] = ("bfcl",),
    *,
    limit: int | None = None,
    temperature: float = 1.0,
    limits: EpisodeLimits = DEFAULT_LIMITS,
    concurrency: int = 4,
) -> dict[str, Any]:
    """Load a transformers checkpoint and evaluate it on ``tasks`` (see :func:`aevaluate`).

    Args:
        checkpoint: A directory ``from_pretrained`` loads (model and tokenizer with a chat template).
        tasks: Task names or groups; default BFCL's multi-turn categories.
        limit: Samples per task (default all).
        temperature: Sampling temperature (the engine samples; no greedy decoding).
        limits: Turn and token limits per episode.
        concurrency: Episodes in flight.
    """
    from transformers import AutoModelForCausalLM

    from agentrl_trainer.engines.hf import HFEngine
    from agentrl_trainer.tiny import load_tokenizer

    tokenizer = load_tokenizer(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    engine = HFEngine(
        model,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=temperature,
        copy_model=False,
    )

    async def run() -> dict[str, Any]:
        try:
            return await aevaluate(engine, tokenizer, tasks, limit=limit, limits=limits, concurrency=concurrency)
        finally:
            await engine.aclose()

    return asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    """``python -m agentrl_trainer.evaluate CHECKPOINT``: print (and write) the results as JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m agentrl_trainer.evaluate", description=(__doc__ or "").partition("\n")[0]
    )
    parser.add_argument("checkpoint", help="model directory (from_pretrained), e.g. a trainer's checkpoint-N")
    parser.add_argument("--tasks", default="bfcl", help="comma-separated tasks or groups (default bfcl)")
    parser.add_argument("--limit", type=int, help="samples per task (default all)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=DEFAULT_LIMITS.max_new_tokens)
    parser.add_argument("--max-total-tokens", type=int, default=DEFAULT_LIMITS.max_total_tokens)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--output", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    limits = EpisodeLimits(
        max_turns=DEFAULT_LIMITS.max_turns,
        max_new_tokens=args.max_new_tokens,
        max_total_tokens=args.max_total_tokens,
        unfinished_penalty=0.0,
    )
    results = evaluate_checkpoint(
        args.checkpoint,
        args.tasks.split(","),
        limit=args.limit,
        temperature=args.temperature,
        limits=limits,
        concurrency=args.concurrency,
    )
    text = json.dumps(results, indent=2)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n", encoding="utf-8")
    print(text)  # noqa: T201 - a CLI
    return 0


if __name__ == "__main__":
    sys.exit(main())
