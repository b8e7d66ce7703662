r"""Train a model on AgentBench tasks with AgentRLTrainer, in TRL's example-script style.

# a real model on a GPU machine (see docs/training.md for the paper's recipe)
python examples/train_agentbench.py --model_name_or_path Qwen/Qwen2.5-3B-Instruct --tasks db \
        --task_split dev --bf16 --learning_rate 1e-6 --num_generations 8 --temperature 0.8 \
        --min_groups_per_step 32 --max_groups_per_step 64 --queue_size 64 --lagged_fraction 0.25 \
        --lagged_refresh_steps 25 --output_dir runs/qwen3b-db

# the CPU smoke run (a tiny model built locally)
python examples/train_agentbench.py --model_name_or_path tiny --tasks db --task_split dev --max_steps 2 \
        --output_dir runs/smoke

# or a YAML file holding the same fields
python examples/train_agentbench.py examples/configs/quickstart.yaml
"""

from __future__ import annotations

import sys

from transformers import HfArgumentParser

from agentrl_trainer import AgentRLConfig, AgentRLTrainer
from agentrl_trainer.cli import ModelArguments, prepare_model


def main() -> None:
    """Parse the flags (or a YAML file), build the model and train."""
    parser = HfArgumentParser((ModelArguments, AgentRLConfig))
    if len(sys.argv) == 2 and sys.argv[1].endswith((".yaml", ".yml")):
        model_args, training_args = parser.parse_yaml_file(sys.argv[1])
    else:
        model_args, training_args = parser.parse_args_into_dataclasses()

    ################
    # Model and tokenizer
    ################
    model_path, tokenizer = prepare_model(model_args, training_args)

    ################
    # Training
    ################
    trainer = AgentRLTrainer(model_path, training_args, processing_class=tokenizer)
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)


if __name__ == "__main__":
    main()
