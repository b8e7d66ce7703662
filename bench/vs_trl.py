"""AgentRL against TRL itself: the same tiny model, tasks, hardware and budgets, side by side in one invocation.

Trainers, each training the same warm-started tiny Qwen2 on the real ``db`` (SQLite backend) and ``kg`` tasks
(dev split), every environment step delayed by the same heavy-tailed latency (``bench/_envs.StepLatency``):

* ``trl_sync``: TRL's ``GRPOTrainer`` with ``environment_factory={"db": ..., "kg": ...}`` over our envs
  (``agentrl_trainer.trl_env``); rollouts by ``transformers`` generate, as TRL does without vLLM.
* ``trl_async``: TRL's ``trl.experimental.async_grpo.AsyncGRPOTrainer``, built for real; where it cannot run
  the JSON holds ``null`` and the reason its constructor gave.
* ``agentrl_sync`` / ``agentrl_async``: ``AgentRLTrainer`` with the in-process ``hf`` engine, or with
  ``--agentrl-engine hf_process`` its engine process (``transformers`` generate too, in a process of its own, on
  the cores of ``--engine-cpus``: rollouts then stop competing with training for the trainer's threads; its
  start-up, like the in-process engine's, is before the run's clock starts).

Every trainer trains ``--steps`` optimizer steps of ``--groups`` GRPO groups of ``--generations`` episodes (the
async trainer's dynamic batch is pinned to ``--groups`` so all train on the same number of episodes). Reported:
trajectories per second, the trainer's idle fraction (waiting for rollouts), the mean reward of the last third
of the steps, and the tokens of model output that went back through the tokenizer (re-tokenized). TRL's async
worker re-tokenizes the whole conversation every turn; where it cannot run, the tokens it would re-tokenize on
the ``agentrl_async`` episodes are given beside (its ``retokenized_tokens_whole_conversation``).

Before the trainers run, a tiny Qwen2 (hidden 128 x 3 layers, ``words`` tokenizer of 3,072: ``--hidden``,
``--layers``, ``--vocab``, ``--pretokenizer``) is built as ``agentrl-train`` builds one and warmed up by the
project's own SFT stage (:func:`~agentrl_trainer.sft.warmup.run_sft_warmup`) on oracle transcripts of
*synthesized training tasks* (``agentrl-envs synth --task db,kg --n 1000 --difficulty 1``, their env's
``train_file``; synthesis drops near-duplicates of every dev and test sample, so the warm start never sees the dev
rows the trainers race on): 500 steps of 8 (``--warm-steps``), learning rate 2e-3 held constant after 20 warm-up
steps (``--warm-lr``), the recipe that taught this model size the tool-call format. Both the synthesized tasks and
the model are cached under ``$AGENTRL_CACHE_DIR`` (``synth/``, ``sft-warmup/``): a later invocation starts at
once. The share of sampled first turns that parse into a tool call is printed after it (``--warm-only`` stops
there); below ``--min-parse`` (0.5) on a task the bench stops, since TRL would end those episodes at the first
turn and the race would not be like for like. Every trainer's parsed tool calls per episode are reported (TRL's
``tools/call_frequency``; for AgentRL its trajectories' actions parsed as rollouts parse them), and so are the
environment steps and their summed latency, and for TRL the time in generation and in tool calls (it calls the
rollouts' tools one after another). A turn is at most 128 new tokens (``--new-tokens``): a DB statement is up to
~110 tokens with this tokenizer, so a smaller budget cuts tool calls.

    uv run python bench/vs_trl.py --quick --warm-only    # the warm start alone (cold: ~11 minutes on 2 cores)
    uv run python bench/vs_trl.py --quick                # one run of each trainer, about 3 minutes once warm
    uv run python bench/vs_trl.py --quick --runs 3       # the figures of docs/benchmarks.md (about 9 minutes)
    uv run python bench/vs_trl.py                        # default sizes: 6 steps of 4 groups of 4, 3 runs

Run it with ``OMP_NUM_THREADS=1`` on a shared machine: torch's default threads oversubscribe a busy core (TRL's
first step took 34.5 s instead of 9.6 s beside another job).

Prints a table per run, the medians, and, last, one JSON line:
``{"trl_sync": {"traj_per_s": .., "reward": ..}, "trl_async": ... or null, "agentrl_sync": ..., "agentrl_async":
..., "ratio_vs_trl_sync": .., ...}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from trl.chat_template_utils import add_response_schema

import agentrl_envs
from _envs import StepLatency
from agentrl_envs.core import InfraError, resolve_cache_dir
from agentrl_trainer import AgentRLConfig, AgentRLTrainer
from agentrl_trainer.cli import ModelArguments, prepare_model
from agentrl_trainer.rollout.chat import parse_assistant, render_prompt
from agentrl_trainer.sft.warmup import run_sft_warmup
from agentrl_trainer.tiny import load_tokenizer
from agentrl_trainer.trl_env import trl_dataset, trl_environment

TASKS = {"db": {"backend": "sqlite"}, "kg": {}}
TRAINERS = ["trl_sync", "trl_async", "agentrl_sync", "agentrl_async"]


# -- environments: the registered task with the bench's step latency, the same class for every trainer ---------


def env_factory(task: str) -> Callable[..., Any]:
    """``split -> env`` for ``task``: the registered env class with :class:`StepLatency` mixed in."""
    base = type(agentrl_envs.make(task, split="dev", **TASKS[task]).unwrapped)
    slow = type(f"Slow{base.__name__}", (StepLatency, base), {})

    def make(split: str = "dev", **options: Any) -> Any:
        return slow(split=split, **{**TASKS[task], **options})

    return make


# -- the shared starting point: a tiny model that calls the tasks' tools ----------------------------------------


def warm_tasks(args: argparse.Namespace) -> dict[str, Path]:
    """Synthesized training tasks for the warm start, ``task -> train_file`` (``agentrl-envs synth``, cached).

    Synthesis drops near-duplicates of every dev and test sample (docs/synth.md), so the warm start never sees
    the dev rows the trainers then race on.
    """
    out = resolve_cache_dir() / "synth" / f"vs_trl-n{args.warm_n}-seed{args.seed}-d{args.warm_difficulty}"
    files = {task: out / f"{task}{'.jsonl' if task == 'db' else '.json'}" for task in args.tasks.split(",")}
    missing = [task for task, path in files.items() if not path.is_file()]
    if missing:
        subprocess.run(
            [sys.executable, "-m", "agentrl_envs.cli", "synth", "--task", ",".join(missing), "--n", str(args.warm_n),
             "--seed", str(args.seed), "--difficulty", args.warm_difficulty, "--out", str(out)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return files


def warm_start(args: argparse.Namespace, out: Path) -> Any:
    """The tiny model and its SFT warm-up on oracle transcripts of synthesized training tasks (both cached).

    Built as ``agentrl-train`` builds it (:func:`~agentrl_trainer.cli.prepare_model`: the tokenizer's corpus is
    the training tasks' text and oracle moves), then warmed up by
    :func:`~agentrl_trainer.sft.warmup.run_sft_warmup`: it renders each transcript through the chat template
    rollouts use (:func:`~agentrl_trainer.sft.render.render_transcript`), trains with the shared-prefix loss and
    caches the model under ``$AGENTRL_CACHE_DIR/sft-warmup``, keyed by every input: a second invocation with the
    same settings reuses it.
    """
    tasks = args.tasks.split(",")
    files = warm_tasks(args)
    config = AgentRLConfig(
        output_dir=str(out),
        tasks=tasks,
        task_split="train",
        env_kwargs={t: {**TASKS[t], "train_file": str(files[t])} for t in tasks},
        max_total_tokens=4096,
        report_to="none",
        use_cpu=True,
        seed=args.seed,
        sft_warmup={
            "source": "oracle",
            # DB transcripts run the reference statement, then commit the answer read from its result: every
            # transcript makes two tool calls, the moves a race episode needs.
            "oracle_options": {"db": {"show_sql": True}},
            "max_oracle_turns": args.max_turns,  # what a race episode can play
            "min_score": 0.0,  # a KG episode cut at max_turns is not scored a success; its moves are the oracle's
            "max_steps": args.warm_steps,
            # The recipe that taught a 128 x 3 model the format in ~100 steps (docs/benchmarks.md, "Learning on
            # real DB", e3): a constant rate after 20 warm-up steps; a linear decay did not.
            "learning_rate": args.warm_lr,
            "lr_scheduler_type": "constant_with_warmup",
            "warmup_steps": 20,
            "per_device_train_batch_size": 8,
        },
    )
    model = ModelArguments(
        model_name_or_path="tiny", tiny_vocab_size=args.vocab, tiny_hidden_size=args.hidden,
        tiny_num_layers=args.layers, tiny_corpus_samples=200, tiny_pretokenizer=args.pretokenizer,
    )  # fmt: skip
    base, tokenizer = prepare_model(model, config)
    return run_sft_warmup(base, tokenizer, config)


def call_check(model_path: Path, args: argparse.Namespace, samples: int = 4) -> dict[str, float]:
    """Share of first turns, sampled as the trainers sample them, that parse into a tool call, per task.

    Parsed with :func:`~agentrl_trainer.rollout.chat.parse_assistant` (TRL's ``parse_response``, the parser both
    TRL's ``GRPOTrainer`` and AgentRL's rollouts use): an unparsed answer ends a TRL episode at once.
    """
    from transformers import AutoModelForCausalLM

    tokenizer = add_response_schema(load_tokenizer(model_path))
    model = AutoModelForCausalLM.from_pretrained(model_path).eval()
    torch.manual_seed(args.seed)
    shares = {}
    for task in args.tasks.split(","):
        env = env_factory(task)()
        calls = total = 0
        try:
            for index in range(args.samples):
                try:
                    first, info = env.reset(options={"index": index})
                except InfraError:  # a sample that cannot start (DB dev 5): the trainers leave it out too
                    continue
                prompt = render_prompt(tokenizer, first, info["tools"])
                with torch.no_grad():
                    out = model.generate(
                        torch.tensor([prompt]), do_sample=True, temperature=1.0, max_new_tokens=args.new_tokens,
                        num_return_sequences=samples, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id,
                    )  # fmt: skip
                for row in out[:, len(prompt) :].tolist():
                    ids = row[: row.index(tokenizer.eos_token_id) + 1] if tokenizer.eos_token_id in row else row
                    calls += bool(parse_assistant(tokenizer, ids, prompt, info["tools"], 0).get("tool_calls"))
                    total += 1
        finally:
            env.close()
        shares[task] = calls / max(total, 1)
    return shares


# -- measurement helpers ----------------------------------------------------------------------------------------


class TokenizerCounter:
    """Counts tokens the tokenizer produced from conversations holding a model-written assistant message.

    Both trainers render tool results after a one-message *dummy* conversation (``user: dummy``) to get the
    suffix ids; those calls hold no model output. Any other tokenizing call with an assistant message in it
    re-tokenizes what the model wrote.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.retokenized_tokens, self.tokenized_tokens = tokenizer, 0, 0
        self._original = tokenizer.apply_chat_template

    def __enter__(self) -> TokenizerCounter:
        def counted(conversation: Any, *args: Any, **kwargs: Any) -> Any:
            result = self._original(conversation, *args, **kwargs)
            if kwargs.get("tokenize", True):
                self._count(conversation, result)
            return result

        self.tokenizer.apply_chat_template = counted
        return self

    def __exit__(self, *exc: object) -> None:
        self.tokenizer.apply_chat_template = self._original

    def _count(self, conversation: Any, result: Any) -> None:
        conversations = conversation if conversation and isinstance(conversation[0], list) else [conversation]
        ids = result["input_ids"] if isinstance(result, dict) else result
        rows = ids if ids and isinstance(ids[0], list) else [ids]
        for messages, row in zip(conversations, rows, strict=False):
            self.tokenized_tokens += len(row)
            is_dummy = messages and messages[0].get("content") == "dummy"
            if not is_dummy and any(m.get("role") == "assistant" for m in messages):
                self.retokenized_tokens += len(row)


def whole_conversation_tokens(trajectories: list[Any]) -> int:
    """Tokens a loop that re-tokenizes the whole conversation each turn re-reads: every turn after the first
    tokenizes the prompt and all earlier turns again (the new environment message is fresh, not counted)."""
    total = 0
    for trajectory in trajectories:
        context = len(trajectory.prompt_ids)
        actions_seen, last_env = 0, 0
        for segment in trajectory.segments:
            if segment.is_action:
                if actions_seen:
                    total += context - last_env
                actions_seen += 1
                last_env = 0
            else:
                last_env = len(segment.token_ids)
            context += len(segment.token_ids)
    return total


def calls_per_episode(trajectories: list[Any], tokenizer: Any) -> float:
    """Mean tool calls per trajectory that parse as the rollouts parse them (TRL's ``tools/call_frequency``)."""
    calls = 0
    for trajectory in trajectories:
        context = list(trajectory.prompt_ids)
        for number, segment in enumerate(trajectory.segments):
            if segment.is_action:
                calls += len(parse_assistant(tokenizer, list(segment.token_ids), context, None, number).get(
                    "tool_calls") or [])  # fmt: skip
            context += list(segment.token_ids)
    return calls / max(len(trajectories), 1)


def tail_mean(values: list[float]) -> float:
    """Mean of the last third (at least one) of ``values``."""
    tail = values[-max(1, len(values) // 3) :]
    return sum(tail) / len(tail) if tail else float("nan")


# -- the trainers -----------------------------------------------------------------------------------------------


def run_trl_sync(model_path: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = load_tokenizer(model_path)
    config = GRPOConfig(
        output_dir=str(out / "trl_sync"),
        max_steps=args.steps,
        per_device_train_batch_size=args.groups * args.generations,
        num_generations=args.generations,
        # The same budgets as AgentRL's: new tokens per turn (generation_kwargs caps each generate call) and
        # turns; max_completion_length bounds actions and tool results together, as max_total_tokens does.
        max_completion_length=args.max_turns * args.new_tokens + args.env_tokens,
        generation_kwargs={"max_new_tokens": args.new_tokens},
        max_tool_calling_iterations=args.max_turns - 1,
        learning_rate=1e-4,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        seed=args.seed,
    )
    factories = {task: trl_environment(lambda task=task: env_factory(task)()) for task in args.tasks.split(",")}
    dataset = _concat([trl_dataset(factories[t]._make_env, range(args.samples), environment=t) for t in factories])
    trainer = GRPOTrainer(
        str(model_path), args=config, train_dataset=dataset, processing_class=tokenizer, environment_factory=factories
    )
    # Where a synchronous trainer's time goes: rollouts (idle: nothing trains meanwhile), and within them model
    # generation and the environments' tool calls (TRL calls each rollout's tools in turn).
    idle, generating = timed(trainer, "_generate_and_score_completions"), timed(trainer, "_generate_single_turn")
    stepping = [timed(environment, "_call") for environment in factories.values()]
    StepLatency.reseed(args.seed)
    with TokenizerCounter(tokenizer) as counter:
        start = time.perf_counter()
        trainer.train()
        wall_s = time.perf_counter() - start
    logs = [e for e in trainer.state.log_history if "reward" in e]
    trajectories = args.steps * args.groups * args.generations
    return {
        "traj_per_s": trajectories / wall_s,
        "reward": tail_mean([e["reward"] for e in logs]),
        "trainer_idle_fraction": idle[0] / wall_s,
        "wall_s": wall_s,
        "trajectories": trajectories,
        "retokenized_tokens": counter.retokenized_tokens,
        "tokenized_tokens": counter.tokenized_tokens,
        "calls_per_episode": statistics.mean(e.get("tools/call_frequency", 0.0) for e in logs),
        "generate_s": generating[0],
        "tool_calls_s": sum(total[0] for total in stepping),
        "env_steps": StepLatency.steps,
        "env_latency_s": StepLatency.slept_s,
        # TRL generates again after every turn with a tool call, up to max_tool_calling_iterations.
        "turns_mean": statistics.mean(e.get("tools/call_frequency", 0.0) for e in logs) + 1,
    }


def timed(owner: Any, name: str) -> list[float]:
    """Wrap ``owner.name`` so that its calls add their wall time to the returned one-item list."""
    method, total = getattr(owner, name), [0.0]

    def wrapper(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*a, **k)
        finally:
            total[0] += time.perf_counter() - start

    setattr(owner, name, wrapper)
    return total


def run_trl_async(model_path: Path, args: argparse.Namespace, out: Path) -> dict[str, Any] | str:
    """Build TRL's AsyncGRPOTrainer as its docs say; return the figures, or the reason it cannot run here."""
    try:
        from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

        factories = {task: trl_environment(lambda task=task: env_factory(task)()) for task in args.tasks.split(",")}
        dataset = _concat([trl_dataset(factories[t]._make_env, range(args.samples), environment=t) for t in factories])
        config = AsyncGRPOConfig(
            output_dir=str(out / "trl_async"),
            max_steps=args.steps,
            num_generations=args.generations,
            max_completion_length=args.max_turns * args.new_tokens + args.env_tokens,
            report_to="none",
            use_cpu=True,
        )
        AsyncGRPOTrainer(
            str(model_path),
            args=config,
            train_dataset=dataset,
            processing_class=load_tokenizer(model_path),
            environment_factory=factories,
        )
    except Exception as e:  # the reason is the figure: what TRL's async trainer needs that this machine lacks
        frames = [f for f in traceback.extract_tb(e.__traceback__) if "/trl/" in f.filename]
        where = (
            f" (in {frames[-1].filename.split('/trl/')[-1]}:{frames[-1].lineno}, {frames[-1].name})" if frames else ""
        )
        return f"{type(e).__name__}: {e}{where}"
    return "built, but running it needs a vLLM server (not started by this bench)"


def run_agentrl(mode: str, model_path: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    tasks = args.tasks.split(",")
    config = AgentRLConfig(
        output_dir=str(out / mode),
        tasks=tasks,
        task_split="dev",
        max_samples_per_task=args.samples,
        rollout_mode=mode.removeprefix("agentrl_"),
        num_generations=args.generations,
        max_steps=args.steps,
        min_groups_per_step=args.groups,
        max_groups_per_step=args.groups,
        queue_size=(args.max_staleness + 1) * args.groups,
        max_staleness=args.max_staleness,
        max_turns=args.max_turns,
        max_new_tokens_per_turn=args.new_tokens,
        max_total_tokens=4096,
        unfinished_penalty=0.0,  # TRL has none: rewards stay comparable
        rollout_engine=args.agentrl_engine,
        engine_cpus=[int(core) for core in args.engine_cpus.split(",")] if args.engine_cpus else None,
        learning_rate=1e-4,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        write_report=False,
        use_cpu=True,
        seed=args.seed,
    )
    tokenizer = load_tokenizer(model_path)
    trainer = AgentRLTrainer(
        str(model_path), config, processing_class=tokenizer, env_factories={t: env_factory(t) for t in tasks}
    )
    trained: list[Any] = []
    record = trainer._record

    def keep(groups: Any, trajectories: list[Any], *a: Any, **k: Any) -> None:
        trained.extend(trajectories)
        record(groups, trajectories, *a, **k)

    trainer._record = keep
    StepLatency.reseed(args.seed)
    with TokenizerCounter(tokenizer) as counter:
        trainer.train()
    wall_s = time.perf_counter() - trainer.rollouts_started
    logs = [e for e in trainer.state.log_history if any(k.startswith("env/") for k in e)]
    return {
        "traj_per_s": len(trained) / wall_s,
        "reward": tail_mean([_step_reward(e, tasks) for e in logs]),
        "trainer_idle_fraction": trainer.idle_s / wall_s,
        "wall_s": wall_s,
        "trajectories": len(trained),
        "retokenized_tokens": counter.retokenized_tokens,
        "tokenized_tokens": counter.tokenized_tokens,
        "turns_mean": statistics.mean(t.turns for t in trained),
        "calls_per_episode": calls_per_episode(trained, tokenizer),
        "retokenized_tokens_whole_conversation": whole_conversation_tokens(trained),
        "env_steps": StepLatency.steps,
        "env_latency_s": StepLatency.slept_s,  # summed over steps that overlap in time
    }


def _step_reward(entry: dict[str, Any], tasks: list[str]) -> float:
    counts = [entry.get(f"env/{t}/episodes", 0.0) for t in tasks]
    return sum(entry.get(f"env/{t}/reward", 0.0) * n for t, n in zip(tasks, counts, strict=True)) / max(sum(counts), 1)


def _concat(datasets: list[Any]) -> Any:
    from datasets import concatenate_datasets

    return concatenate_datasets(datasets)


# -- the run ----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def load_window() -> Iterator[dict[str, float]]:
    """The 1-minute load average at the start and end of a block (the machine is shared)."""
    window = {"load_start": os.getloadavg()[0]}
    yield window
    window["load_end"] = os.getloadavg()[0]


def run_once(model_path: Path, args: argparse.Namespace, out: Path, seed: int) -> dict[str, Any]:
    """Every trainer once, one after the other, with the same seed (rollout sampling and env latencies)."""
    args = argparse.Namespace(**{**vars(args), "seed": seed})
    results: dict[str, Any] = {}
    for name in args.trainers.split(","):
        print(f"{name} ...", flush=True)
        with load_window() as load:
            if name == "trl_sync":
                figures: Any = run_trl_sync(model_path, args, out)
            elif name == "trl_async":
                figures = run_trl_async(model_path, args, out)
            else:
                figures = run_agentrl(name, model_path, args, out)
        if isinstance(figures, dict):  # episodes differ in length between trainers: count turns as well
            figures["turns_per_s"] = figures["traj_per_s"] * figures["turns_mean"]
        results[name] = {**figures, **load} if isinstance(figures, dict) else figures
    return results


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per trainer and figure, the median over runs and the spread (min, max)."""
    summary: dict[str, Any] = {}
    for name in runs[0]:
        if not isinstance(runs[0][name], dict):
            summary[name] = None
            summary[f"{name}_reason"] = runs[0][name]
            continue
        keys = runs[0][name].keys()
        summary[name] = {k: statistics.median(r[name][k] for r in runs) for k in keys}
        summary[name]["spread"] = {k: [min(r[name][k] for r in runs), max(r[name][k] for r in runs)] for k in keys}
    return summary


def print_table(title: str, results: dict[str, Any]) -> None:
    nan = float("nan")  # AgentRL's generation and environment steps overlap: no such split
    print(f"\n{title}")
    print(
        f"{'trainer':14} {'traj/s':>7} {'turns/s':>7} {'reward':>7} {'idle':>6} {'turns':>6} {'calls':>6} "
        f"{'wall s':>7} {'re-tok':>7} {'load':>5} {'steps':>5} {'env s':>6} {'gen s':>6} {'tools s':>7}"
    )
    for name, r in results.items():
        if not isinstance(r, dict):
            continue
        print(
            f"{name:14} {r['traj_per_s']:7.3f} {r['turns_per_s']:7.3f} {r['reward']:7.3f} "
            f"{r['trainer_idle_fraction']:6.1%} {r['turns_mean']:6.2f} {r['calls_per_episode']:6.2f} "
            f"{r['wall_s']:7.1f} {r['retokenized_tokens']:7.0f} {r['load_start']:5.1f} {r['env_steps']:5.0f} "
            f"{r['env_latency_s']:6.1f} {r.get('generate_s', nan):6.1f} {r.get('tool_calls_s', nan):7.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 steps of 2 groups of 2, one run unless --runs")
    parser.add_argument("--runs", type=int, default=None, help="runs of every trainer (default 3; 1 with --quick)")
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per trainer")
    parser.add_argument("--groups", type=int, default=4, help="GRPO groups per step")
    parser.add_argument("--generations", type=int, default=4, help="episodes per group (G)")
    parser.add_argument("--samples", type=int, default=8, help="dev samples per task (rows)")
    parser.add_argument("--tasks", default="db,kg")
    parser.add_argument("--trainers", default=",".join(TRAINERS))
    parser.add_argument("--max-turns", type=int, default=4, help="assistant turns per episode")
    # A DB action (an INSERT statement) is up to ~110 tokens with the words tokenizer: 48 cut tool calls.
    parser.add_argument("--new-tokens", type=int, default=128, help="most new tokens per turn")
    parser.add_argument("--env-tokens", type=int, default=512, help="TRL: completion budget for tool results")
    parser.add_argument("--max-staleness", type=int, default=2)
    parser.add_argument("--scale-s", type=float, default=0.2, help="Pareto scale of the env step latency")
    parser.add_argument("--alpha", type=float, default=1.5, help="Pareto shape (smaller: heavier tail)")
    parser.add_argument("--warm-n", type=int, default=1000, help="synthesized training tasks per task (warm start)")
    parser.add_argument("--warm-difficulty", default="1", help="their levels (agentrl-envs synth --difficulty)")
    parser.add_argument("--warm-steps", type=int, default=500, help="SFT steps on their transcripts (batch 8)")
    parser.add_argument("--warm-lr", type=float, default=2e-3, help="SFT learning rate (constant after 20 steps)")
    parser.add_argument("--min-parse", type=float, default=0.5, help="least share of first turns that parse")
    parser.add_argument("--hidden", type=int, default=128, help="tiny model: hidden size (intermediate: twice it)")
    parser.add_argument("--layers", type=int, default=3, help="tiny model: layers")
    parser.add_argument("--vocab", type=int, default=3072, help="tiny model: tokenizer vocabulary")
    parser.add_argument("--pretokenizer", default="words", help="tiny model: bytelevel or words (tiny.py)")
    parser.add_argument("--agentrl-engine", default="hf", choices=["hf", "hf_process"], help="AgentRL's engine")
    parser.add_argument("--engine-cpus", default="", help="hf_process: cores of the engine process, e.g. 1")
    parser.add_argument("--warm-only", action="store_true", help="warm start and its tool-call check, no trainers")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.steps, args.groups, args.generations, args.samples = 3, 2, 2, 4
    args.runs = args.runs or (1 if args.quick else 3)
    logging.basicConfig(level=logging.WARNING)
    warnings.filterwarnings("ignore", message=".*experimental feature.*")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    StepLatency.scale_s, StepLatency.alpha = args.scale_s, args.alpha

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        warm = warm_start(args, Path(tmp) / "warm")
        model_path = warm.model_path
        calls = call_check(model_path, args)
        print(
            f"warm start: {warm.total_s:.0f} s ({'cached' if warm.reused else f'{warm.transcripts} transcripts'}, "
            f"final loss {warm.final_loss}); first turns that parse into a tool call: {calls}",
            flush=True,
        )
        low = {task: share for task, share in calls.items() if share < args.min_parse}
        if low and not args.warm_only:
            raise SystemExit(
                f"The warm start parses into a tool call in {low} of sampled first turns, below --min-parse "
                f"{args.min_parse}: TRL would end those episodes at the first turn and the race would not be like "
                "for like. Warm up longer (--warm-steps), on more tasks (--warm-n), or pass --min-parse 0 to race "
                "anyway."
            )
        if args.warm_only:
            return
        for run in range(args.runs):
            results = run_once(model_path, args, Path(tmp) / f"run{run}", seed=args.seed + run)
            print_table(f"run {run + 1}/{args.runs}", results)
            runs.append(results)
    summary = summarize(runs)
    print_table(f"median of {args.runs} run(s)", {k: v for k, v in summary.items() if isinstance(v, dict)})
    ratio = (
        summary["agentrl_async"]["traj_per_s"] / summary["trl_sync"]["traj_per_s"]
        if isinstance(summary.get("agentrl_async"), dict) and isinstance(summary.get("trl_sync"), dict)
        else float("nan")
    )
    print(f"agentrl_async / trl_sync trajectories per second: {ratio:.2f}x")
    print(
        json.dumps(
            {
                **summary,
                "ratio_vs_trl_sync": ratio,
                "bench": "vs_trl",
                "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
                "config": vars(args),
                "runs": runs,
            }
        )
    )


if __name__ == "__main__":
    main()
