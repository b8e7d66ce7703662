"""Several training processes (``accelerate launch``): who plays which groups, and whose weights the engines get.

Every process runs its own rollout producer and trains (DDP) on its own groups; each has its own engines, except
vLLM servers, which all processes share and only the main process loads (:mod:`agentrl_trainer.engines.shared_servers`):

* **sharding**: all processes build the same row stream (same seed) and process ``r`` of ``W`` plays rows
  ``r, r + W, r + 2W, ...`` of it, so within one pass over the rows no group is played or trained twice;
* **weight sync**: after each optimizer step the main process's parameters are broadcast and every process
  loads exactly those into its engines (DDP already keeps the replicas equal; the broadcast makes the engines
  bit-identical whatever floating-point drift the replicas pick up). Under FSDP or DeepSpeed ZeRO-3 a process
  holds only a shard of each parameter, so the full state dict is gathered first (accelerate's
  ``get_state_dict``, which leaves it on the main process only) and then broadcast with its names, shapes and
  dtypes (:func:`engine_weights`);
* **batch statistics** that span the batch (task advantage normalization, the loss's token count) are summed
  over the processes, so the gradient equals the one a single process would compute on the union of the groups.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch

if TYPE_CHECKING:
    from accelerate import Accelerator

__all__ = [
    "all_reduce_sum",
    "broadcast_from_main",
    "engine_weights",
    "holds_sharded_weights",
    "main_process_weights",
    "shard",
    "weights_checksum",
    "whole_model",
]

T = TypeVar("T")


def shard(stream: Iterator[T], rank: int, world_size: int) -> Iterator[T]:
    """Items ``rank, rank + world_size, ...`` of ``stream`` (the whole stream when ``world_size`` is 1)."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not in [0, {world_size}).")
    return stream if world_size == 1 else itertools.islice(stream, rank, None, world_size)


def _distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of ``tensor`` over the processes (a new tensor; ``tensor`` itself when not distributed)."""
    if not _distributed() or torch.distributed.get_world_size() == 1:
        return tensor
    out = tensor.detach().clone()
    torch.distributed.all_reduce(out, op=torch.distributed.ReduceOp.SUM)
    return out


def broadcast_from_main(
    state_dict: Mapping[str, torch.Tensor] | None, *, main_only: bool = False, device: torch.device | str = "cpu"
) -> dict[str, torch.Tensor]:
    """A copy of the main process's ``state_dict`` on every process.

    Two layouts, the same on every process (``main_only`` must agree):

    * ``main_only=False`` (replicated weights: DDP): every process passes a dict with the main process's keys
      and shapes; the tensors are copied first, so the caller's (training) parameters are left alone, and
      broadcast in place on their own device.
    * ``main_only=True`` (gathered weights: FSDP, ZeRO-3): only the main process's dict is read (the others
      may pass ``None``). Its names, shapes and dtypes go first, then each tensor, staged through ``device``
      (the collective's device: NCCL only moves CUDA tensors) and returned on the CPU. The main process's own
      tensors are returned as they are: a gathered dict is already a private copy.
    """
    if main_only:
        return _broadcast_gathered(state_dict, device)
    if state_dict is None:
        raise ValueError("broadcast_from_main needs every process's state dict unless main_only=True.")
    out = {name: tensor.detach().clone().contiguous() for name, tensor in state_dict.items()}
    if not _distributed() or torch.distributed.get_world_size() == 1:
        return out
    for name in sorted(out):
        torch.distributed.broadcast(out[name], src=0)
    return out


def _broadcast_gathered(state_dict: Mapping[str, torch.Tensor] | None, device: torch.device | str) -> dict:
    is_main = not _distributed() or torch.distributed.get_rank() == 0
    if is_main and state_dict is None:
        raise ValueError("The main process has no state dict to broadcast (was it gathered on another rank?).")
    if not _distributed() or torch.distributed.get_world_size() == 1:
        return dict(state_dict or {})
    # The other processes learn what to allocate from the main process: they hold no dict of their own.
    metadata: list[list[tuple[str, tuple[int, ...], torch.dtype]] | None] = [None]
    if state_dict is not None and is_main:
        metadata[0] = [(name, tuple(tensor.shape), tensor.dtype) for name, tensor in sorted(state_dict.items())]
    torch.distributed.broadcast_object_list(metadata, src=0)
    out: dict[str, torch.Tensor] = {}
    for name, shape, dtype in metadata[0] or []:
        if state_dict is not None and is_main:
            out[name] = state_dict[name].detach()
            torch.distributed.broadcast(out[name].to(device).contiguous(), src=0)
        else:
            buffer = torch.empty(shape, dtype=dtype, device=device)
            torch.distributed.broadcast(buffer, src=0)
            out[name] = buffer.to("cpu")
    return out


def holds_sharded_weights(accelerator: Accelerator) -> bool:
    """Whether each process's model holds only shards of the parameters (FSDP, DeepSpeed ZeRO-3 or AutoTP)."""
    from accelerate.utils import DistributedType

    if accelerator.distributed_type == DistributedType.FSDP:
        return True
    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        config = accelerator.deepspeed_config
        return config["zero_optimization"]["stage"] == 3 or config.get("tensor_parallel", {}).get("autotp_size", 0) > 1
    return False


def engine_weights(accelerator: Accelerator, model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights every process's engines load: the main process's whole state dict, bit for bit.

    ``model`` is the prepared model (the Trainer's ``model_wrapped``: the DeepSpeed engine under DeepSpeed).
    Every process must call this at the same point (it runs collectives when there are several).

    * Sharded weights: accelerate's ``get_state_dict`` gathers the full dict (FSDP2 and FSDP1 leave it on the
      main process only, offloaded to the CPU; ZeRO-3 consolidates 16-bit weights on the main process and needs
      ``stage3_gather_16bit_weights_on_model_save``), then it is broadcast with its names, shapes and dtypes.
    * One process, replicated weights: the model's own state dict, as before (engines copy on load).
    * Several processes, replicated weights (DDP, ZeRO-1/2): the unwrapped model's state dict, copied and
      broadcast.
    """
    if holds_sharded_weights(accelerator):
        gathered = cast(dict[str, torch.Tensor], accelerator.get_state_dict(model))  # accelerate types it loosely
        return broadcast_from_main(
            gathered if accelerator.is_main_process else None, main_only=True, device=accelerator.device
        )
    state_dict = accelerator.unwrap_model(model).state_dict()
    return state_dict if accelerator.num_processes == 1 else broadcast_from_main(state_dict)


def main_process_weights(accelerator: Accelerator, model: torch.nn.Module) -> dict[str, torch.Tensor] | None:
    """The main process's whole state dict on the main process, ``None`` on the others.

    For engines that only the main process loads (vLLM servers shared by every process): no broadcast, only the
    gather when the processes hold shards (a collective, so every process must call this at the same point).
    """
    if holds_sharded_weights(accelerator):
        gathered = cast(dict[str, torch.Tensor], accelerator.get_state_dict(model))
        return dict(gathered) if accelerator.is_main_process else None
    return accelerator.unwrap_model(model).state_dict() if accelerator.is_main_process else None


def whole_model(config: Any, weights: Mapping[str, torch.Tensor]) -> torch.nn.Module:
    """A plain (unsharded) causal LM of ``config``'s architecture holding ``weights`` (a full state dict).

    Engines sample on their own, so they cannot use FSDP/ZeRO-3 shards, whose forward runs collectives in step
    with the other processes; they copy this model instead.
    """
    from transformers import AutoModelForCausalLM
    from transformers.modeling_utils import set_zero3_state

    # set_zero3_state: under ZeRO-3, transformers would otherwise partition a new model (deepspeed.zero.Init).
    with set_zero3_state():
        model = AutoModelForCausalLM.from_config(copy.deepcopy(config), dtype=next(iter(weights.values())).dtype)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    loaded = {id(param) for name, param in model.named_parameters() if name in weights}
    # A tied weight (lm_head = embed_tokens) may be gathered under one of its names only.
    untied = [name for name in missing if id(model.get_parameter(name)) not in loaded]
    if unexpected or untied:
        raise RuntimeError(
            f"The gathered weights do not fit {type(model).__name__}: missing {untied}, unexpected {unexpected}. "
            "The engines need the full state dict of the trained model."
        )
    return model


def weights_checksum(state_dict: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over the names, dtypes, shapes and bytes of every tensor: equal only for bit-identical weights."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().to("cpu").contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()
