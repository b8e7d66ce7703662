"""Several training processes (``accelerate launch``): who plays which groups, and whose weights the engines get.

Every process runs its own rollout producer and engines and trains (DDP) on its own groups:

* **sharding**: all processes build the same row stream (same seed) and process ``r`` of ``W`` plays rows
  ``r, r + W, r + 2W, ...`` of it, so within one pass over the rows no group is played or trained twice;
* **weight sync**: after each optimizer step the main process's parameters are broadcast and every process
  loads exactly those into its engines (DDP already keeps the replicas equal; the broadcast makes the engines
  bit-identical whatever floating-point drift the replicas pick up);
* **batch statistics** that span the batch (task advantage normalization, the loss's token count) are summed
  over the processes, so the gradient equals the one a single process would compute on the union of the groups.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Mapping
from typing import TypeVar

import torch

__all__ = ["all_reduce_sum", "broadcast_from_main", "shard", "weights_checksum"]

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


def broadcast_from_main(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A copy of the main process's ``state_dict`` on every process (keys and shapes must agree).

    Tensors are copied before the broadcast, so the caller's (training) parameters are left alone.
    """
    out = {name: tensor.detach().clone().contiguous() for name, tensor in state_dict.items()}
    if not _distributed() or torch.distributed.get_world_size() == 1:
        return out
    for name in sorted(out):
        torch.distributed.broadcast(out[name], src=0)
    return out


def weights_checksum(state_dict: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over the names, dtypes, shapes and bytes of every tensor: equal only for bit-identical weights."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().to("cpu").contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()
