"""Copy pre-training: teach a freshly built tiny model to copy spans of its context before any task data.

A tiny model SFT'd on DB oracle transcripts learns the tool-call format quickly but never learns to copy the
table, column and value names of its prompt into the SQL it writes (docs/benchmarks.md, "Learning on real DB").
Copying is what induction heads do (attend to the token after an earlier occurrence of the current token, and
predict it), and they emerge fast on data that can *only* be predicted by copying. This stage trains on such
sequences: a random run of the tokenizer's own tokens, a separator, then the same run again; the loss is on the
repeat after its first token (which only says where the run started; the rest follows from the previous
token's earlier occurrence, what a copy head reads). A random gap of random tokens stands between a run and its
separator, so the copy distance varies independently of the run's length and only content can find the source
(see :attr:`CopyPretrainSettings.max_gap`); runs come several to a sequence so a head must find the *right*
earlier occurrence.

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

__all__ = ["CopyPretrainSettings", "copy_accuracy", "copy_batch", "copy_pretrain", "copyable_token_ids"]


@dataclass(frozen=True)
class CopyPretrainSettings:
    """Shape and optimisation of the copy stage (defaults: ~1 s per step on one CPU thread at hidden 192)."""

    batch_size: int = 32
    min_span: int = 4
    """Shortest run of tokens to copy."""
    max_span: int = 16
    """Longest run of tokens to copy (rows stay short: at most 2 x (16 + 48 + 1 + 16) tokens)."""
    spans_per_sequence: int = 2
    """Runs (each followed by its separator and repeat) packed into one training sequence."""
    max_gap: int = 48
    """Up to this many random tokens (a random number, not scored) between a run and its separator. Without a gap
    the repeat is at a fixed offset from the separator and the model learns that offset (a positional copy: it
    fails when anything stands between a name and its copy, as in a prompt); the gap leaves content (find the
    previous token's earlier occurrence, read the one after it) as the only way to predict the repeat."""
    learning_rate: float = 3e-3
    warmup_steps: int = 20


def copyable_token_ids(tokenizer: Any) -> list[int]:
    """The vocabulary's ordinary tokens: everything except special and added tokens."""
    special = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return [i for i in range(len(tokenizer)) if i not in special]


def copy_batch(
    rng: random.Random, tokens: list[int], separator: int, pad: int, settings: CopyPretrainSettings
) -> tuple[Any, Any, Any]:
    """One batch of copy sequences: ``span gap SEP span`` repeated ``spans_per_sequence`` times per row.

    Args:
        rng: Source of the draws (seeded by the caller, so a stage is reproducible).
        tokens: Token ids to draw spans from (:func:`copyable_token_ids`).
        separator: Token id between a span and its repeat.
        pad: Token id for right padding (masked out of attention and loss).
        settings: Batch size, span lengths and gaps.

    Returns:
        ``input_ids``, ``attention_mask`` and ``labels`` (``-100`` except on the repeats after their first
        token), each ``(batch, width)``.
    """
    import torch

    rows: list[tuple[list[int], list[int]]] = []
    for _ in range(settings.batch_size):
        ids: list[int] = []
        labels: list[int] = []
        for _ in range(settings.spans_per_sequence):
            span = rng.choices(tokens, k=rng.randint(settings.min_span, settings.max_span))
            gap = rng.choices(tokens, k=rng.randint(0, settings.max_gap))
            ids += [*span, *gap, separator, *span]
            labels += [-100] * (len(span) + len(gap) + 2) + span[1:]
        rows.append((ids, labels))
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    target = torch.full_like(input_ids, -100)
    for i, (ids, labels) in enumerate(rows):
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
        tokenizer: Its tokenizer: spans are drawn from its ordinary tokens, the separator is its EOS token
            (``<|im_end|>`` for the tiny tokenizer: the token that ends a turn, so no new token is introduced).
        steps: Optimizer steps (AdamW, gradient clipping 1.0, linear warm-up then constant).
        seed: Seeds the span draws.
        settings: Batch shape and learning rate.
        log_every: Log the mean loss and the copy accuracy every this many steps (0: silent).
        on_log: Called with the step and the model at each log (e.g. to score it on other copy tasks).

    Returns:
        The loss of every step.

    Raises:
        ValueError: When the tokenizer has no EOS or pad token, or no ordinary tokens.
    """
    import torch

    settings = settings or CopyPretrainSettings()
    if tokenizer.eos_token_id is None or tokenizer.pad_token_id is None:
        raise ValueError("copy pre-training needs a tokenizer with an EOS token (the separator) and a pad token.")
    tokens = copyable_token_ids(tokenizer)
    if not tokens:
        raise ValueError("the tokenizer has no ordinary tokens to draw copy spans from.")
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.0)
    losses: list[float] = []
    model.train()
    for step in range(1, steps + 1):
        input_ids, mask, labels = copy_batch(rng, tokens, tokenizer.eos_token_id, tokenizer.pad_token_id, settings)
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
