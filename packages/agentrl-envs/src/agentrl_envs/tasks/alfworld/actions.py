"""Upstream's action normalisation: lower-case, first line, and snapping to the closest admissible command.

AgentBench-FC's ``process_action`` strips and lower-cases the tool argument and keeps its first line. An
admissible command is used as is; otherwise the admissible command with the highest NLTK sentence BLEU
(whitespace tokens, ``SmoothingFunction().method4``) replaces it when that score exceeds ``min_bleu``
(0.01), and the text goes to the game unchanged when none does (the game then answers ``Nothing happens.``).
Like upstream, a failure inside BLEU falls back to the unchanged text.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Snap", "bleu", "snap_action"]

logger = logging.getLogger(__name__)

How = Literal["exact", "bleu", "unmatched"]


@dataclass(frozen=True, slots=True)
class Snap:
    """What became of one raw action."""

    raw: str
    normalized: str
    """Stripped, lower-cased, first line."""
    command: str
    """What the game receives."""
    how: How
    """``exact`` (admissible as is), ``bleu`` (snapped) or ``unmatched`` (passed through)."""
    score: float | None = None
    """The best BLEU score, when BLEU was computed."""

    def to_info(self) -> dict[str, object]:
        """The snapping as reported in ``info["action"]`` (texts clipped: the transcript has them whole)."""
        return {
            "raw": _clip(self.raw),
            "normalized": _clip(self.normalized),
            "command": _clip(self.command),
            "how": self.how,
            "bleu": self.score,
        }


def bleu(reference: str, candidate: str) -> float:
    """Upstream's ``bleu_score``: NLTK sentence BLEU of whitespace tokens with smoothing method 4."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    with warnings.catch_warnings():  # NLTK warns about zero n-gram overlaps, which are expected here
        warnings.simplefilter("ignore")
        score: Any = sentence_bleu(  # NLTK annotates it loosely; it is a float
            [reference.split()], candidate.split(), smoothing_function=SmoothingFunction().method4
        )
        return float(score)


def snap_action(raw: str, admissible: list[str], *, min_bleu: float = 0.01) -> Snap:
    """Normalise ``raw`` and snap it to an admissible command as upstream does."""
    normalized = raw.strip().lower().split("\n")[0]
    if not admissible or normalized in admissible:
        return Snap(raw, normalized, normalized, "exact" if normalized in admissible else "unmatched")
    try:
        scores = [bleu(choice, normalized) for choice in admissible]
    except Exception as e:  # upstream prints and falls back to the text as is
        logger.warning("BLEU failed for %r: %s", normalized[:200], e)
        return Snap(raw, normalized, normalized, "unmatched")
    best = max(range(len(scores)), key=scores.__getitem__)  # first maximum, as numpy.argmax
    if scores[best] > min_bleu:
        return Snap(raw, normalized, admissible[best], "bleu", scores[best])
    return Snap(raw, normalized, normalized, "unmatched", scores[best])


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
