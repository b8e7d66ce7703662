"""Random names for SFT transcripts, so a model learns to copy a task's names from the prompt, not recall them.

A tiny model SFT'd on synthesized DB tasks learns the training set's table, column and value names by heart (its
copied-token accuracy was 0.88 on held-out names it had half seen and 0.77 on random ones; docs/benchmarks.md,
"Learning on real DB: a copy stage that works"). Renaming a transcript's names to random words, consistently in
every message after the system prompt, leaves copying as the only way to predict them. The names come from the
env (``copyable_names(index)``, e.g. :meth:`agentrl_envs.tasks.db.data.DBSample.copyable_names`), recorded with
each oracle transcript.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

from agentrl_trainer.copy_pretrain import copyable_token_ids

__all__ = ["rename_messages", "word_pieces"]


def word_pieces(tokenizer: Any) -> list[str]:
    """The vocabulary's ordinary tokens that are lower-case words of 3 or more letters (what new names are made of).

    A byte-level BPE's leading space is dropped (``" hotel"`` gives ``hotel``).

    Raises:
        ValueError: If the vocabulary has fewer than 10 such words (random names would repeat too often).
    """
    pieces = (tokenizer.decode([i]).strip() for i in copyable_token_ids(tokenizer))
    words = sorted({p for p in pieces if len(p) >= 3 and p.isascii() and p.isalpha() and p.islower()})
    if len(words) < 10:
        raise ValueError(
            f"The tokenizer has {len(words)} lower-case word tokens of 3+ letters; random names need at least 10. "
            "Set sft_warmup.random_names to 0 for this tokenizer."
        )
    return words


def rename_messages(
    messages: list[dict[str, Any]], names: dict[str, str], rng: random.Random, pieces: list[str]
) -> list[dict[str, Any]]:
    """``messages`` with every name of ``names`` replaced by a random one, the same one wherever it appears.

    Args:
        messages: The conversation to rename. System messages are kept as they are: they hold no task name, and
            a name that is also a common word must not change the instructions.
        names: Name -> kind (``table``, ``column`` or ``value``). A column becomes 1-2 pieces joined by ``_``, a
            table or value 1-3 capitalised pieces joined by spaces.
        rng: Draws the new names.
        pieces: Words to build names from (:func:`word_pieces`).

    Only texts are renamed (message contents, text parts and tool-call arguments), never roles, keys or tool
    names, so a column called ``name`` or a value ``user`` leaves the conversation's structure alone. Matches are
    whole words, the longest name first, so a value that holds another name is replaced as one.
    """
    if not names:
        return messages
    new: dict[str, str] = {}
    for name, kind in names.items():
        words = rng.choices(pieces, k=rng.randint(1, 2 if kind == "column" else 3))
        new[name] = "_".join(words) if kind == "column" else " ".join(w.capitalize() for w in words)
    alternatives = "|".join(re.escape(n) for n in sorted(new, key=len, reverse=True))
    pattern = re.compile(rf"(?<!\w)({alternatives})(?!\w)")

    def text(value: Any) -> Any:
        """A string renamed; the values of arguments given as a mapping renamed, their keys kept."""
        if isinstance(value, dict):
            return {k: text(v) for k, v in value.items()}
        return pattern.sub(lambda m: new[m.group(1)], value) if isinstance(value, str) else value

    renamed = []
    for message in copy.deepcopy(messages):
        if message.get("role") == "system":
            renamed.append(message)
            continue
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and "text" in part:
                    part["text"] = text(part["text"])
        else:
            message["content"] = text(content)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if "arguments" in function:
                function["arguments"] = text(function["arguments"])
        renamed.append(message)
    return renamed
