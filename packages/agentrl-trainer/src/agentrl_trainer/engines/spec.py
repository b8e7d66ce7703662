"""``EngineSpec``: every parameter a run's rollout engines are built from, read once from the config.

The policy engine and the lagged engines of one run differ only in their name (and a lagged vLLM engine in
having one replica of its own), so one frozen spec describes them all; the builders take the spec and a name
instead of repeating the same keyword list (:mod:`agentrl_trainer.engines.factory`,
:mod:`agentrl_trainer.engines.vllm_lora`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from agentrl_trainer.engines.vllm_server import VLLMServerConfig

if TYPE_CHECKING:
    from agentrl_trainer.config import AgentRLConfig

__all__ = ["EngineBackend", "EngineSpec", "VLLMMode"]

EngineBackend = Literal["hf", "hf_process", "vllm"]
"""``rollout_engine``: transformers in the trainer's process, in engine processes, or vLLM."""

VLLMMode = Literal["server", "colocate"]
"""``vllm_mode``: vLLM servers over HTTP, or in-process ``AsyncLLM`` engines."""


@dataclass(frozen=True)
class EngineSpec:
    """What every rollout engine of a run is built from (all but its name), and how the sampler mixes them."""

    backend: EngineBackend
    eos_token_id: int
    """End-of-turn token: a turn stops when it is sampled."""
    temperature: float
    version: int
    """The policy version of the weights the engines start with (the trainer's step: nonzero after a resume)."""
    num_lagged: int = 0
    """Lagged engines beside the policy engine (0 when no turn goes to a lagged engine)."""
    lagged_fraction: float = 0.0
    lagged_refresh_steps: int = 1
    seed: int = 0
    """The run's seed (the sampler's draws; hf_process engines derive theirs from it)."""
    process_index: int = 0
    num_processes: int = 1
    """The training processes (``accelerate launch``): each builds its own engines, or shares vLLM servers."""
    is_main_process: bool = True
    """The process that starts shared vLLM servers and loads their weights."""
    output_dir: str = "."
    """vLLM engines load the weights staged under it (``vllm-model``, or ``vllm-model-rankR`` per process)."""
    # hf and hf_process
    pad_token_id: int | None = None
    max_batch_size: int = 32
    num_threads: int = 1
    """hf_process: torch threads of each engine process."""
    cpus: tuple[int, ...] | None = None
    """hf_process: the cores the engine processes run on (``None``: this process's)."""
    chunk_tokens: int = 0
    """hf and hf_process: partial rollouts, sampling this many tokens at a time (0: off)."""
    # vllm
    server: VLLMServerConfig = field(default_factory=lambda: VLLMServerConfig(model=""))
    """The servers' settings; the factory fills in ``model`` and ``dtype`` once the weights are staged."""
    mode: VLLMMode = "server"
    replicas: int = 1
    """vLLM engines behind the policy engine's name (a router over them when more than one)."""
    server_urls: tuple[str, ...] = ()
    """Servers someone else started, used for the policy engine instead of starting ``replicas``."""

    @classmethod
    def from_config(
        cls,
        args: AgentRLConfig,
        tokenizer: Any,
        *,
        version: int,
        process_index: int = 0,
        num_processes: int = 1,
        is_main_process: bool = True,
    ) -> EngineSpec:
        """The spec ``args`` asks for.

        Args:
            args: The run's configuration.
            tokenizer: Gives the end-of-turn and padding tokens.
            version: The trainer's current step.
            process_index: This training process (distinct sampling streams per process).
            num_processes: The training processes.
            is_main_process: Whether this is the main one (accelerate's ``is_main_process``).
        """
        return cls(
            backend=cast(EngineBackend, args.rollout_engine),
            eos_token_id=tokenizer.eos_token_id,
            temperature=args.temperature,
            version=version,
            num_lagged=args.num_lagged_engines if args.lagged_fraction > 0 else 0,
            lagged_fraction=args.lagged_fraction,
            lagged_refresh_steps=args.lagged_refresh_steps,
            seed=args.seed,
            process_index=process_index,
            num_processes=num_processes,
            is_main_process=is_main_process,
            output_dir=str(args.output_dir),
            pad_token_id=tokenizer.pad_token_id,
            max_batch_size=args.engine_max_batch_size,
            num_threads=args.engine_num_threads,
            cpus=tuple(args.engine_cpus) if args.engine_cpus is not None else None,
            chunk_tokens=args.partial_rollout_chunk_tokens,
            server=VLLMServerConfig(
                model="", max_model_len=args.max_total_tokens, extra_args=list(args.vllm_server_args)
            ),
            mode=cast(VLLMMode, args.vllm_mode),
            replicas=args.vllm_replicas,
            server_urls=tuple(args.vllm_server_urls or ()),
        )

    def lagged_names(self) -> list[str]:
        """``lagged0``, ``lagged1``, ...: the lagged engines' names."""
        return [f"lagged{i}" for i in range(self.num_lagged)]

    def single(self) -> EngineSpec:
        """This spec for an engine of its own: one replica, started here (what each lagged vLLM engine gets)."""
        return replace(self, replicas=1, server_urls=())

    def with_server(self, **changes: Any) -> EngineSpec:
        """This spec with ``changes`` to the vLLM server settings (the staged ``model``, its ``dtype``...)."""
        return replace(self, server=replace(self.server, **changes))
