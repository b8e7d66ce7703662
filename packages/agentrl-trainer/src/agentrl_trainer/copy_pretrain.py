"""Copy pre-training: teach a freshly built tiny model to copy spans of its context before any task data.

A tiny model SFT'd on DB oracle transcripts learns the tool-call format quickly but never learns to copy the
table, column and value names of its prompt into the SQL it writes (docs/benchmarks.md, "Learning on real DB").
Copying is what induction heads do (attend to the token after an earlier occurrence of the current token, and
predict it), and they emerge on data that can *only* be predicted by copying: here the classic induction task, a
random run of the tokenizer's own tokens followed by the same run again (``x x``), the loss on the repeat after
its first token. The run's length varies, so no fixed offset finds the source and nothing marks where the repeat
starts: only content does. An optional random gap (``x gap x``) puts other tokens between a run and its repeat,
as a prompt puts text between a name and the SQL that copies it.

The recipe is the measured one (docs/benchmarks.md, "a copy stage that works"): runs of 8-48 tokens, AdamW lr
1e-3, batch 32, then rows as long as a prompt (:class:`CopyPretrainSettings`). A separator between run and
repeat, runs of 4-16 tokens and lr 3e-3 (the first recipe) kept a hidden-192 model on the loss plateau of
guessing for thousands of steps.

Used by :func:`agentrl_trainer.tiny.build_tiny_model` when ``TinyModelSpec.copy_pretrain_steps`` is set
(``tiny_copy_pretrain_steps`` in a training config).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["CopyPretrainSettings", "CopyRows", "copy_accuracy", "copy_batch", "copy_pretrain", "copyable_token_ids"]


@dataclass(frozen=True)
class CopyRows:
    """The shape of a batch of copy rows."""

    batch_size: int = 32
    min_span: int = 8
    """Shortest run of tokens to copy."""
    max_span: int = 48
    """Longest run of tokens to copy."""
    spans_per_sequence: int = 1
    """Runs (each followed by its gap and repeat) packed into one row."""
    max_gap: int = 0
    """Up to this many random tokens (a random number, not scored) between a run and its repeat."""


@dataclass(frozen=True)
class CopyPretrainSettings:
    """The copy stage: short rows that form the circuit, then prompt-length rows that carry it to where names are.

    A circuit learnt on rows of at most ~100 tokens copies nothing once 300 tokens stand before the run (measured:
    1.0 -> 0.018 at hidden 192), and a DB name sits ~1,000 tokens into its prompt; rows that long from the start
    make every step ~6x dearer and leave the plateau later, so the stage first forms the circuit on short rows.
    Defaults: ~0.35 s per short step and ~2 s per long step on one CPU thread at hidden 192.
    """

    short: CopyRows = CopyRows()
    """Rows of the first steps: one run and its repeat (~60 tokens), where the circuit forms (~500 steps)."""
    long: CopyRows = CopyRows(batch_size=4, spans_per_sequence=16, max_gap=48)
    """Rows of the last steps: 16 runs with gaps, ~1,300 tokens, so the circuit also copies deep in a prompt."""
    long_share: float = 0.3
    """Share of the steps, at the end, on ``long`` rows."""
    learning_rate: float = 1e-3
    warmup_steps: int = 50

    def __post_init__(self) -> None:
        """Check the schedule."""
        if not 0.0 <= self.long_share <= 1.0:
            raise ValueError(f"long_share is a share of the steps, between 0 and 1; got {self.long_share}.")


def copyable_token_ids(tokenizer: Any) -> list[int]:
    """The vocabulary's ordinary tokens: everything except special and added tokens."""
    special = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return [i for i in range(len(tokenizer)) if i not in special]


def copy_batch(rng: random.Random, tokens: list[int], pad: int, rows: CopyRows) -> tuple[Any, Any, Any]:
    """One batch of copy sequences: ``span gap span`` repeated ``spans_per_sequence`` times per row.

    Args:
        rng: Source of the draws (seeded by the caller, so a stage is reproducible).
        tokens: Token ids to draw spans from (:func:`copyable_token_ids`).
        pad: Token id for right padding (masked out of attention and loss).
        rows: Batch size, run lengths, runs per row and gaps.

    Returns:
        ``input_ids``, ``attention_mask`` and ``labels`` (``-100`` except on the repeats after their first
        token), each ``(batch, width)``.
    """
    import torch

    built: list[tuple[list[int], list[int]]] = []
    for _ in range(rows.batch_size):
        ids: list[int] = []
        labels: list[int] = []
        for _ in range(rows.spans_per_sequence):
            span = rng.choices(tokens, k=rng.randint(rows.min_span, rows.max_span))
            gap = rng.choices(tokens, k=rng.randint(0, rows.max_gap))
            ids += [*span, *gap, *span]
            labels += [-100] * (len(span) + len(gap) + 1) + span[1:]
        built.append((ids, labels))
    width = max(len(ids) for ids, _ in built)
    input_ids = torch.full((len(built), width), pad, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    target = torch.full_like(input_ids, -100)
    for i, (ids, labels) in enumerate(built):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        mask[i, : len(ids)] = 1
        target[i, : len(ids)] = torch.tensor(labels)
    return input_ids, mask, target


def copy_accuracy(model: Any, batch: tuple[Any, Any, Any]) -> float:
    """Share of the repeat tokens the model predicts exactly (greedy, next-token) on ``batch``."""
    import torch

    input_ids, mask, labels = batch
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=mask).logits
    return _accuracy(logits, labels)


def _accuracy(logits: Any, labels: Any) -> float:
    predicted = logits[:, :-1].argmax(-1)
    target = labels[:, 1:]
    scored = target != -100
    return float((predicted[scored] == target[scored]).float().mean())


def copy_pretrain(
    model: Any,
    tokenizer: Any,
    steps: int,
    *,
    seed: int = 0,
    settings: CopyPretrainSettings | None = None,
    log_every: int = 0,
    on_log: Callable[[int, Any], None] | None = None,
) -> list[float]:
    """Train ``model`` in place for ``steps`` steps on copy sequences drawn from ``tokenizer``'s vocabulary.

    Args:
        model: A causal LM (``labels`` are shifted by the model, as transformers' causal LMs do).
        tokenizer: Its tokenizer: spans are drawn from its ordinary tokens; its pad token pads the rows.
        steps: Optimizer steps (AdamW, gradient clipping 1.0, linear warm-up then constant).
        seed: Seeds the span draws.
        settings: Row shapes, their schedule and the learning rate.
        log_every: Log the mean loss and the copy accuracy every this many steps (0: silent).
        on_log: Called with the step and the model at each log (e.g. to score it on other copy tasks).

    Returns:
        The loss of every step.

    Raises:
        ValueError: When the tokenizer has no pad token, or no ordinary tokens.
    """
    import torch

    settings = settings or CopyPretrainSettings()
    if tokenizer.pad_token_id is None:
        raise ValueError("copy pre-training needs a tokenizer with a pad token (set tokenizer.pad_token).")
    tokens = copyable_token_ids(tokenizer)
    if not tokens:
        raise ValueError("the tokenizer has no ordinary tokens to draw copy spans from.")
    rng = random.Random(seed)
    first_long = steps - round(steps * settings.long_share) + 1

    def rows(step: int) -> CopyRows:
        return settings.long if step >= first_long else settings.short

    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.0)
    losses: list[float] = []
    model.train()
    for step in range(1, steps + 1):
        input_ids, mask, labels = copy_batch(rng, tokens, tokenizer.pad_token_id, rows(step))
        for group in optimizer.param_groups:
            group["lr"] = settings.learning_rate * min(1.0, step / max(1, settings.warmup_steps))
        output = model(input_ids=input_ids, attention_mask=mask, labels=labels)
        optimizer.zero_grad()
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(output.loss.item())
        if log_every and step % log_every == 0:  # the batch is fresh random spans: its accuracy is a held-out one
            mean = sum(losses[-log_every:]) / log_every
            accuracy = _accuracy(output.logits.detach(), labels)
            logger.info("copy pre-training step %d loss %.3f copy accuracy %.3f", step, mean, accuracy)
            if on_log is not None:
                on_log(step, model)
                model.train()
    model.eval()
    return losses
