"""The supervised warm-up stage: transcripts -> rollout-identical tokens -> TRL's ``SFTTrainer`` -> a checkpoint.

``agentrl-train`` runs it before RL when the config has an ``sft_warmup:`` block (RL then starts from the
warmed-up model), and ``agentrl-sft`` runs it alone. Rows are pre-tokenized by
:func:`~agentrl_trainer.sft.render.render_transcript` (``input_ids`` plus ``labels`` that are ``-100`` off the
assistant tokens), which ``SFTTrainer`` takes as they are: it only truncates them to ``max_length`` (the run's
``max_total_tokens``, where a rollout would stop too) and pads them.

The checkpoint is cached: its directory is named by a hash of every input (the model files, the tokenizer's
chat template, the transcripts' source, the warm-up settings and the rendering version), and a directory that
already holds a model for the same hash is reused without recording or training again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentrl_trainer.cache_keys import without_later_defaults
from agentrl_trainer.sft.config import SFTWarmupConfig
from agentrl_trainer.sft.rename import rename_messages, word_pieces
from agentrl_trainer.sft.render import render_transcript
from agentrl_trainer.sft.transcripts import Transcript, kept, read_transcripts, record_oracle, tools_from_env

__all__ = ["SFTWarmupResult", "recording_env_kwargs", "run_sft_warmup", "sft_rows", "warmup_key"]

logger = logging.getLogger(__name__)

RENDER_VERSION = 1
"""Bump when the token layout of :mod:`agentrl_trainer.sft.render` changes (old checkpoints are then stale)."""

META_FILE = "sft_warmup.json"


@dataclass(frozen=True, slots=True)
class SFTWarmupResult:
    """Where the warmed-up model is, and what the stage cost."""

    model_path: Path
    reused: bool
    """The checkpoint was already there for the same inputs (nothing recorded or trained)."""
    key: str
    transcripts: int
    trained_tokens: int
    record_s: float
    train_s: float
    total_s: float
    final_loss: float | None

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object (``summary.json``'s ``sft_warmup``)."""
        return {**asdict(self), "model_path": str(self.model_path)}


def warmup_key(model_path: str, tokenizer: Any, args: Any, warmup: SFTWarmupConfig) -> str:
    """Hash of everything the warmed-up model depends on (see the module docstring)."""
    tasks = warmup.tasks or list(args.tasks)
    source: dict[str, Any]
    if warmup.is_oracle:
        from agentrl_envs.core import resolve_data_root

        recording = recording_env_kwargs(args, warmup)
        source = {
            "oracle": tasks,
            "split": warmup.split or args.task_split,
            "env_kwargs": {t: recording.get(t) for t in tasks},
            "data_root": str(resolve_data_root()),
        }
    else:
        source = {"file_sha256": hashlib.sha256(Path(warmup.source).read_bytes()).hexdigest()}
    payload = {
        "model": _model_identity(model_path),
        "chat_template": getattr(tokenizer, "chat_template", None),
        "vocab": len(tokenizer),
        "source": source,
        "warmup": _warmup_identity(warmup),
        "max_length": args.max_total_tokens,
        "seed": args.seed,
        "bf16": bool(args.bf16),
        "render_version": RENDER_VERSION,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


_ADDED_LATER = {"lr_scheduler_type": "linear", "warmup_steps": 0, "random_names": 0.0, "env_kwargs": None}
"""Settings added after checkpoints were cached, at the value they had before (:mod:`agentrl_trainer.cache_keys`)."""


def _warmup_identity(warmup: SFTWarmupConfig) -> dict[str, Any]:
    """The warm-up settings that shape the model (not where it is saved)."""
    values = {k: v for k, v in asdict(warmup).items() if k != "output_dir"}
    return without_later_defaults(values, _ADDED_LATER)


def _model_identity(model_path: str) -> Any:
    """A local model directory by its files' names, sizes and times; a hub id by its name."""
    path = Path(model_path)
    if not path.is_dir():
        return model_path
    return [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.iterdir()) if p.is_file()]


def recording_env_kwargs(args: Any, warmup: SFTWarmupConfig) -> dict[str, dict[str, Any]]:
    """The env options the oracle transcripts are recorded with, per task.

    The run's ``env_kwargs`` with ``sft_warmup.env_kwargs`` merged over them: a key given there replaces the run's
    value of that key, the task's other options stay.
    """
    run, own = args.env_kwargs or {}, warmup.env_kwargs or {}
    return {task: dict(run.get(task) or {}) | dict(own.get(task) or {}) for task in {*run, *own}}


def load_transcripts(warmup: SFTWarmupConfig, args: Any, env_factory: Any) -> list[Transcript]:
    """The transcripts the config names, filtered by score and capped per task."""
    if warmup.is_oracle:
        split = warmup.split or args.task_split
        transcripts: list[Transcript] = []
        recording = recording_env_kwargs(args, warmup)
        for task in warmup.tasks or list(args.tasks):
            options = recording.get(task, {}) | dict(warmup.oracle_options.get(task) or {})
            transcripts.extend(
                record_oracle(
                    env_factory,
                    task,
                    split,
                    max_samples=warmup.max_samples_per_task,
                    max_turns=warmup.max_oracle_turns,
                    **options,
                )
            )
    else:
        transcripts = read_transcripts(Path(warmup.source), tools_from_env(env_factory))
    return kept(transcripts, min_score=warmup.min_score, max_per_task=warmup.max_samples_per_task)


def sft_rows(
    tokenizer: Any, transcripts: list[Transcript], *, random_names: float = 0.0, seed: int = 0
) -> list[dict[str, Any]]:
    """Pre-tokenized ``SFTTrainer`` rows (``input_ids``, ``labels``, ``task``); failing transcripts are skipped.

    Args:
        tokenizer: The policy's tokenizer (its chat template renders the rows).
        transcripts: What to render, in order.
        random_names: The share of transcripts with task names (:attr:`Transcript.names`) whose names are
            replaced by random words (:mod:`agentrl_trainer.sft.rename`).
        seed: Draws which transcripts are renamed and their new names.
    """
    rng = random.Random(seed)
    pieces = word_pieces(tokenizer) if random_names else []
    rows = []
    for transcript in transcripts:
        messages = transcript.messages
        if transcript.names and random_names and rng.random() < random_names:
            messages = rename_messages(messages, transcript.names, rng, pieces)
        try:
            rendered = render_transcript(tokenizer, messages, transcript.tools)
        except ValueError as e:
            logger.warning("task=%s index=%d: transcript skipped: %s", transcript.task, transcript.index, e)
            continue
        rows.append({"input_ids": rendered.input_ids, "labels": rendered.labels, "task": transcript.task})
    return rows


def renamed_passes(warmup: SFTWarmupConfig, rows_per_pass: int) -> int:
    """How many passes over the transcripts to render, each with new random names.

    One per epoch (or enough for ``max_steps``); 1 without ``random_names``, where every epoch is the same rows.
    """
    if not warmup.random_names:
        return 1
    if warmup.max_steps > 0:
        return max(1, math.ceil(warmup.max_steps * warmup.per_device_train_batch_size / max(rows_per_pass, 1)))
    return max(1, math.ceil(warmup.num_train_epochs))


def run_sft_warmup(
    model_path: str, tokenizer: Any, args: Any, *, env_factory: Any = None, warmup: SFTWarmupConfig | None = None
) -> SFTWarmupResult:
    """Warm ``model_path`` up on the configured transcripts, or reuse the cached result.

    Args:
        model_path: The model to start from (a path or hub id).
        tokenizer: Its tokenizer (the chat template rollouts use).
        args: The run's :class:`~agentrl_trainer.AgentRLConfig` (tasks, split, env options, max_total_tokens, seed).
        env_factory: ``(task, split) -> env`` for recording (default: the registered tasks with
            :func:`recording_env_kwargs`).
        warmup: The stage's settings (default: ``args.sft_warmup``).

    Raises:
        ValueError: If no ``sft_warmup`` is configured, or no transcript is left to train on.
    """
    warmup = warmup or args.sft_warmup_config()
    if warmup is None:
        raise ValueError("No sft_warmup block in the config; add one (e.g. sft_warmup: {source: oracle}).")
    started = time.perf_counter()
    key = warmup_key(model_path, tokenizer, args, warmup)
    out = Path(warmup.output_dir) if warmup.output_dir else _cache_dir() / key
    cached = _read_meta(out)
    if cached is not None and cached.get("key") == key:
        logger.info("SFT warm-up: reusing %s (same inputs, key %s)", out, key)
        return SFTWarmupResult(
            out, True, key, cached["transcripts"], cached["trained_tokens"], 0.0, 0.0,
            time.perf_counter() - started, cached.get("final_loss"),
        )  # fmt: skip
    if env_factory is None:
        from agentrl_trainer.envs import make_env_factory

        env_factory = make_env_factory(env_kwargs=recording_env_kwargs(args, warmup))
    transcripts = load_transcripts(warmup, args, env_factory)
    if warmup.random_names and transcripts and not any(t.names for t in transcripts):
        raise ValueError(
            f"sft_warmup.random_names is {warmup.random_names} but no task of {sorted({t.task for t in transcripts})} "
            "declares names to rename (an env's copyable_names; DB does); set it to 0."
        )
    rows = sft_rows(tokenizer, transcripts, random_names=warmup.random_names, seed=args.seed)
    if not rows:
        raise ValueError(
            f"SFT warm-up has no transcript to train on (source {warmup.source!r}, min_score {warmup.min_score}); "
            "check the source, or lower sft_warmup.min_score."
        )
    record_s = time.perf_counter() - started
    trained = sum(sum(label != -100 for label in row["labels"][: args.max_total_tokens]) for row in rows)
    logger.info(
        "SFT warm-up: %d transcripts (%d trained tokens) recorded in %.1fs; training", len(rows), trained, record_s
    )
    transcript_rows, passes = len(rows), renamed_passes(warmup, len(rows))
    if passes > 1:
        logger.info("SFT warm-up: rendering %d more passes with new random names", passes - 1)
    for number in range(1, passes):  # new names in every pass: none can be learnt by heart
        rows += sft_rows(tokenizer, transcripts, random_names=warmup.random_names, seed=args.seed + number)
    final_loss = _train(model_path, tokenizer, rows, args, warmup, out, passes)
    train_s = time.perf_counter() - started - record_s
    result = SFTWarmupResult(
        out, False, key, transcript_rows, trained, record_s, train_s, time.perf_counter() - started, final_loss
    )
    (out / META_FILE).write_text(json.dumps(result.to_json(), indent=2))
    logger.info("SFT warm-up: done in %.1fs (record %.1fs, train %.1fs); model at %s", result.total_s, record_s,
                train_s, out)  # fmt: skip
    return result


def _train(
    model_path: str,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    args: Any,
    warmup: SFTWarmupConfig,
    out: Path,
    passes: int = 1,
) -> float | None:
    """Train with TRL's ``SFTTrainer`` (running shared prompts once) on pre-tokenized rows; save to ``out``.

    ``rows`` holds ``passes`` renderings of the transcripts (:func:`renamed_passes`): the epochs count passes
    over the transcripts, so each rendering is trained ``num_train_epochs / passes`` times.
    """
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from agentrl_trainer.sft.prefix import PrefixSharingSFTTrainer, task_batches

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    config = SFTConfig(
        output_dir=str(tmp),
        num_train_epochs=warmup.num_train_epochs / passes,
        max_steps=warmup.max_steps,
        learning_rate=warmup.learning_rate,
        lr_scheduler_type=warmup.lr_scheduler_type,
        warmup_steps=warmup.warmup_steps,
        per_device_train_batch_size=warmup.per_device_train_batch_size,
        max_length=args.max_total_tokens,
        seed=args.seed,
        bf16=bool(args.bf16),
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        # With share_prefix, task_batches shuffles batches of one task each (so each shares its prompt).
        shuffle_dataset=not warmup.share_prefix,
        gradient_checkpointing=False if warmup.share_prefix else SFTConfig.gradient_checkpointing,
    )
    ordered = [{k: row[k] for k in ("input_ids", "labels")} for row in rows]
    if warmup.share_prefix:
        tasks = [row["task"] for row in rows]
        ordered = task_batches(ordered, tasks, warmup.per_device_train_batch_size, args.seed)
    trainer_class = PrefixSharingSFTTrainer if warmup.share_prefix else SFTTrainer
    trainer = trainer_class(
        model=model_path, args=config, train_dataset=Dataset.from_list(ordered), processing_class=tokenizer
    )
    trainer.train()
    trainer.save_model(str(tmp))
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.replace(out)
    return float(losses[-1]) if losses else None


def _read_meta(out: Path) -> dict[str, Any] | None:
    path = out / META_FILE
    if not path.is_file() or not (out / "config.json").is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return None


def _cache_dir() -> Path:
    from agentrl_envs.core import resolve_cache_dir

    return resolve_cache_dir() / "sft-warmup"
