"""``SFTWarmupConfig``: the ``sft_warmup:`` block of a training config (supervised warm start before RL).

The block is a mapping in the YAML (``AgentRLConfig.sft_warmup``); this dataclass checks it and documents every
key through ``help``, as ``AgentRLConfig`` does for its own fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["SFTWarmupConfig"]


@dataclass
class SFTWarmupConfig:
    """Supervised fine-tuning on recorded transcripts before (or instead of) RL (see each field's ``help``)."""

    source: str = field(
        default="oracle",
        metadata={
            "help": "oracle: play each task's oracle on tasks/split and train on its successful transcripts; or a "
            "path to a JSONL of recorded transcripts (agentrl-eval's episodes.jsonl, or rows with messages, task "
            "and optionally tools)."
        },
    )
    tasks: list[str] | None = field(
        default=None, metadata={"help": "oracle: tasks to record (default: the run's tasks)."}
    )
    split: str | None = field(default=None, metadata={"help": "oracle: split to record (default: task_split)."})
    env_kwargs: dict[str, dict[str, Any]] | None = field(
        default=None,
        metadata={
            "help": "oracle: env options per task for recording, merged over the run's env_kwargs, e.g. {db: "
            "{train_file: a larger synthesized file}} to warm up on more tasks than RL plays (None: the run's)."
        },
    )
    max_samples_per_task: int | None = field(
        default=None, metadata={"help": "Use at most this many transcripts per task (None: all)."}
    )
    min_score: float = field(
        default=1.0, metadata={"help": "Keep transcripts whose task score is at least this (1.0: successes only)."}
    )
    max_oracle_turns: int = field(default=30, metadata={"help": "oracle: most oracle moves per sample."})
    oracle_options: dict[str, dict[str, Any]] = field(
        default_factory=dict,
        metadata={
            "help": "oracle: options per task for its oracle, e.g. {db: {recovery: true}} (transcripts with an "
            "error-and-fix turn; see docs/synth.md)."
        },
    )
    random_names: float = field(
        default=0.0,
        metadata={
            "help": "Share of oracle transcripts (0-1) whose task names (a DB task's table, columns and text values: "
            "the env's copyable_names) are replaced by random words, drawn anew at every pass over the data, so a "
            "model learns to copy names from the prompt instead of recalling the training set's "
            "(docs/training.md). Tasks whose env declares no names are left as they are."
        },
    )
    num_train_epochs: float = field(default=3.0, metadata={"help": "Passes over the transcripts."})
    max_steps: int = field(default=-1, metadata={"help": "Stop after this many optimizer steps (-1: epochs decide)."})
    learning_rate: float = field(default=1.0e-4, metadata={"help": "SFT learning rate."})
    lr_scheduler_type: str = field(
        default="linear",
        metadata={
            "help": "Learning-rate schedule (a transformers scheduler name): linear decays to 0 over the run; "
            "constant_with_warmup holds the rate after warmup_steps, which taught a tiny model the tool-call "
            "format where a decay did not (docs/benchmarks.md)."
        },
    )
    warmup_steps: int = field(default=0, metadata={"help": "Steps of linear learning-rate warm-up from 0."})
    per_device_train_batch_size: int = field(default=4, metadata={"help": "Transcripts per SFT step."})
    share_prefix: bool = field(
        default=True,
        metadata={
            "help": "Run the prompt the rows of a batch share (one task's system prompt and tools) once per batch, "
            "batching transcripts by task. Turns TRL's gradient checkpointing off (a cached prefix cannot be "
            "recomputed); set false to keep it for a model whose activations do not fit."
        },
    )
    output_dir: str | None = field(
        default=None,
        metadata={
            "help": "Where the warmed-up model is saved (default: $AGENTRL_CACHE_DIR/sft-warmup/<hash of the "
            "inputs>). A directory already holding a model for the same inputs is reused, not retrained."
        },
    )

    def __post_init__(self) -> None:
        """Check the values."""
        if self.min_score < 0:
            raise ValueError(f"sft_warmup.min_score must be >= 0, got {self.min_score}.")
        for name in ("max_oracle_turns", "per_device_train_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"sft_warmup.{name} must be >= 1, got {getattr(self, name)}.")
        if self.max_samples_per_task is not None and self.max_samples_per_task < 1:
            raise ValueError(f"sft_warmup.max_samples_per_task must be >= 1 or None, got {self.max_samples_per_task}.")
        for name, example in (("oracle_options", "{db: {recovery: true}}"), ("env_kwargs", "{db: {train_file: F}}")):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values())
            ):
                raise ValueError(f"sft_warmup.{name} must map a task to its options, e.g. {example}; got {value!r}.")
        if not 0.0 <= self.random_names <= 1.0:
            raise ValueError(f"sft_warmup.random_names is a share of transcripts, 0 to 1; got {self.random_names}.")
        if self.random_names and not self.is_oracle:
            raise ValueError(
                "sft_warmup.random_names needs source: oracle (only oracle transcripts carry their task's names); "
                "set it to 0 for a transcript file."
            )
        if self.warmup_steps < 0:
            raise ValueError(f"sft_warmup.warmup_steps must be >= 0, got {self.warmup_steps}.")
        if self.num_train_epochs <= 0 and self.max_steps <= 0:
            raise ValueError("sft_warmup needs num_train_epochs > 0 or max_steps > 0.")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> SFTWarmupConfig:
        """Build from the YAML mapping; an unknown key is an error that lists the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"sft_warmup has unknown keys {unknown}; known keys: {sorted(known)}.")
        return cls(**values)

    @property
    def is_oracle(self) -> bool:
        """Whether transcripts come from playing the oracles (not from a file)."""
        return self.source == "oracle"
