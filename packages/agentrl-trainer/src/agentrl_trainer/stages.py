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
import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from agentrl_envs.core import DataError, resolve_cache_dir, resolve_data_root

__all__ = ["STAGES", "StageEvalConfig", "StageScores", "evaluate_model", "plot_stages", "score_key", "write_stages"]

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
    reuse: bool = field(
        default=True,
        metadata={
            "help": "Reuse the scores a cached model (the tiny model, an SFT warm-up) kept from an earlier run with "
            "the same sets, limits, seed and code; false plays them again."
        },
    )

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


def evaluate_model(model_path: str | Path, tokenizer: Any, args: Any, stage_eval: StageEvalConfig) -> StageScores:
    """Success rate per set and task of the model at ``model_path`` (``{set: {task: rate}}``).

    Episodes use the run's turn and token limits (``max_turns``, ``max_new_tokens_per_turn``,
    ``max_total_tokens``) with no penalty for an unfinished episode (it is simply not a success). A model in
    the AgentRL cache (the tiny model, an SFT warm-up) keeps its scores beside its weights, keyed by everything
    they depend on (:func:`score_key`), so a run that reuses the model reuses its scores too
    (``stage_eval.reuse: false`` plays them again).
    """
    score_file = _score_file(model_path, tokenizer, args, stage_eval)
    if score_file is not None and score_file.is_file():
        return StageScores(json.loads(score_file.read_text())["scores"], reused_from=score_file)
    scores = _play(model_path, tokenizer, args, stage_eval)
    if score_file is not None:
        score_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = score_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"scores": scores, "model": str(model_path)}, indent=2))
        tmp.replace(score_file)
    return StageScores(scores)


@dataclass(frozen=True)
class StageScores:
    """A model's success rates, ``{set: {task: rate}}``, and the file they were read from when reused."""

    scores: dict[str, Any]
    reused_from: Path | None = None


SCORES_DIR = "stage-scores"
"""Where a cached model keeps its scores, one file per :func:`score_key`."""


def score_key(tokenizer: Any, args: Any, stage_eval: StageEvalConfig) -> str:
    """Hash of what a model's scores depend on besides its weights.

    The sets (with the content of every file they name), the tasks, the episode limits, the sampling settings and
    the seed, the data root, the chat template, and the source of the packages that play and grade the episodes
    (a change to an env or to the rollout code scores again).
    """
    sets = {
        name: spec
        | {"tasks": list(spec.get("tasks") or args.tasks), "env_kwargs": _with_file_hashes(spec.get("env_kwargs"))}
        for name, spec in stage_eval.sets.items()
    }
    payload = {
        "sets": sets,
        "eval": {k: v for k, v in asdict(stage_eval).items() if k not in ("sets", "reuse")},
        "limits": [args.max_turns, args.max_new_tokens_per_turn, args.max_total_tokens],
        "seed": args.seed,
        "data_root": _data_root(),
        "chat_template": getattr(tokenizer, "chat_template", None),
        "code": _code_identity(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _score_file(model_path: str | Path, tokenizer: Any, args: Any, stage_eval: StageEvalConfig) -> Path | None:
    """The score file of a model in the AgentRL cache (its directory never changes once written), else None."""
    path = Path(model_path).resolve()
    if not stage_eval.reuse or not path.is_dir() or not path.is_relative_to(resolve_cache_dir().resolve()):
        return None
    return path / SCORES_DIR / f"{score_key(tokenizer, args, stage_eval)}.json"


def _data_root() -> str | None:
    """The AgentBench data root the envs read, or None where there is none (a run of custom tasks)."""
    try:
        return str(resolve_data_root())
    except DataError:
        return None


def _with_file_hashes(value: Any) -> Any:
    """``value`` with every string that names a file replaced by the file's SHA-256 (its content, not its path)."""
    if isinstance(value, dict):
        return {k: _with_file_hashes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_file_hashes(v) for v in value]
    if isinstance(value, str) and Path(value).is_file():
        return {"file_sha256": hashlib.sha256(Path(value).read_bytes()).hexdigest()}
    return value


def _code_identity() -> str:
    """SHA-256 of the Python sources of ``agentrl_envs`` and ``agentrl_trainer``."""
    import agentrl_envs
    import agentrl_trainer

    digest = hashlib.sha256()
    for package in (agentrl_envs, agentrl_trainer):
        root = Path(str(package.__file__)).parent
        for source in sorted(root.rglob("*.py")):
            digest.update(str(source.relative_to(root)).encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()


def _play(model_path: str | Path, tokenizer: Any, args: Any, stage_eval: StageEvalConfig) -> dict[str, Any]:
    """Play every set's episodes with the model at ``model_path`` (see :func:`evaluate_model`)."""
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
