"""``AgentRLConfig``: TRL's ``GRPOConfig`` plus the rollout, staleness, cross-policy and normalization knobs.

Every TRL knob keeps its meaning (loss type, epsilon, beta, learning rate, ``num_generations`` = G,
``temperature`` for sampling, ``report_to``...). The fields below are AgentRL's; the docs' config reference
is generated from their ``help``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from trl.trainer.grpo_config import GRPOConfig  # trl's lazy __init__ is not a typed re-export

from agentrl_trainer.engines.spec import EngineBackend, VLLMMode
from agentrl_trainer.sft.config import SFTWarmupConfig
from agentrl_trainer.staleness import StalePolicy

__all__ = ["AgentRLConfig"]

logger = logging.getLogger(__name__)


@dataclass
class AgentRLConfig(GRPOConfig):
    """Configuration of :class:`~agentrl_trainer.AgentRLTrainer` (see each field's ``help``)."""

    # A JSON string on the command line (--env_kwargs '{"db": {...}}') is parsed like TRL's dict fields.
    _VALID_DICT_FIELDS = [*GRPOConfig._VALID_DICT_FIELDS, "env_kwargs", "sft_warmup", "stage_eval"]

    # ----------------------------------------------------------------- tasks
    tasks: list[str] = field(
        default_factory=lambda: ["db"],
        metadata={
            "help": "Tasks to train on: short names such as db, kg, os; tasks registered with "
            "agentrl_envs.register_task or an agentrl_envs.tasks entry point; module:Class; or names an env_factory "
            "knows."
        },
    )
    task_split: str = field(default="train", metadata={"help": "Split the training rows come from."})
    task_weights: list[float] | None = field(
        default=None,
        metadata={"help": "Sampling weight per task (same order as tasks); None mixes tasks round-robin."},
    )
    max_samples_per_task: int | None = field(
        default=None, metadata={"help": "Use only the first N samples of each task (None: all)."}
    )
    env_kwargs: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Environment options per task, passed to agentrl_envs.make (or to an env_factory), e.g. "
            "{db: {train_file: db_train.jsonl}} for the DB train split."
        },
    )

    # ----------------------------------------------------------------- rollouts
    rollout_mode: str = field(
        default="async",
        metadata={"help": "async: rollouts run beside training; sync: generate the batch, then train (TRL's way)."},
    )
    rollout_engine: str = field(
        default="hf",
        metadata={
            "help": "Rollout engine: hf (transformers generate in the trainer's process), hf_process (the same in "
            "an engine process per engine, so generation and the optimizer step do not share threads and the GIL) "
            "or vllm (vLLM, see vllm_mode and docs/deployment.md)."
        },
    )
    engine_num_threads: int = field(default=1, metadata={"help": "hf_process: torch threads of each engine process."})
    engine_cpus: list[int] | None = field(
        default=None,
        metadata={
            "help": "hf_process: CPU cores the engine processes run on (os.sched_setaffinity; default: all of the "
            "trainer's). Pin the trainer to the other cores (taskset) to keep rollouts and training apart."
        },
    )
    # TRL's own field, same meaning; the default is server here (TRL: colocate), which needs no vllm in this venv.
    vllm_mode: str = field(
        default="server",
        metadata={
            "help": "vllm: server (vLLM servers over HTTP, vLLM in its own venv) or colocate (vLLM's AsyncLLM in "
            "the trainer's process; vllm must be importable here), docs/deployment.md. Under accelerate launch, "
            "server mode has one set of servers for all processes (the main process starts and loads them); "
            "colocate mode one engine per process."
        },
    )
    vllm_replicas: int = field(
        default=1,
        metadata={
            "help": "vllm: servers (or colocated engines) per engine, behind a router; servers are per run, not per "
            "training process. A LoRA policy (peft_config) has all its engines, policy and lagged, as adapter "
            "versions on these same replicas."
        },
    )
    vllm_server_urls: list[str] | None = field(
        default=None,
        metadata={
            "help": "vllm: use these running policy servers instead of launching them (under accelerate launch "
            "every process samples from them; only the main process loads weights). For a LoRA policy they must "
            "serve the base model with --enable-lora (and --max-lora-rank, --max-loras) and "
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, and see the adapters' directory (docs/deployment.md)."
        },
    )
    vllm_server_args: list[str] = field(
        default_factory=list[str],
        metadata={"help": "vllm: extra `vllm serve` flags, e.g. ['--tensor-parallel-size', '2']."},
    )
    max_turns: int = field(default=8, metadata={"help": "Most assistant turns per episode."})
    max_new_tokens_per_turn: int = field(default=64, metadata={"help": "Most tokens the model writes per turn."})
    max_total_tokens: int = field(
        default=2048, metadata={"help": "Most tokens per episode, prompt and environment messages included."}
    )
    unfinished_penalty: float = field(
        default=-0.2,
        metadata={"help": "Added to the reward of episodes ended by a turn, token or round limit (paper: -0.2)."},
    )
    infra_error_policy: str = field(
        default="retry",
        metadata={"help": "On an environment fault: retry the episode on a fresh env, or drop_group at once."},
    )
    max_infra_retries: int = field(default=2, metadata={"help": "Retries of one episode before its group is dropped."})
    max_infra_error_rate: float = field(
        default=0.5,
        metadata={
            "help": "Stop the run, with the first fault's traceback, when more than this fraction of the last "
            "infra_error_window episodes failed with infrastructure errors (1.0: never stop)."
        },
    )
    infra_error_window: int = field(
        default=32, metadata={"help": "Episodes the infrastructure-error rate is measured over."}
    )
    max_concurrent_envs: int = field(default=64, metadata={"help": "Threads for environment steps (astep)."})
    rollout_timeout_s: float = field(
        default=600.0, metadata={"help": "Fail the run if no complete group arrives for this long."}
    )
    engine_max_batch_size: int = field(default=32, metadata={"help": "Most sequences per hf engine generate call."})
    partial_rollout_chunk_tokens: int = field(
        default=0,
        metadata={
            "help": "Partial rollouts (hf and hf_process engines): sample a turn this many tokens at a time, so a "
            "weight update waits for one chunk and the rest of the turn is sampled with the new weights; each "
            "token keeps the version that sampled it and staleness counts the oldest. 0: off (whole turns)."
        },
    )

    # ----------------------------------------------------------------- async pipeline
    min_groups_per_step: int = field(
        default=1,
        metadata={
            "help": "Dynamic batch size: train as soon as this many complete groups are queued "
            "(also the groups admitted per policy version, see max_staleness)."
        },
    )
    max_groups_per_step: int = field(
        default=4, metadata={"help": "Dynamic batch size: take at most this many groups per optimizer step."}
    )
    queue_size: int = field(
        default=8, metadata={"help": "Groups in flight or queued at once (the bounded queue; backpressure)."}
    )
    max_staleness: int = field(
        default=2,
        metadata={
            "help": "Groups whose oldest current-policy turn lags more versions than this are stale "
            "(lagged-engine turns lag by design and do not count). With stale_policy=drop, rollouts are also "
            "admitted so that at most "
            "(max_staleness + 1) * min_groups_per_step groups are live per version."
        },
    )
    stale_policy: str = field(default="drop", metadata={"help": "Stale groups: drop them, or downweight them."})
    stale_weight_decay: float = field(
        default=0.5, metadata={"help": "downweight: advantages scaled by decay ** (staleness - max_staleness)."}
    )

    # ----------------------------------------------------------------- cross-policy sampling
    lagged_fraction: float = field(
        default=0.0, metadata={"help": "Cross-policy sampling: probability a turn is sampled by a lagged engine."}
    )
    lagged_refresh_steps: int = field(
        default=4, metadata={"help": "Cross-policy sampling: lagged engines get new weights every K steps."}
    )
    num_lagged_engines: int = field(default=1, metadata={"help": "Cross-policy sampling: number of lagged engines."})

    # ----------------------------------------------------------------- supervised warm start
    sft_warmup: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Supervised warm start before RL: a mapping of SFTWarmupConfig keys (source: oracle or a "
            "transcripts JSONL, num_train_epochs, learning_rate, ...; see docs/training.md). None: no warm start."
        },
    )

    stage_eval: dict[str, Any] | str | None = field(
        default=None,
        metadata={
            "help": "Score the starting model, the SFT checkpoint and the RL result on held-out sets, per task: a "
            "mapping of StageEvalConfig keys (sets, limit, temperature; see docs/training.md). None: no scoring."
        },
    )

    # ----------------------------------------------------------------- advantages and reports
    task_advantage_normalization: bool = field(
        default=True, metadata={"help": "Normalize advantages per task over action tokens (paper Eq. 1)."}
    )
    distributed_log: bool = field(
        default=False,
        metadata={
            "help": "Write output_dir/ranks/rank-R.jsonl per training process: each step's groups and a checksum "
            "of the weights loaded into its policy engine (to check sharding and weight sync)."
        },
    )
    write_report: bool = field(
        default=True, metadata={"help": "Write summary.json and PNG plots to output_dir when training ends."}
    )

    def __post_init__(self) -> None:
        """Check AgentRL's fields after TRL's own checks."""
        if self.num_generations is None:
            self.num_generations = 4
        # One optimizer step per batch of groups: the dynamic batch is not split or replayed.
        self.per_device_train_batch_size = self.num_generations
        self.steps_per_generation = None
        self.generation_batch_size = None
        if self.bf16 is None and not _has_accelerator():
            self.bf16 = False  # TRL defaults to bf16, which a CPU-only machine refuses
        super().__post_init__()
        self._check_choice("rollout_mode", ("async", "sync"))
        self._check_choice("rollout_engine", get_args(EngineBackend))
        self._check_choice("vllm_mode", get_args(VLLMMode))
        if self.vllm_mode == "colocate" and self.vllm_server_urls:
            raise ValueError("vllm_server_urls needs vllm_mode=server: colocated engines run in this process.")
        self._check_choice("infra_error_policy", ("retry", "drop_group"))
        self._check_choice("stale_policy", get_args(StalePolicy))
        if not self.tasks:
            raise ValueError("tasks is empty; name at least one task, e.g. tasks=['db'].")
        if self.task_weights is not None and (
            len(self.task_weights) != len(self.tasks) or any(w < 0 for w in self.task_weights)
        ):
            raise ValueError(
                f"task_weights {self.task_weights} must give one non-negative weight per task in {self.tasks}."
            )
        self._check_env_kwargs()
        if self.gradient_accumulation_steps != 1 or self.num_iterations != 1:
            raise ValueError(
                "AgentRLTrainer takes one optimizer step per batch of groups: set gradient_accumulation_steps=1 "
                f"and num_iterations=1 (got {self.gradient_accumulation_steps} and {self.num_iterations})."
            )
        if not 1 <= self.min_groups_per_step <= self.max_groups_per_step:
            raise ValueError(
                f"Need 1 <= min_groups_per_step ({self.min_groups_per_step}) <= max_groups_per_step "
                f"({self.max_groups_per_step})."
            )
        if self.queue_size < self.max_groups_per_step:
            raise ValueError(
                f"queue_size ({self.queue_size}) must be >= max_groups_per_step ({self.max_groups_per_step}), "
                "or a step could never see a full batch."
            )
        if not 0.0 <= self.lagged_fraction <= 1.0:
            raise ValueError(f"lagged_fraction must be in [0, 1], got {self.lagged_fraction}.")
        for name in (
            "max_turns",
            "max_new_tokens_per_turn",
            "max_total_tokens",
            "lagged_refresh_steps",
            "engine_num_threads",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0, got {self.max_staleness}.")
        if self.partial_rollout_chunk_tokens < 0:
            raise ValueError(
                f"partial_rollout_chunk_tokens must be >= 0 (0: off), got {self.partial_rollout_chunk_tokens}."
            )
        if self.partial_rollout_chunk_tokens and self.rollout_engine == "vllm":
            raise ValueError(
                "partial_rollout_chunk_tokens is implemented for rollout_engine hf and hf_process only; set it to 0 "
                "with vllm."
            )
        if not 0.0 <= self.max_infra_error_rate <= 1.0:
            raise ValueError(
                f"max_infra_error_rate must be in [0, 1] (1.0 never stops), got {self.max_infra_error_rate}."
            )
        if self.infra_error_window < 1:
            raise ValueError(f"infra_error_window must be >= 1, got {self.infra_error_window}.")
        self._check_sft_warmup()
        self._check_stage_eval()

    def _check_stage_eval(self) -> None:
        if self.stage_eval is None:
            return
        if not isinstance(self.stage_eval, dict):
            raise ValueError(
                f"stage_eval must be a mapping such as {{sets: {{dev: {{split: dev}}}}}}, got {self.stage_eval!r}."
            )
        from dataclasses import asdict

        from agentrl_trainer.stages import StageEvalConfig

        self.stage_eval = asdict(StageEvalConfig.from_mapping(self.stage_eval))

    def stage_eval_config(self) -> Any:
        """The ``stage_eval`` block as a checked :class:`~agentrl_trainer.stages.StageEvalConfig` (or None)."""
        from agentrl_trainer.stages import StageEvalConfig

        if self.stage_eval is None:
            return None
        return StageEvalConfig.from_mapping(dict(cast(dict[str, Any], self.stage_eval)))  # a mapping after init

    def _check_sft_warmup(self) -> None:
        if self.sft_warmup is None:
            return
        if isinstance(self.sft_warmup, str):  # a JSON string on the command line is parsed by TRL; a bare path too
            self.sft_warmup = {"source": self.sft_warmup}
        if not isinstance(self.sft_warmup, dict):  # pyright: ignore[reportUnnecessaryIsInstance]  # YAML: any type
            raise ValueError(
                "sft_warmup must be a mapping such as {source: oracle, num_train_epochs: 3}, "
                f"got {self.sft_warmup!r}."
            )
        from dataclasses import asdict

        # Stored back as a plain dict (every default filled in, so {} means all defaults) that TrainingArguments
        # can serialize.
        self.sft_warmup = asdict(SFTWarmupConfig.from_mapping(self.sft_warmup))

    def sft_warmup_config(self) -> SFTWarmupConfig | None:
        """The ``sft_warmup`` block as a checked :class:`~agentrl_trainer.sft.config.SFTWarmupConfig` (or None)."""
        if self.sft_warmup is None:
            return None
        assert isinstance(self.sft_warmup, dict)  # normalized in __post_init__
        return SFTWarmupConfig.from_mapping(self.sft_warmup)

    def _check_env_kwargs(self) -> None:
        if self.env_kwargs is None:
            self.env_kwargs = {}
        if not isinstance(self.env_kwargs, dict) or not all(isinstance(v, dict) for v in self.env_kwargs.values()):
            raise ValueError(
                f"env_kwargs must map a task to its environment options, e.g. {{'db': {{'train_file': 'x.jsonl'}}}}; "
                f"got {self.env_kwargs!r}."
            )
        from agentrl_envs.core.registry import TASKS

        unused = sorted(set(self.env_kwargs) - set(self.tasks))
        # A config may carry options for registered tasks a run leaves out (the quickstart's ALFWorld options
        # when trained with tasks=[db]); a name that is no task at all is a typo.
        unknown = [task for task in unused if task not in TASKS]
        if unknown:
            raise ValueError(
                f"env_kwargs names tasks {unknown} that are neither in tasks {self.tasks} nor AgentBench tasks "
                f"({', '.join(TASKS)}); fix the name, or add the task to tasks."
            )
        if unused:
            logger.info("env_kwargs for %s unused: those tasks are not in tasks %s", unused, self.tasks)
        for task, options in self.env_kwargs.items():
            if "split" in options:
                raise ValueError(f"env_kwargs[{task!r}] sets split; the split is task_split ({self.task_split!r}).")

    def _check_choice(self, name: str, choices: tuple[str, ...]) -> None:
        value = getattr(self, name)
        if value not in choices:
            raise ValueError(f"{name}={value!r} is not supported; choose one of {list(choices)}.")


def _has_accelerator() -> bool:
    import torch

    return torch.cuda.is_available() or (hasattr(torch, "xpu") and torch.xpu.is_available())
