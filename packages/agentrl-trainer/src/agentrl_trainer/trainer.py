"""``AgentRLTrainer``: TRL's ``GRPOTrainer`` fed by asynchronous multi-turn rollouts.

What is TRL's and what is ours:

* kept from TRL unchanged: the model/optimizer/scheduler set-up, ``compute_loss``/``_compute_loss`` with all
  its loss types (clipping, ``tool_mask``, token-level advantages of shape ``(B, T)``), logging through
  ``_metrics`` and ``report_to``, checkpointing, and ``parse_response``/``add_response_schema`` for tool calls;
* replaced: ``_prepare_inputs``. TRL generates a batch and then trains on it; here a
  :class:`~agentrl_trainer.rollout.producer.RolloutProducer` plays episodes in a background event loop the
  whole time, and each step takes the complete GRPO groups that are queued (between ``min_groups_per_step``
  and ``max_groups_per_step``: the dynamic batch size), drops or down-weights stale ones, and builds the
  loss inputs. ``old_per_token_logps`` are the sampling engine's own log-probs, so TRL's ratio is the
  token-level importance correction for asynchrony and cross-policy sampling.
* added: a callback that pushes the new weights to the rollout engines after every optimizer step (episodes
  in flight keep going; their next turns carry the new version), task advantage normalization, metrics and
  an end-of-run report.

``trl.experimental.async_grpo`` was read for its design (a rollout worker behind a Protocol, a queue, version
tags, weight transfer) but it derives from TRL's base trainer rather than ``GRPOTrainer`` and runs rollouts
against a vLLM server in another process; we keep ``GRPOTrainer`` (as DESIGN.md requires) and run an
in-process asyncio producer that also steps the environments.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOTrainer

from agentrl_trainer.batch import BatchOptions, build_inputs, without_zero_advantage_rows
from agentrl_trainer.config import AgentRLConfig
from agentrl_trainer.distributed import (
    all_reduce_sum,
    engine_weights,
    main_process_weights,
    shard,
    weights_checksum,
)
from agentrl_trainer.engines.factory import build_sampler, engine_model
from agentrl_trainer.engines.spec import EngineSpec
from agentrl_trainer.envs import TaskEnvFactory, check_prompts_fit, make_env_factory, probe_task
from agentrl_trainer.metrics import diversity_metrics, staleness_metrics, task_metrics
from agentrl_trainer.rollout.cross_policy import EngineSampler
from agentrl_trainer.rollout.episode import EpisodeLimits
from agentrl_trainer.rollout.producer import InfraErrorPolicy, RolloutMode, RolloutProducer
from agentrl_trainer.rows import mixed_rows, task_rows
from agentrl_trainer.staleness import StalenessRule
from agentrl_trainer.types import Group

if TYPE_CHECKING:
    from agentrl_trainer.engines.shared_servers import SharedServers

__all__ = ["AgentRLTrainer", "env_reward"]

logger = logging.getLogger(__name__)


def env_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """The environment's reward, passed through (rewards come from the environments, not a reward model)."""
    return list(kwargs.get("env_reward") or [0.0] * len(completions))


class _WeightSync(TrainerCallback):
    """After each optimizer step, hand the new weights to the rollout engines."""

    def __init__(self, trainer: AgentRLTrainer) -> None:
        self.trainer = trainer

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.trainer._sync_weights(state.global_step)


class _LiveReward(TrainerCallback):
    """Show the latest per-task reward on the training progress bar."""

    def __init__(self, trainer: AgentRLTrainer) -> None:
        self.trainer = trainer

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        rewards = {
            k.split("/")[1]: v for k, v in (logs or {}).items() if k.startswith("env/") and k.endswith("/reward")
        }
        if not rewards:
            return
        for callback in self.trainer.callback_handler.callbacks:
            bar = getattr(callback, "training_bar", None)
            if bar is not None:
                bar.set_postfix({task: f"{value:.2f}" for task, value in sorted(rewards.items())}, refresh=False)


class AgentRLTrainer(GRPOTrainer):
    """GRPO on multi-turn tool-use environments with asynchronous rollouts (see the module docstring)."""

    def __init__(
        self,
        model: str | torch.nn.Module,
        args: AgentRLConfig,
        *,
        processing_class: Any = None,
        env_factories: dict[str, TaskEnvFactory] | None = None,
        callbacks: list[TrainerCallback] | None = None,
        peft_config: Any = None,
    ) -> None:
        """Set up training on ``args.tasks``.

        Args:
            model: A model id/path or a loaded causal LM (as ``GRPOTrainer`` takes).
            args: The configuration.
            processing_class: The tokenizer; loaded from ``model`` when omitted. Its chat template must render
                tools and it needs a response parser (TRL's ``add_response_schema`` knows the common ones).
            env_factories: Extra tasks, ``{name: split -> env}``, checked before the registered AgentBench tasks.
            callbacks: More ``TrainerCallback``s.
            peft_config: Train a peft adapter (e.g. ``peft.LoraConfig``) instead of every weight, as in TRL. With
                ``rollout_engine: vllm`` (either mode, any ``vllm_replicas``) the policy and lagged engines are then
                versioned LoRA adapters on the same vLLM engines (docs/deployment.md).
        """
        if not isinstance(args, AgentRLConfig):
            raise TypeError(f"args must be an AgentRLConfig, got {type(args).__name__}.")
        self.env_factory = make_env_factory(env_factories, args.env_kwargs)  # pyright: ignore[reportArgumentType]  # a mapping or None after __post_init__
        self.rows_by_task = {}
        first_prompts = []
        for task in args.tasks:
            count, first_prompt = probe_task(self.env_factory, task, args.task_split)
            if first_prompt is not None:
                first_prompts.append(first_prompt)
            if args.max_samples_per_task is not None:
                count = min(count, args.max_samples_per_task)
            self.rows_by_task[task] = task_rows(task, args.task_split, count)
        # GRPOTrainer wants a dataset; its rows are the training rows, though the producer schedules them itself.
        dataset = Dataset.from_list(
            [{"task": r.task, "split": r.split, "index": r.index} for rows in self.rows_by_task.values() for r in rows]
        )
        super().__init__(
            model=model,
            reward_funcs=[env_reward],  # pyright: ignore[reportArgumentType]  # TRL's RewardFunc alias leaves out plain functions
            args=args,
            train_dataset=dataset,
            processing_class=processing_class,
            callbacks=callbacks,
            peft_config=peft_config,
        )
        self._ensure_response_parser()
        self.prompt_tokens = check_prompts_fit(
            first_prompts, self._tokenizer, args.max_total_tokens, args.max_new_tokens_per_turn
        )
        """Per task, the token length of the first prompt that starts (checked against ``max_total_tokens``)."""
        self.sft_warmup: dict[str, Any] | None = None
        """The SFT warm-up stage's result when the run had one (``summary.json``'s ``sft_warmup``)."""
        self.add_callback(_WeightSync(self))
        self.add_callback(_LiveReward(self))
        self.producer: RolloutProducer | None = None
        self._batches_left: int | None = None
        """Training batches the run still takes (``max_steps`` times the accumulation steps); ``None``: unbounded."""
        self.sampler: EngineSampler | None = None
        self.staleness_histogram: Counter[int] = Counter()
        self.stale_dropped = 0
        self.idle_s = 0.0
        self.first_idle_s = 0.0
        """The first step's wait: the pipeline filling up once, before any rollout could run beside training."""
        self.rollouts_started = 0.0
        """perf_counter() when the engines were up and the producer started (the run's clock for idle fractions)."""
        self._last_tick = (0.0, 0)
        self._step_groups: list[Group] = []
        self.shared_servers: SharedServers | None = None
        """Several processes, vLLM server mode: the run's one set of servers (the main process loads them)."""

    # ----------------------------------------------------------------- set-up

    def _ensure_response_parser(self) -> None:
        tokenizer = self._tokenizer
        if getattr(tokenizer, "response_template", None) or getattr(tokenizer, "response_schema", None):
            return
        from trl.chat_template_utils import add_response_schema

        try:
            add_response_schema(tokenizer)
        except ValueError as e:
            raise ValueError(
                "The tokenizer has no response parser for tool calls and TRL does not know its chat template; set "
                "tokenizer.response_template (see transformers' chat response parsing docs)."
            ) from e

    @property
    def config(self) -> AgentRLConfig:
        """``args``, typed: the constructor takes nothing but an :class:`AgentRLConfig`."""
        return cast(AgentRLConfig, self.args)

    @property
    def staleness(self) -> StalenessRule:
        """The staleness rule of the config: the producer admits groups by it, each step filters by it."""
        return StalenessRule.from_config(self.config)

    def build_engines(self) -> EngineSampler:
        """The policy engine and the lagged engines, loaded with the current weights (:mod:`~.engines.factory`)."""
        accelerator = self.accelerator
        spec = EngineSpec.from_config(
            self.config,
            self._tokenizer,
            version=self.state.global_step,
            process_index=accelerator.process_index,
            num_processes=accelerator.num_processes,
            is_main_process=accelerator.is_main_process,
        )
        model = engine_model(accelerator, self.model, self.model_wrapped, spec.backend)  # pyright: ignore[reportArgumentType]  # set by the time engines are built
        engines = build_sampler(spec, model, self._tokenizer)
        self.shared_servers = engines.shared_servers
        return engines.sampler

    def _ensure_producer(self) -> RolloutProducer:
        if self.producer is not None:
            return self.producer
        args = self.config
        self.sampler = self.build_engines()
        self.producer = RolloutProducer(
            # Every process builds the same stream and plays its own share of it (see agentrl_trainer.distributed).
            rows=shard(
                mixed_rows(self.rows_by_task, weights=args.task_weights, seed=args.seed + self.state.global_step),
                self.accelerator.process_index,
                self.accelerator.num_processes,
            ),
            env_factory=self.env_factory,
            sampler=self.sampler,
            tokenizer=self._tokenizer,
            num_generations=self.num_generations,  # pyright: ignore[reportArgumentType]  # GRPOConfig fills num_generations
            limits=EpisodeLimits(
                max_turns=args.max_turns,
                max_new_tokens=args.max_new_tokens_per_turn,
                max_total_tokens=args.max_total_tokens,
                unfinished_penalty=args.unfinished_penalty,
            ),
            queue_size=args.queue_size,
            mode=cast(RolloutMode, args.rollout_mode),
            infra_error_policy=cast(InfraErrorPolicy, args.infra_error_policy),
            max_infra_retries=args.max_infra_retries,
            max_concurrent_envs=args.max_concurrent_envs,
            staleness=self.staleness,
            groups_per_version=args.min_groups_per_step,
            max_infra_error_rate=args.max_infra_error_rate,
            infra_error_window=args.infra_error_window,
        )
        self._batches_left = (
            (args.max_steps - self.state.global_step) * args.gradient_accumulation_steps if args.max_steps > 0 else None
        )
        self._update_group_budget()
        # Processes sample different groups; their engines' random streams differ too.
        torch.manual_seed(args.seed + self.state.global_step + 1_000_003 * self.accelerator.process_index)
        self.rollouts_started = time.perf_counter()
        self._last_tick = (self.rollouts_started, 0)
        self.producer.start()
        return self.producer

    def _update_group_budget(self) -> None:
        """Tell the producer how many groups the run can still take: async rollouts past the last step are waste."""
        if self.producer is not None and self._batches_left is not None:
            self.producer.groups_left = max(self._batches_left, 0) * self.config.max_groups_per_step

    def _stop_producer(self) -> None:
        if self.producer is not None:
            self.producer.stop()

    def _sync_weights(self, version: int) -> None:
        if self.sampler is None:
            return
        if self.shared_servers is not None:
            self._push_to_shared_servers(self.sampler, version)
            return
        # Every process's engines get the main process's weights, whole and bit for bit.
        state_dict = engine_weights(self.accelerator, self.model_wrapped)  # pyright: ignore[reportArgumentType]  # set once training runs
        self.sampler.update_weights(state_dict, version)
        if self.config.distributed_log:
            self._log_rank_step(version, state_dict)

    def _push_to_shared_servers(self, sampler: EngineSampler, version: int) -> None:
        """The main process loads ``version`` into the shared servers once; the others then move their tags."""
        from agentrl_trainer.engines.shared_servers import push_from_main

        is_main = self.accelerator.is_main_process
        weights = main_process_weights(self.accelerator, self.model_wrapped)  # pyright: ignore[reportArgumentType]  # set once training runs
        push_from_main(lambda: sampler.update_weights(weights or {}, version), is_main=is_main)
        if not is_main:
            sampler.update_weights({}, version)  # SharedServerEngines: tags only
        if self.config.distributed_log:
            self._log_rank_step(version, weights)

    def _release_shared_servers(self, finished: bool) -> None:
        """Stop the shared servers this process started, once every process has stopped sending them requests.

        After a failure the processes are no longer in step (a barrier could wait forever): stop at once.
        """
        if self.shared_servers is None:
            return
        if finished:
            self.accelerator.wait_for_everyone()
        self.shared_servers.stop()

    def _log_rank_step(self, version: int, pushed: dict[str, torch.Tensor] | None) -> None:
        """One line of output_dir/ranks/rank-R.jsonl: this step's groups and the policy engine's weights.

        ``pushed`` is ``None`` on a process that pushed nothing (shared servers: the main process loads them).
        """
        engine_model = getattr(self.sampler.policy, "model", None) if self.sampler is not None else None
        weights = engine_model.state_dict() if isinstance(engine_model, torch.nn.Module) else pushed
        line = {
            "rank": self.accelerator.process_index,
            "world_size": self.accelerator.num_processes,
            "step": version,
            "engine_version": self.sampler.policy.version if self.sampler is not None else None,
            "engine_weights_sha256": weights_checksum(weights) if weights is not None else None,
            "groups": [[g.row.task, g.row.split, g.row.index] for g in self._step_groups],
            # Policy versions of the trained turns: which weights sampled them.
            "turn_versions": sorted({v for g in self._step_groups for t in g.trajectories for v in t.versions}),
        }
        path = Path(self.config.output_dir) / "ranks" / f"rank-{self.accelerator.process_index}.jsonl"  # pyright: ignore[reportArgumentType]  # TrainingArguments fills output_dir
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(json.dumps(line) + "\n")

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """TRL's ``train``; the rollout producer is stopped however it ends."""
        finished = False
        try:
            result = super().train(*args, **kwargs)
            finished = True
            return result
        finally:
            self._stop_producer()
            self._release_shared_servers(finished)
            if self.config.write_report and self.is_world_process_zero():
                from agentrl_trainer.report import write_report

                write_report(self)

    # ----------------------------------------------------------------- the training batch

    def _prepare_inputs(self, generation_batch: Any) -> dict[str, Any]:
        if not self.model.training:  # pyright: ignore[reportOptionalMemberAccess]  # set once training runs
            raise NotImplementedError("AgentRLTrainer does not evaluate in-loop; run agentrl-eval on a checkpoint.")
        args = self.config
        first_step = self.producer is None
        producer = self._ensure_producer()
        version = self.state.global_step
        started = time.perf_counter()
        # Sync: exactly max_groups_per_step fresh groups. Async: every queued group, at least the minimum
        # after stale ones are dropped (the dynamic batch size).
        minimum = args.max_groups_per_step if args.rollout_mode == "sync" else args.min_groups_per_step
        groups: list[Group] = []
        while len(groups) < minimum:
            missing = minimum - len(groups)
            if args.rollout_mode == "sync":
                producer.request(missing)
            fetched = producer.get_groups(missing, args.max_groups_per_step - len(groups), args.rollout_timeout_s)
            groups.extend(self._filter_stale(fetched, version))
        if self._batches_left is not None:
            self._batches_left -= 1
            self._update_group_budget()
        idle = time.perf_counter() - started
        if first_step:
            self.first_idle_s = idle
        self.idle_s += idle
        inputs, trajectories = build_inputs(
            groups,
            BatchOptions(
                scale_rewards=args.scale_rewards,
                task_advantage_normalization=args.task_advantage_normalization,
                pad_token_id=self._tokenizer.pad_token_id,  # pyright: ignore[reportArgumentType]  # an int for the tokenizers we take
                task_names=tuple(args.tasks),
                all_reduce=all_reduce_sum if self.accelerator.num_processes > 1 else None,
            ),
        )
        self._step_groups = groups
        trained_rows = len(trajectories)
        if self._zero_rows_are_inert():
            inputs, trained_rows = without_zero_advantage_rows(inputs)
        if self.beta != 0.0:
            inputs["ref_per_token_logps"] = self._reference_logps(inputs)
        self._record(groups, trajectories, idle, version, trained_rows)
        device = self.accelerator.device
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}

    def _zero_rows_are_inert(self) -> bool:
        """Whether a row whose advantages are all 0 adds nothing to the loss (see ``without_zero_advantage_rows``)."""
        return (
            self.loss_type in ("dapo", "cispo", "vespo")
            and self.beta == 0.0
            and not self._entropy_bonus_enabled
            and self.top_entropy_quantile == 1.0
            and not self.aux_loss_enabled
        )

    def _filter_stale(self, groups: list[Group], version: int) -> list[Group]:
        kept, dropped = self.staleness.filter(groups, version)
        self.stale_dropped += len(dropped)
        for group in dropped:
            logger.info(
                "dropped a stale group task=%s index=%d staleness=%d policy_version=%d",
                group.row.task,
                group.row.index,
                group.staleness(version),
                version,
            )
        return kept

    def _reference_logps(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        model = self.ref_model if self.ref_model is not None else self.model
        with torch.no_grad():
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, inputs["completion_ids"].size(1)
            )
        return logps

    def _record(
        self, groups: list[Group], trajectories: list[Any], idle_s: float, version: int, trained_rows: int
    ) -> None:
        producer = self.producer
        assert producer is not None
        values = task_metrics(trajectories)
        values.update(staleness_metrics(groups, version, self.staleness_histogram))
        values.update(diversity_metrics(groups))
        now = time.perf_counter()
        last_time, last_episodes = self._last_tick
        episodes = producer.stats.episodes
        values["rollout/trajectories_per_s"] = (episodes - last_episodes) / max(now - last_time, 1e-9)
        self._last_tick = (now, episodes)
        values["rollout/groups_per_step"] = float(len(groups))
        values["rollout/trained_rows_fraction"] = trained_rows / len(trajectories)
        values["rollout/queue_depth"] = float(producer.queue_depth)
        values["rollout/trainer_idle_s"] = idle_s
        values["rollout/trainer_idle_fraction"] = self.idle_s / max(now - self.rollouts_started, 1e-9)
        values["rollout/stale_dropped_total"] = float(self.stale_dropped)
        values["rollout/infra_errors_total"] = float(producer.stats.infra_errors)
        values["rollout/infra_dropped_groups_total"] = float(producer.stats.dropped_groups)
        for kind, count in producer.faults.counts.items():
            values[f"rollout/infra_errors/{kind}"] = float(count)
        values["rollout/unstartable_samples"] = float(len(producer.faults.unstartable))
        values["reward"] = sum(t.reward for t in trajectories) / len(trajectories)
        for key, value in values.items():
            self._metrics["train"][key].append(value)
