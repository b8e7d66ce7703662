"""``prompts.json``, derived by code from upstream's FC task sources (see :mod:`.source` for how).

Each task module reads the texts its environment shows an agent (system prompts, message templates, error
messages, limits, tool schemas) from the upstream files :data:`~agentrl_envs.data.layout.PROMPT_SOURCES` names,
and records where each came from in the task's ``where`` map. No upstream text is stored in this repository.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentrl_envs.data.layout import PROMPT_SOURCES
from agentrl_envs.data.prompts import alfworld, dbbench, kg, os_interaction, webshop
from agentrl_envs.data.prompts.source import DerivationError
from agentrl_envs.data.prompts.texts import TaskTexts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["DERIVERS", "DerivationError", "derive_prompts"]

DERIVERS: dict[str, Callable[[UpstreamFiles], TaskTexts]] = {
    "alfworld": alfworld.derive,
    "dbbench": dbbench.derive,
    "kg": kg.derive,
    "os": os_interaction.derive,
    "webshop": webshop.derive,
}
"""``prompts.json`` task key -> the function that derives its entry."""


def derive_prompts(files: UpstreamFiles, *, repository: str, license_name: str = "Apache-2.0") -> dict[str, Any]:
    """The contents of ``prompts.json``: a ``source`` block and one entry per task whose sources are present.

    A task whose source files the upstream source lacks gets no entry; ``missing_sources`` lists why.

    Raises:
        DerivationError: If a present source does not have the shape a text is read from.
    """
    tasks: dict[str, Any] = {}
    missing: dict[str, list[str]] = {}
    for task, derive in DERIVERS.items():
        absent = [path for path in PROMPT_SOURCES[task] if path not in files.files]
        if absent:
            missing[task] = absent
            continue
        try:
            tasks[task] = derive(files).as_json()
        except DerivationError as e:
            if str(e).startswith("prompts.json -> "):  # already names the key and the file
                raise
            raise DerivationError(
                f"prompts.json -> {task}: cannot derive it from {', '.join(PROMPT_SOURCES[task])}: {e}. The upstream "
                "code is not the pinned commit's shape."
            ) from e
    source = {"repo": repository, "commit": files.commit, "license": license_name, "derived_from": PROMPT_SOURCES}
    return {"source": source, "tasks": tasks, "missing_sources": missing}
