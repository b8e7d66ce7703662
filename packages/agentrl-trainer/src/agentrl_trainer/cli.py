"""``agentrl-train CONFIG.yaml [KEY=VALUE ...]``: train with :class:`~agentrl_trainer.AgentRLTrainer` from a YAML file.

With an ``sft_warmup:`` block the run first warms the model up on transcripts (TRL's ``SFTTrainer``,
:mod:`agentrl_trainer.sft.warmup`) and RL starts from that checkpoint; ``agentrl-sft CONFIG.yaml`` runs only
that stage (the block's defaults when the config has none).

The YAML holds :class:`ModelArguments` fields and :class:`~agentrl_trainer.AgentRLConfig` fields side by side
(parsed by transformers' ``HfArgumentParser``, so an unknown key is an error). ``KEY=VALUE`` arguments
override the file (values are read as YAML: ``max_steps=5``, ``tasks=[db]``).
``model_name_or_path: tiny`` builds a tiny Qwen2 model and a tokenizer trained on the tasks' text, so the
quickstart runs on a CPU-only machine with no model hub.

Exit codes: 0 done; 1 training failed; 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ModelArguments", "build_parser", "load_config", "main", "main_sft", "run_training"]

logger = logging.getLogger("agentrl_trainer.cli")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass
class ModelArguments:
    """Which model to train (TRL scripts' ``ModelConfig``, reduced to what this CLI needs)."""

    model_name_or_path: str = field(
        default="tiny",
        metadata={"help": "A model path or hub id, or 'tiny' to build a tiny model and tokenizer locally."},
    )
    tiny_vocab_size: int = field(default=1024, metadata={"help": "tiny: tokenizer vocabulary size."})
    tiny_hidden_size: int = field(default=64, metadata={"help": "tiny: hidden size."})
    tiny_num_layers: int = field(default=2, metadata={"help": "tiny: decoder layers."})
    tiny_num_heads: int = field(
        default=4,
        metadata={
            "help": "tiny: attention heads per layer (half as many key/value heads); must divide the hidden size."
        },
    )
    tiny_corpus_samples: int = field(
        default=60, metadata={"help": "tiny: samples per task whose text trains the tokenizer."}
    )
    tiny_pretokenizer: str = field(
        default="bytelevel",
        metadata={
            "help": "tiny: bytelevel (GPT-2's cut: a word carries its leading space) or words (spaces and "
            "punctuation are pieces of their own, so a name is the same tokens wherever it stands; "
            "easier to copy)."
        },
    )
    tiny_copy_pretrain_steps: int = field(
        default=0,
        metadata={
            "help": "tiny: steps of copy pre-training on synthetic span-repeat sequences before the model is "
            "saved (agentrl_trainer.copy_pretrain), to install the circuit that copies names from the prompt; "
            "0: none. Part of the tiny model's cache key."
        },
    )


def build_parser(
    prog: str = "agentrl-train",
    description: str = "Train an LLM agent with AgentRLTrainer (async multi-turn GRPO) on AgentBench tasks.",
) -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("config", type=Path, help="YAML file of ModelArguments and AgentRLConfig fields")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="override a field, e.g. max_steps=5")
    return parser


class _ConfigLoader(yaml.SafeLoader):
    """Safe YAML whose floats are YAML 1.2's: ``5e-4`` is a number.

    YAML 1.1 reads it as a string, which reached torch's optimizer as the learning rate ``'5e-4'``.
    """


_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 - a SafeLoader subclass


def load_config(path: Path, overrides: Sequence[str] = ()) -> tuple[ModelArguments, Any]:
    """Read ``path``, apply ``KEY=VALUE`` overrides and build the two configs.

    Raises:
        ValueError: On a malformed override, an unknown key or a value a config rejects.
    """
    from transformers import HfArgumentParser

    from agentrl_trainer.config import AgentRLConfig

    values = _yaml(path.read_text()) or {}
    if not isinstance(values, dict):
        raise ValueError(f"{path} must hold a mapping of config fields, not {type(values).__name__}.")
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"Override {item!r} is not KEY=VALUE.")
        values[key] = _yaml(raw)
    # transformers types dataclass_types as a NewType that no class matches
    parser = HfArgumentParser((ModelArguments, AgentRLConfig))  # pyright: ignore[reportArgumentType]
    model_args, config = parser.parse_dict(values)
    return model_args, config


def prepare_model(model_args: ModelArguments, config: Any) -> tuple[str, Any]:
    """The model path and tokenizer; ``tiny`` builds (or reuses from the cache) a model for ``config.tasks``."""
    from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer

    path = model_args.model_name_or_path
    if path == "tiny":
        from agentrl_trainer.corpus import task_corpus
        from agentrl_trainer.envs import make_env_factory

        def corpus() -> list[str]:
            return task_corpus(
                make_env_factory(env_kwargs=config.env_kwargs),
                config.tasks,
                config.task_split,
                max_samples=model_args.tiny_corpus_samples,
                oracle_options=corpus_oracle_options(config),
            )

        spec = TinyModelSpec(
            vocab_size=model_args.tiny_vocab_size,
            hidden_size=model_args.tiny_hidden_size,
            intermediate_size=2 * model_args.tiny_hidden_size,
            num_hidden_layers=model_args.tiny_num_layers,
            num_attention_heads=model_args.tiny_num_heads,
            num_key_value_heads=max(1, model_args.tiny_num_heads // 2),
            seed=config.seed,
            pretokenizer=model_args.tiny_pretokenizer,
            copy_pretrain_steps=model_args.tiny_copy_pretrain_steps,
        )
        # Keyed by what the corpus is made from, not its text: some tasks' text differs run to run.
        path = str(build_tiny_model(corpus, spec, identity=corpus_identity(config, model_args.tiny_corpus_samples)))
        logger.info("tiny model at %s", path)
    return path, load_tokenizer(path)


def corpus_oracle_options(config: Any) -> dict[str, dict[str, Any]]:
    """Each task's oracle options for the tokenizer corpus: its env options (a ``train_file``) and the SFT's.

    The oracle must read the samples the env plays (a DB ``train_file``: without it the oracle looks for the
    default training file and the corpus has no oracle moves at all), and it plays as the SFT warm-up's oracle
    does (``show_sql``, ``recovery``), so the words the transcripts write get tokens.
    """
    warmup = config.sft_warmup if isinstance(config.sft_warmup, dict) else {}
    sft = warmup.get("oracle_options") or {}
    return {task: dict((config.env_kwargs or {}).get(task) or {}) | dict(sft.get(task) or {}) for task in config.tasks}


def corpus_identity(config: Any, max_samples: int) -> dict[str, Any]:
    """What a tiny model's corpus is made from: tasks, split, env options (files by content), samples, data root."""
    import hashlib

    from agentrl_envs.core import resolve_data_root

    def option(value: Any) -> Any:
        if isinstance(value, str) and Path(value).is_file():  # a train_file: its content, not its path
            return {"sha256": hashlib.sha256(Path(value).read_bytes()).hexdigest()}
        return value

    env_kwargs = {
        task: {key: option(value) for key, value in sorted((config.env_kwargs or {}).get(task, {}).items())}
        for task in config.tasks
    }
    # The AgentBench data root shapes the corpus only when an AgentBench task is in it (a task of one's own, or
    # BFCL, reads none, and a run of only those must not need one).
    reads_agentbench = any(_benchmark(task) == "agentbench" for task in config.tasks)
    warmup = config.sft_warmup if isinstance(config.sft_warmup, dict) else {}
    return {
        "tasks": list(config.tasks),
        "split": config.task_split,
        "env_kwargs": env_kwargs,
        "max_samples": max_samples,
        "data_root": str(resolve_data_root()) if reads_agentbench else None,
        # 2: the oracles get the env options and the SFT's oracle options (corpus_oracle_options)
        "corpus_version": 2,
        "sft_oracle_options": warmup.get("oracle_options"),
    }


def _benchmark(task: str) -> str | None:
    """The benchmark a task name belongs to (``agentbench``, ``bfcl``, ``custom``), None if it does not resolve."""
    from agentrl_envs.core.errors import AgentRLError
    from agentrl_envs.core.registry import resolve_task

    try:
        return resolve_task(task)[0].benchmark
    except (AgentRLError, ImportError):  # not resolvable here: building its env will say why
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agentrl-train``; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        model_args, config = load_config(args.config, args.overrides)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"agentrl-train: {e}", file=sys.stderr)
        return EXIT_USAGE

    try:
        run_training(model_args, config)
    except KeyboardInterrupt:
        print("agentrl-train: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except Exception as e:  # process boundary: one line for the user, the traceback in the log
        logger.exception("training failed")
        print(f"agentrl-train: training failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    summary = Path(config.output_dir) / "summary.json"
    print(f"agentrl-train: done; model, summary.json and plots in {config.output_dir}")
    if summary.is_file():
        print(summary.read_text())
    return EXIT_OK


def run_training(model_args: ModelArguments, config: Any) -> dict[str, Any]:
    """The run a config describes: model, SFT warm-up, RL, and the stage scores; returns ``summary.json``'s content.

    With ``stage_eval`` the starting model is scored before SFT, the warm-up's checkpoint after it, and the
    trained model after RL (:mod:`agentrl_trainer.stages`); the scores go to ``summary.json`` and ``stages.png``.
    """
    from agentrl_trainer.stages import evaluate_model, write_stages
    from agentrl_trainer.trainer import AgentRLTrainer

    stage_eval = config.stage_eval_config()
    stages: dict[str, Any] = {}

    def score(stage: str, model_path: str) -> None:
        if stage_eval is not None:
            result = evaluate_model(model_path, tokenizer, config, stage_eval)
            stages[stage] = result.scores
            how = f" (reused from {result.reused_from})" if result.reused_from else ""
            print(f"agentrl-train: {stage.replace('_', ' ')}{how}: {json.dumps(result.scores)}", file=sys.stderr)

    path, tokenizer = prepare_model(model_args, config)
    score("before_sft", path)
    warmup = _warm_up(path, tokenizer, config) if config.sft_warmup is not None else None
    if warmup is not None:
        path = str(warmup.model_path)
        score("after_sft", path)
    trainer = AgentRLTrainer(path, config, processing_class=tokenizer)
    trainer.sft_warmup = warmup.to_json() if warmup is not None else None
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    trainer.save_model(config.output_dir)
    if stage_eval is not None:
        score("after_rl", config.output_dir)
        write_stages(config.output_dir, stages)
    summary = Path(config.output_dir) / "summary.json"
    return json.loads(summary.read_text()) if summary.is_file() else {}


def _warm_up(path: str, tokenizer: Any, config: Any, prog: str = "agentrl-train") -> Any:
    from agentrl_trainer.sft.warmup import run_sft_warmup

    result = run_sft_warmup(path, tokenizer, config)
    how = "reused" if result.reused else f"trained on {result.transcripts} transcripts"
    print(
        f"{prog}: SFT warm-up {how} in {result.total_s:.1f}s (record {result.record_s:.1f}s, train "
        f"{result.train_s:.1f}s); model at {result.model_path}",
        file=sys.stderr,
    )
    return result


def main_sft(argv: Sequence[str] | None = None) -> int:
    """Run ``agentrl-sft``: only the SFT warm-up stage of a training config; returns the exit code."""
    args = build_parser(
        "agentrl-sft", "Warm a model up with TRL's SFTTrainer on oracle or recorded transcripts (no RL)."
    ).parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        model_args, config = load_config(args.config, args.overrides)
        if config.sft_warmup is None:  # the block's defaults: the oracles of the run's tasks
            config.sft_warmup = {"source": "oracle"}
            config._check_sft_warmup()
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"agentrl-sft: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        path, tokenizer = prepare_model(model_args, config)
        result = _warm_up(path, tokenizer, config, "agentrl-sft")
    except Exception as e:  # process boundary: one line for the user, the traceback in the log
        logger.exception("SFT warm-up failed")
        print(f"agentrl-sft: failed: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(result.to_json(), indent=2))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
