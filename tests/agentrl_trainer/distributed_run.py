"""A short training run for the distributed tests, started by ``accelerate launch`` or plain ``python``.

``record``: train ``STEPS`` sync steps of ``GROUPS_PER_PROCESS`` groups per process, with ``distributed_log`` on,
and save every process's groups of every step (pickled), the loss curve (loss, grad norm) and the final parameters.

``replay``: one process trains on the groups a ``record`` run saved, step ``s`` being the union of every
process's step-``s`` groups (no rollouts: the groups are replayed), and saves its loss curve and final parameters.
Comparing the two is the parity check of ``test_distributed.py``: the same groups and the same total batch must
give the same parameters, whether one process or several computed the step.

Launched with an FSDP accelerate config (``ACCELERATE_USE_FSDP=true``) on CPU processes, ``record`` trains under
FSDP2 (see :func:`fsdp_on_cpu` for the one thing the test has to put back).

``vllm``: ``record``'s run with ``rollout_engine: vllm`` in server mode, the main process starting the one server
every process shares; before the server stops, the main process saves the server's weight-load count and a
greedy generation from it (``vllm-engine.json``) for ``tests/agentrl_trainer/engines/test_vllm_distributed.py``.

Usage: ``distributed_run.py {record,replay,vllm} MODEL_DIR OUT_DIR``.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import httpx
import torch
from safetensors.torch import save_file
from transformers import TrainerCallback

from agentrl_trainer import AgentRLConfig, AgentRLTrainer
from agentrl_trainer.distributed import weights_checksum
from agentrl_trainer.rollout.chat import render_prompt
from agentrl_trainer.rollout.faults import FaultLog
from agentrl_trainer.rollout.producer import ProducerStats
from agentrl_trainer.tiny import load_tokenizer
from agentrl_trainer.types import Group
from tests.agentrl_trainer.envs import CORPUS, LengthEnv

STEPS = 3
GROUPS_PER_PROCESS = 2
SAMPLES = 12  # = STEPS * GROUPS_PER_PROCESS * 2 processes: one pass over the rows


def config(out: Path, groups_per_step: int, **overrides: Any) -> AgentRLConfig:
    """The run every mode shares; only the groups per step (per process) and the engine differ."""
    return AgentRLConfig(
        output_dir=str(out / "run"),
        tasks=["length"],
        max_samples_per_task=SAMPLES,
        num_generations=4,
        max_steps=STEPS,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        learning_rate=5e-3,
        max_turns=2,
        max_new_tokens_per_turn=8,
        max_total_tokens=1024,
        rollout_mode="sync",
        min_groups_per_step=groups_per_step,
        max_groups_per_step=groups_per_step,
        queue_size=groups_per_step,
        seed=0,
        distributed_log=True,
        write_report=False,
        use_cpu=True,
        **overrides,
    )


class RowsEnv(LengthEnv):
    """A LengthEnv with one row per group the record run trains."""

    def num_samples(self) -> int:
        return SAMPLES


def fsdp_on_cpu(trainer: AgentRLTrainer) -> None:
    """Turn FSDP back on when ``accelerate launch`` asked for it on CPU processes.

    accelerate (1.15) reads its FSDP switch only for accelerator device types (``MULTI_GPU``, ``MULTI_XPU``,
    ...), so CPU processes (``MULTI_CPU``, gloo) silently train with DDP-style replicas. torch's FSDP2 itself
    runs on CPU with gloo; putting the distributed type and the plugin (built from the ``FSDP_*`` variables the
    launcher set, as accelerate would) back before the model is prepared makes the rest of the run, accelerate's
    ``fully_shard`` wrapping, its ``get_state_dict`` and the Trainer's FSDP paths, the real FSDP2 code.
    """
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

    state = trainer.accelerator.state
    if os.environ.get("ACCELERATE_USE_FSDP") != "true" or state.distributed_type != DistributedType.MULTI_CPU:
        return
    # AcceleratorState copies PartialState's fields whenever it is built again, so both are set.
    PartialState().distributed_type = DistributedType.FSDP
    state.distributed_type = DistributedType.FSDP
    state.fsdp_plugin = FullyShardedDataParallelPlugin()
    trainer.is_fsdp_enabled = True


class RecordingTrainer(AgentRLTrainer):
    """Saves the groups each process trains on, step by step."""

    groups_dir: Path

    def create_accelerator_and_postprocess(self) -> None:
        super().create_accelerator_and_postprocess()
        fsdp_on_cpu(self)

    def _record(
        self, groups: list[Group], trajectories: list[Any], idle_s: float, version: int, trained_rows: int
    ) -> None:
        super()._record(groups, trajectories, idle_s, version, trained_rows)
        path = self.groups_dir / f"rank-{self.accelerator.process_index}-step-{version}.pkl"
        path.write_bytes(pickle.dumps(groups))


class ReplayProducer:
    """Hands out recorded groups in order (the trainer-facing side of RolloutProducer)."""

    def __init__(self, steps: list[list[Group]]) -> None:
        self.steps = list(steps)
        self.stats = ProducerStats()
        self.faults = FaultLog()
        self.status_counts: dict[str, int] = {}
        self.queue_depth = 0
        self.leaked_tasks = 0

    def request(self, groups: int) -> None:
        pass

    def get_groups(self, min_groups: int, max_groups: int, timeout_s: float) -> list[Group]:
        groups = self.steps.pop(0)
        if not min_groups <= len(groups) <= max_groups:
            raise RuntimeError(f"recorded step has {len(groups)} groups, the trainer wants {min_groups}-{max_groups}")
        self.stats.groups += len(groups)
        self.stats.episodes += sum(len(g.trajectories) for g in groups)
        return groups

    def discard(self, groups: int) -> None:
        if groups:
            raise RuntimeError("a replayed group was dropped as stale; the replay would not match the recording")

    def stop(self) -> None:
        pass


class ReplayTrainer(AgentRLTrainer):
    """Trains on recorded groups instead of playing episodes."""

    steps: list[list[Group]]

    def _ensure_producer(self) -> Any:
        if self.producer is None:
            self.sampler = self.build_engines()
            self.producer = ReplayProducer(self.steps)  # type: ignore[assignment]
        return self.producer


class SharedServerProbe(TrainerCallback):
    """At the end of training, before the shared vLLM server stops: what it loaded, and a greedy generation."""

    def __init__(self, trainer: AgentRLTrainer, tokenizer: Any, path: Path) -> None:
        self.trainer, self.tokenizer, self.path = trainer, tokenizer, path

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        trainer = self.trainer
        if not trainer.accelerator.is_main_process or trainer.shared_servers is None or trainer.sampler is None:
            return
        url = trainer.shared_servers.urls["policy"][0]
        rpc = httpx.post(f"{url}/collective_rpc", json={"method": "agentrl_weight_loads"}, timeout=60)
        rpc.raise_for_status()
        prompt = render_prompt(self.tokenizer, [{"role": "user", "content": " ".join(CORPUS[:3])}], None)
        body = {**trainer.sampler.policy.completion_request(prompt, 8), "temperature": 0.0}  # type: ignore[attr-defined]
        answer = httpx.post(f"{url}/v1/completions", json=body, timeout=60)
        answer.raise_for_status()
        choice = answer.json()["choices"][0]
        probe = {
            "urls": trainer.shared_servers.urls,
            "weight_loads": rpc.json()["results"],
            "prompt": prompt,
            "token_ids": choice["token_ids"],
            "logprobs": choice["logprobs"]["token_logprobs"],
        }
        self.path.write_text(json.dumps(probe))


def main(mode: str, model_dir: Path, out: Path) -> None:
    tokenizer = load_tokenizer(model_dir)
    factories = {"length": lambda split: RowsEnv(split=split)}
    groups_dir = out / "groups"
    if mode == "record":
        trainer: AgentRLTrainer = RecordingTrainer(
            str(model_dir), config(out, GROUPS_PER_PROCESS), processing_class=tokenizer, env_factories=factories
        )
        trainer.groups_dir = groups_dir  # type: ignore[attr-defined]
        groups_dir.mkdir(parents=True, exist_ok=True)
    elif mode == "vllm":
        run = config(out, GROUPS_PER_PROCESS, rollout_engine="vllm", vllm_mode="server", lagged_fraction=0.0)
        trainer = AgentRLTrainer(str(model_dir), run, processing_class=tokenizer, env_factories=factories)
        trainer.add_callback(SharedServerProbe(trainer, tokenizer, out / "vllm-engine.json"))
    else:
        recorded = sorted(groups_dir.glob("rank-*-step-*.pkl"))
        ranks = sorted({int(p.name.split("-")[1]) for p in recorded})
        steps = [
            [g for rank in ranks for g in pickle.loads((groups_dir / f"rank-{rank}-step-{step}.pkl").read_bytes())]
            for step in range(STEPS)
        ]
        trainer = ReplayTrainer(
            str(model_dir),
            config(out / "replay", GROUPS_PER_PROCESS * len(ranks)),
            processing_class=tokenizer,
            env_factories=factories,
        )
        trainer.steps = steps  # type: ignore[attr-defined]
    trainer.train()
    # The whole model on the main process, gathered when the processes hold shards of it (FSDP).
    weights = trainer.accelerator.get_state_dict(trainer.model)
    if trainer.accelerator.is_main_process:
        (out / f"{mode}-trainer.sha256").write_text(weights_checksum(weights))
        names = [name for name, _ in trainer.accelerator.unwrap_model(trainer.model).named_parameters()]
        params = {name: weights[name].detach().to("cpu").clone().contiguous() for name in names}
        save_file(params, str(out / f"{mode}.safetensors"))
        layout = {
            "distributed_type": str(trainer.accelerator.distributed_type),
            "parameter_type": type(next(trainer.model.parameters())).__name__,  # DTensor: sharded by FSDP2
        }
        (out / f"{mode}-layout.json").write_text(json.dumps(layout))
        logs = [e for e in trainer.state.log_history if "loss" in e and "grad_norm" in e]
        curves = {"loss": [e["loss"] for e in logs], "grad_norm": [e["grad_norm"] for e in logs]}
        (out / f"{mode}-curves.json").write_text(json.dumps(curves))
    if torch.distributed.is_initialized():
        torch.distributed.barrier()  # the main process writes its files before the launcher ends the others


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
