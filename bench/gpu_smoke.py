"""GPU smoke run: a small model trained for a few async steps with vLLM; prints tokens/s, step time, idle fraction.

Run by bench/gpu_smoke.sh on a GPU machine (it installs what it needs first). The model is built locally
(no hub needed): the tiny-model builder at a larger size. The trainer launches one vLLM server on the same
GPU (``--gpu-memory-utilization 0.35``) and pushes weights after every step.
"""

from __future__ import annotations

import argparse
import json
import time

from agentrl_trainer import AgentRLConfig, AgentRLTrainer
from agentrl_trainer.cli import ModelArguments, prepare_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--output-dir", default="runs/gpu-smoke")
    args = parser.parse_args()

    config = AgentRLConfig(
        output_dir=args.output_dir,
        tasks=["db"],
        task_split="dev",
        max_steps=args.steps,
        learning_rate=1e-5,
        num_generations=8,
        temperature=1.0,
        max_turns=3,
        max_new_tokens_per_turn=128,
        max_total_tokens=4096,
        rollout_engine="vllm",
        vllm_server_args=["--gpu-memory-utilization", "0.35"],
        min_groups_per_step=4,
        max_groups_per_step=8,
        queue_size=8,
        max_staleness=2,
        bf16=True,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    model_args = ModelArguments(
        model_name_or_path="tiny", tiny_hidden_size=args.hidden, tiny_num_layers=args.layers, tiny_vocab_size=4096
    )
    path, tokenizer = prepare_model(model_args, config)
    trainer = AgentRLTrainer(path, config, processing_class=tokenizer)
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    policy = trainer.sampler.policy  # type: ignore[union-attr]
    figures = {
        "steps": trainer.state.global_step,
        "wall_s": round(wall, 1),
        "step_time_s": round(wall / max(1, trainer.state.global_step), 2),
        "rollout_tokens_per_s": round(getattr(policy, "generated_tokens", 0) / wall, 1),
        "trainer_idle_fraction": round(trainer.idle_s / wall, 3),
        "weight_update_s": round(getattr(policy, "last_update_s", 0.0), 3),
    }
    print(f"{'figure':<24} value")
    for key, value in figures.items():
        print(f"{key:<24} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
