"""Success before SFT, after SFT and after RL: the ``stage_eval:`` block of a training config.

A run with ``stage_eval`` scores each of its models (the starting model, the SFT warm-up's checkpoint when the
run has one, and the RL result) on named evaluation sets, per task, with :func:`agentrl_trainer.evaluate.aevaluate`
(episodes played exactly as rollouts play them). A set is a split with its own environment options, e.g. a
held-out file of synthesized tasks (``split: train`` and ``train_file`` per task), the dev split, or tasks the
run never trained on (``tasks: [bfcl]``, BFCL's multi-turn categories: generalization, as the paper's Table 5). The
figures
go to ``summary.json`` (``stages``) and ``stages.png``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = ["STAGES", "StageEvalConfig", "evaluate_model", "plot_stages", "write_stages"]

logger = logging.getLogger(__name__)

STAGES = ("before_sft", "after_sft", "after_rl")
"""The models a run scores, in order (``after_sft`` only when the run has an SFT warm-up)."""

_SET_KEYS = {"split", "env_kwargs", "tasks", "limit"}


@dataclass
class StageEvalConfig:
    """Evaluation of a run's models on held-out sets (see each field's ``help``)."""

    sets: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"dev": {"split": "dev"}},
        metadata={
            "help": "Named sets: {name: {split: ..., env_kwargs: {task: options}, tasks: [...], limit: N}}, e.g. a "
            "held-out synthesized file as {split: train, env_kwargs: {db: {train_file: heldout/db.jsonl}}}, or "
            "tasks the run never trained on as {split: test, tasks: [bfcl], limit: 5}. tasks defaults to the "
            "run's, limit to stage_eval.limit. The run's env_kwargs are not used (a train_file only fits the "
            "train split)."
        },
    )
    limit: int | None = field(default=20, metadata={"help": "Samples per task and set (None: all)."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of the evaluation episodes."})
    concurrency: int = field(default=4, metadata={"help": "Episodes in flight per task."})

    def __post_init__(self) -> None:
        """Check the values."""
        if not self.sets or not isinstance(self.sets, dict):
            raise ValueError(
                f"stage_eval.sets must name at least one set, e.g. {{dev: {{split: dev}}}}; got {self.sets!r}."
            )
        for name, spec in self.sets.items():
            if not isinstance(spec, dict) or "split" not in spec or set(spec) - _SET_KEYS:
                raise ValueError(
                    f"stage_eval.sets[{name!r}] must be {{split: ..., env_kwargs: {{task: options}}, tasks: [...], "
                    f"limit: N}} (only split is required); got {spec!r}."
                )
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"stage_eval.limit must be >= 1 or None, got {self.limit}.")
        if self.temperature <= 0 or self.concurrency < 1:
            raise ValueError("stage_eval.temperature must be > 0 and stage_eval.concurrency >= 1.")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> StageEvalConfig:
        """Build from the YAML mapping; an unknown key is an error that lists the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"stage_eval has unknown keys {unknown}; known keys: {sorted(known)}.")
        return cls(**values)


def evaluate_model(model_path: str | Path, tokenizer: Any, args: Any, stage_eval: StageEvalConfig) -> dict[str, Any]:
    """Success rate per set and task of the model at ``model_path`` (``{set: {task: rate}}``).

    Episodes use the run's turn and token limits (``max_turns``, ``max_new_tokens_per_turn``,
    ``max_total_tokens``) with no penalty for an unfinished episode (it is simply not a success).
    """
    import torch
    from transformers import AutoModelForCausalLM

    from agentrl_trainer.engines.hf import HFEngine
    from agentrl_trainer.envs import make_env_factory
    from agentrl_trainer.evaluate import aevaluate
    from agentrl_trainer.rollout.episode import EpisodeLimits

    limits = EpisodeLimits(
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens_per_turn,
        max_total_tokens=args.max_total_tokens,
        unfinished_penalty=0.0,
    )
    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_pretrained(str(model_path)).eval()
    engine = HFEngine(
        model,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=stage_eval.temperature,
        copy_model=False,
    )

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        try:
            for name, spec in stage_eval.sets.items():
                factory = make_env_factory(env_kwargs=spec.get("env_kwargs") or {})
                results = await aevaluate(
                    engine, tokenizer, list(spec.get("tasks") or args.tasks), split=spec["split"],
                    limit=spec.get("limit", stage_eval.limit), limits=limits, concurrency=stage_eval.concurrency,
                    env_factory=factory,
                )  # fmt: skip
                out[name] = {task: figures["success_rate"] for task, figures in results["tasks"].items()}
        finally:
            await engine.aclose()
        return out

    return asyncio.run(run())


def write_stages(output_dir: str | Path, stages: dict[str, Any]) -> None:
    """Add ``stages`` to ``summary.json`` (written by the trainer, or new) and draw ``stages.png``."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "summary.json"
    summary = json.loads(path.read_text()) if path.is_file() else {}
    summary["stages"] = stages
    path.write_text(json.dumps(summary, indent=2))
    try:
        plot_stages(stages, out / "stages.png")
    except Exception:  # a plotting failure must not hide the figures
        logger.exception("could not draw stages.png")


def plot_stages(stages: dict[str, Any], path: Path) -> None:
    """Bars of success per task and stage, one panel per evaluation set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = [s for s in STAGES if s in stages]
    sets = list(stages[order[0]]) if order else []
    fig, axes = plt.subplots(1, max(1, len(sets)), figsize=(5 * max(1, len(sets)), 4), squeeze=False)
    for ax, name in zip(axes[0], sets, strict=False):
        tasks = list(stages[order[0]][name])
        width = 0.8 / max(1, len(order))
        for k, stage in enumerate(order):
            values = [stages[stage][name].get(task) or 0.0 for task in tasks]
            ax.bar([i + k * width for i in range(len(tasks))], values, width, label=stage.replace("_", " "))
        ax.set_xticks([i + width * (len(order) - 1) / 2 for i in range(len(tasks))], tasks)
        ax.set_ylim(0, 1)
        ax.set_ylabel("success rate")
        ax.set_title(f"{name}: before SFT / after SFT / after RL")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
