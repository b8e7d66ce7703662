"""The rollout engine interface: token ids in; token ids, log-probs and policy version out.

An engine samples continuations of token-id prompts and says which policy version sampled them. The
trainer pushes new weights with :meth:`RolloutEngine.update_weights` after each optimizer step (or every
K steps for a lagged engine); requests in flight keep going and later ones see the new version. Every engine
of :mod:`agentrl_trainer.engines` implements it: ``hf`` (transformers ``generate`` in the trainer's process),
``hf_process`` (the same in an engine process of its own) and the vLLM engines (server, colocated, LoRA
versions), whose weight update streams tensors to vLLM instead of copying a state dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

    from agentrl_trainer.types import Generation

__all__ = ["RolloutEngine"]


@runtime_checkable
class RolloutEngine(Protocol):
    """What the rollout loop needs from an inference engine."""

    name: str
    """Recorded on every turn the engine samples (``policy``, ``lagged``, ...)."""

    @property
    def version(self) -> int:
        """The policy version of the weights currently loaded."""
        ...

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        """Sample one continuation of ``prompt_ids``, stopping at the end-of-turn token or ``max_new_tokens``."""
        ...

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Load new weights tagged ``version``; thread-safe, and requests in flight are not cancelled."""
        ...

    async def aclose(self) -> None:
        """Stop serving and release resources."""
        ...
