"""Shared-prefix SFT: the tokens every row of a batch starts with are run once, not once per row.

Transcripts of one task start with the same system prompt and tool schemas (hundreds to thousands of tokens,
never trained: they are prompt). :class:`PrefixSharingSFTTrainer` finds the longest prefix the rows of a batch
share, runs the model on it once with a key/value cache, repeats that cache over the batch and runs each row's
rest against it. The loss is the same token-level cross-entropy as ``SFTTrainer``'s (sum over trained tokens,
divided by their count), and gradients flow through the cached prefix too, so the result equals the plain
forward pass up to float rounding (``tests/agentrl_trainer/test_sft.py``). Batches whose rows share too short a
prefix, or whose prefix holds trained tokens, take ``SFTTrainer``'s own path.

Rows only share a long prefix when a batch holds one task, so the warm-up cuts each task's rows into batches,
shuffles the order of the batches once (:func:`task_batches`) and the trainer reads them in that order.
"""

from __future__ import annotations

import random
from typing import Any

import torch
from torch.utils.data import Sampler, SequentialSampler
from trl import SFTTrainer

__all__ = ["PrefixSharingSFTTrainer", "prefix_shared_loss", "shared_prefix_length", "task_batches"]

MIN_SHARED_TOKENS = 32
"""Below this, sharing saves less than it costs (an extra forward call): use the plain path."""


def shared_prefix_length(input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> int:
    """Tokens every row starts with, none of them trained, leaving at least one token per row after them."""
    shortest = int(attention_mask.sum(dim=1).min())
    same = (input_ids == input_ids[:1]).all(dim=0) & (attention_mask == 1).all(dim=0) & (labels == -100).all(dim=0)
    differing = (~same[:shortest]).nonzero()
    length = int(differing[0]) if len(differing) else shortest
    return min(length, shortest - 1)


class PrefixSharingSFTTrainer(SFTTrainer):
    """``SFTTrainer`` that runs a batch's shared prefix once (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``SFTTrainer``'s arguments."""
        super().__init__(*args, **kwargs)
        self.shared_prefix_batches = 0
        """Batches trained through the shared-prefix path."""
        self.shared_prefix_tokens_saved = 0
        """Prefix tokens not run again (prefix length times the batch's other rows)."""

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        """The SFT loss, with the shared prefix run once when the batch has one; else ``SFTTrainer``'s."""
        input_ids, labels = inputs["input_ids"], inputs["labels"]
        attention_mask = inputs.get("attention_mask")
        # Gradient checkpointing recomputes the forward pass, which a cache shared across rows cannot survive.
        checkpointing = getattr(self.accelerator.unwrap_model(model), "is_gradient_checkpointing", False)
        if return_outputs or attention_mask is None or input_ids.size(0) < 2 or checkpointing:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        prefix = shared_prefix_length(input_ids, attention_mask, labels)
        if prefix < MIN_SHARED_TOKENS:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        self.shared_prefix_batches += 1
        self.shared_prefix_tokens_saved += prefix * (input_ids.size(0) - 1)
        return prefix_shared_loss(model, input_ids, attention_mask, labels, prefix, num_items_in_batch)

    def _get_train_sampler(self, train_dataset: Any = None) -> Sampler | None:
        """The rows in their given order (:func:`task_batches` already shuffled the batches)."""
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        return SequentialSampler(dataset)  # pyright: ignore[reportArgumentType]  # a sized datasets.Dataset


def prefix_shared_loss(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    labels: torch.Tensor,
    prefix: int,
    num_items_in_batch: Any = None,
) -> torch.Tensor:
    """Mean token cross-entropy of ``labels``, with the first ``prefix`` tokens run once for the whole batch."""
    batch, length = input_ids.shape
    head = model(input_ids=input_ids[:1, :prefix], use_cache=True)
    cache = head.past_key_values
    if cache is None:
        raise ValueError("The model returned no key/value cache for the shared prefix; set share_prefix: false.")
    cache.batch_repeat_interleave(batch)
    positions = torch.arange(prefix, length, device=input_ids.device).expand(batch, -1)
    tail = model(
        input_ids=input_ids[:, prefix:], attention_mask=attention_mask, past_key_values=cache, position_ids=positions
    )
    # Position t's logits predict token t + 1: the prefix's last position predicts the first tail token.
    logits = torch.cat([head.logits[:, -1:].expand(batch, -1, -1), tail.logits[:, :-1]], dim=1)
    targets = labels[:, prefix:]
    per_token = torch.nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100, reduction="sum"
    )
    count = (targets != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return per_token / torch.as_tensor(count, device=per_token.device).clamp(min=1)


def task_batches(rows: list[Any], tasks: list[str], batch_size: int, seed: int) -> list[Any]:
    """``rows`` reordered into batches of one task each (so they share a prompt), the batches in a shuffled order.

    The trainer cuts the flat list into windows of ``batch_size``, so a short batch (a task's remainder) in the
    middle would shift every window after it across two tasks' batches (which then share no prompt): the full
    batches come first, shuffled, and the short ones last.
    """
    full, short = [], []
    for task in sorted(set(tasks)):
        own = [row for row, t in zip(rows, tasks, strict=True) if t == task]
        for batch in (own[i : i + batch_size] for i in range(0, len(own), batch_size)):
            (full if len(batch) == batch_size else short).append(batch)
    random.Random(seed).shuffle(full)
    return [row for batch in full + short for row in batch]
