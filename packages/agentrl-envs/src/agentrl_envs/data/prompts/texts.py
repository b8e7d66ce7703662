"""The record of one task's derived texts: each value with the upstream line it was read from."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from agentrl_envs.data.prompts.source import DerivationError, PySource

__all__ = ["TaskTexts"]


class TaskTexts:
    """Derived values of one task, keyed as ``prompts.json`` -> ``tasks`` -> task, plus a ``where`` map."""

    def __init__(self, task: str) -> None:
        """Start an empty record for ``task`` (its key in ``prompts.json``)."""
        self.task = task
        self.values: dict[str, Any] = {}
        self.where: dict[str, str] = {}

    def put(self, key: str, source: PySource, scope: str, read: Callable[[], tuple[Any, ast.AST]]) -> None:
        """Record ``key``: ``read`` returns the value and the node it came from.

        Raises:
            DerivationError: Naming the task, the key, the file and the function when ``read`` fails.
        """
        try:
            value, node = read()
        except DerivationError as e:
            raise DerivationError(
                f"prompts.json -> {self.task}.{key}: cannot read it from {source.path} ({scope}): {e}. The upstream "
                "code is not the pinned commit's shape."
            ) from e
        self.values[key] = value
        self.where[key] = source.where(node, scope)

    def as_json(self) -> dict[str, Any]:
        """The task's entry of ``prompts.json``."""
        return {**self.values, "where": self.where}
