"""One synthesis run: draw candidates, drop duplicates, validate them in the env, write what is kept.

For each task and difficulty level the run pulls candidates from a :class:`Generator` (a seeded procedural
stream or the LLM mode) in batches until it has kept its share of ``n`` or has drawn
:data:`MAX_DRAWS_PER_TASK` times that share. The kept tasks are written in the task's upstream format,
easiest level first (a curriculum), then played once more from the written file by the oracle, whose
success rate goes in the report with the counts by reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentrl_envs.synth.dedupe import THRESHOLD, OverlapIndex, normalized, reference_texts, task_text
from agentrl_envs.synth.types import Candidate, Rejection, SynthCounts
from agentrl_envs.synth.validate import TaskAdapter, validate

__all__ = ["MAX_DRAWS_PER_TASK", "Generator", "RunResult", "synthesize"]

logger = logging.getLogger(__name__)

MAX_DRAWS_PER_TASK = 10
"""Candidates drawn per wanted task before a level gives up (the report then shows the shortfall)."""


class Generator(Protocol):
    """A source of candidates: an endless stream per difficulty level."""

    def candidates(self, difficulty: int) -> Iterator[Candidate]:
        """Candidates of one level, deterministic for the generator's seed."""
        ...


@dataclass
class RunResult:
    """What one (task, generator) run kept and counted."""

    counts: SynthCounts
    kept: list[Candidate] = field(default_factory=list)
    path: Path | None = None


def synthesize(
    adapter: TaskAdapter,
    generator: Generator,
    *,
    name: str,
    n: int,
    difficulties: tuple[int, ...],
    out: Path | None,
    check_oracle: bool = True,
    exclude: frozenset[str] = frozenset(),
) -> RunResult:
    """Produce up to ``n`` validated tasks spread over ``difficulties`` (see the module docstring).

    Args:
        adapter: The task's validation adapter.
        generator: Where candidates come from.
        name: The generator's name for the report (``procedural`` or ``llm``).
        n: Tasks wanted in all.
        difficulties: Levels to draw, each getting an equal share (the first ones any remainder).
        out: The file to write (``None``: write nothing, count only).
        check_oracle: Replay the oracle on the written file and report its success rate.
        exclude: :func:`~agentrl_envs.synth.dedupe.normalized` texts of tasks the run must not repeat
            (a training set, when the new tasks are to be held out); such candidates are dropped as
            ``excluded`` and more are drawn in their place.
    """
    counts = SynthCounts(adapter.task, name)
    overlap = OverlapIndex(reference_texts(adapter.data, adapter.task))
    seen = _Seen(exclude)
    kept: list[Candidate] = []
    for position, level in enumerate(difficulties):
        share = n // len(difficulties) + (1 if position < n % len(difficulties) else 0)
        stream = generator.candidates(level)
        try:
            kept += _fill_level(adapter, stream, share, counts, overlap, seen)
        finally:
            close = getattr(stream, "close", None)  # a generator function's stream releases its client here
            if close is not None:
                close()
    result = RunResult(counts, kept)
    if out is not None and kept:
        result.path = adapter.write([c.sample for c in kept], out)
        if check_oracle:
            counts.oracle_success = adapter.oracle_success(result.path)
    return result


def _fill_level(
    adapter: TaskAdapter,
    stream: Iterator[Candidate],
    share: int,
    counts: SynthCounts,
    overlap: OverlapIndex,
    seen: _Seen,
) -> list[Candidate]:
    kept: list[Candidate] = []
    drawn = 0
    while len(kept) < share and drawn < share * MAX_DRAWS_PER_TASK:
        batch: list[Candidate] = []
        for candidate in stream:
            drawn += 1
            counts.generated += 1
            if candidate.rejection is not None:
                counts.reject(candidate.rejection)
            elif not _is_duplicate(adapter.task, candidate.sample, counts, overlap, seen):
                batch.append(candidate)
            if len(batch) >= share - len(kept) or drawn >= share * MAX_DRAWS_PER_TASK:
                break
        else:
            logger.info("%s: the generator ran dry after %d candidates", adapter.task, drawn)
            drawn = share * MAX_DRAWS_PER_TASK
        counts.validated += len(batch)
        for candidate, verdict in zip(batch, validate(adapter, batch), strict=True):
            if verdict is None:
                kept.append(candidate)
            else:
                counts.reject(verdict)
                logger.debug("%s rejected (%s): %s", adapter.task, verdict.reason, verdict.detail)
    for candidate in kept:
        counts.kept += 1
        counts.by_difficulty[candidate.difficulty] += 1
    return kept


@dataclass
class _Seen:
    """The texts a candidate must not repeat: the excluded files' and this run's earlier candidates'."""

    excluded: frozenset[str]
    earlier: set[str] = field(default_factory=set)


def _is_duplicate(task: str, sample: dict[str, Any], counts: SynthCounts, overlap: OverlapIndex, seen: _Seen) -> bool:
    text = normalized(task_text(task, sample))
    if text in seen.excluded:
        counts.reject(Rejection("excluded", text[:200]))
        return True
    if text in seen.earlier:
        counts.reject(Rejection("duplicate", text[:200]))
        return True
    similarity = overlap.max_similarity(text)
    if similarity >= THRESHOLD:
        counts.reject(Rejection("near_duplicate", f"similarity {similarity:.2f}: {text[:200]}"))
        return True
    seen.earlier.add(text)
    counts.max_overlap = max(counts.max_overlap, similarity)
    return False
