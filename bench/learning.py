"""It learns: mean reward per task before and after AgentRL training of a tiny model, over seeds, on CPU.

Suite (``bench/_words.py``): ``say`` (reward 0/1: answer ``red``) and ``twice`` (reward 0/5: answer
``blue blue``), which differ in difficulty and reward scale. Recipe per seed:

1. build a tiny Qwen2 model and tokenizer locally;
2. SFT warm start on *random* words: the model learns the answer format but not which word, so it starts
   right about one time in four (``say``) or sixteen (``twice``);
3. asynchronous AgentRL training (the default variant: task advantage normalization on, cross-policy
   sampling on), and the ablations: normalization off, cross-policy off;
4. evaluate each task by sampling (temperature 1) before and after.

``scale_rewards="batch"`` is used for every variant: with per-group std scaling (TRL's default) each group
is already unit-scaled, which hides the reward-scale imbalance that task normalization addresses.

    uv run python bench/learning.py                      # 3 seeds x 3 variants, about 8 minutes on 2 shared cores
    uv run python bench/learning.py --seeds 1 --variants default,no_task_norm

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from _words import CORPUS, ENVS, WORDS, sft_warm_start
from agentrl_trainer import AgentRLConfig, AgentRLTrainer, TrainingRow
from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {"task_advantage_normalization": True, "lagged_fraction": 0.3},
    "no_task_norm": {"task_advantage_normalization": False, "lagged_fraction": 0.3},
    "no_cross_policy": {"task_advantage_normalization": True, "lagged_fraction": 0.0},
}


def evaluate(model: Any, tokenizer: Any, episodes_per_sample: int, seed: int) -> dict[str, float]:
    """Mean reward per task, sampling at temperature 1 (every sample played ``episodes_per_sample`` times)."""
    torch.manual_seed(seed)

    async def play() -> dict[str, float]:
        engine = HFEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
        limits = EpisodeLimits(max_turns=1, max_new_tokens=8, max_total_tokens=512)
        try:
            out = {}
            for task, env_class in ENVS.items():
                jobs = []
                for index in range(len(WORDS)):
                    for _ in range(episodes_per_sample):
                        row = TrainingRow(task, "test", index)
                        jobs.append(
                            run_episode(
                                row, env_class(), tokenizer=tokenizer, pick_engine=lambda: engine, limits=limits
                            )
                        )
                trajectories = await asyncio.gather(*jobs)
                out[task] = sum(t.env_reward for t in trajectories) / len(trajectories) / env_class.scale
            return out
        finally:
            await engine.aclose()

    return asyncio.run(play())


def train_variant(start: Path, tokenizer: Any, variant: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    config = AgentRLConfig(
        output_dir=str(start.parent / f"{variant}-{seed}"),
        tasks=list(ENVS),
        task_split="test",
        num_generations=8,
        max_steps=args.steps,
        learning_rate=args.lr,
        scale_rewards="batch",
        min_groups_per_step=4,
        max_groups_per_step=8,
        queue_size=12,
        max_staleness=2,
        max_turns=1,
        max_new_tokens_per_turn=8,
        max_total_tokens=512,
        lagged_refresh_steps=4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        write_report=False,
        seed=seed,
        **VARIANTS[variant],
    )
    factories = {task: (lambda split, c=cls: c(split=split)) for task, cls in ENVS.items()}
    trainer = AgentRLTrainer(str(start), config, processing_class=tokenizer, env_factories=factories)
    trainer.train()
    logs = trainer.state.log_history
    distinct = [e["rollout/distinct_actions_per_group"] for e in logs if "rollout/distinct_actions_per_group" in e]
    after = evaluate(trainer.model.eval(), tokenizer, args.eval_episodes, seed + 1000)
    return {"after": after, "distinct_actions_per_group": statistics.mean(distinct)}


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=80, help="RL optimizer steps per run")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--sft-steps", type=int, default=150)
    parser.add_argument("--eval-episodes", type=int, default=16, help="episodes per sample in evaluation")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    variants = args.variants.split(",")
    started = time.perf_counter()

    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    before: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            path = build_tiny_model(CORPUS, TinyModelSpec(vocab_size=512, seed=seed))
            tokenizer = load_tokenizer(path)
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_pretrained(path)
            sft_warm_start(model, tokenizer, steps=args.sft_steps, seed=seed)
            start = Path(tmp) / f"sft-{seed}"
            model.save_pretrained(start)
            tokenizer.save_pretrained(start)
            before.append(evaluate(model, tokenizer, args.eval_episodes, seed + 1000))
            for variant in variants:
                runs[variant].append(train_variant(start, tokenizer, variant, seed, args))

    tasks = list(ENVS)
    figures: dict[str, Any] = {"bench": "learning", "config": vars(args), "success_rate": {}}
    print(f"success rate per task, mean +- std over {args.seeds} seeds (reward / task's full reward)")
    print(f"{'variant':16} " + " ".join(f"{t:>15}" for t in tasks) + f" {'distinct/group':>15}")
    rows = {"before (SFT)": [{"after": b, "distinct_actions_per_group": float("nan")} for b in before], **runs}
    for name, results in rows.items():
        cells, entry = [], {}
        for task in tasks:
            m, s = mean_std([r["after"][task] for r in results])
            cells.append(f"{m:8.2f} +- {s:4.2f}")
            entry[task] = {"mean": m, "std": s, "per_seed": [r["after"][task] for r in results]}
        distinct = statistics.mean(r["distinct_actions_per_group"] for r in results)
        entry["distinct_actions_per_group"] = distinct
        figures["success_rate"][name] = entry
        print(f"{name:16} " + " ".join(f"{c:>15}" for c in cells) + f" {distinct:15.2f}")
    figures["wall_s"] = time.perf_counter() - started
    print(f"wall time: {figures['wall_s']:.0f}s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
