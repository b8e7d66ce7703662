"""Cache keys that survive new settings: a setting added after artefacts were cached keys only when it is changed.

The tiny model and the SFT warm-up are cached under a hash of the settings that shaped them. A new setting whose
default reproduces the old behaviour must not change that hash, or every cached artefact would be rebuilt (a
warm-up costs minutes to hours on a CPU) for nothing; so it enters the key only at another value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["without_later_defaults"]


def without_later_defaults(values: Mapping[str, Any], added_later: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` less the settings of ``added_later`` (name -> the value that reproduces the old behaviour) at it."""
    return {k: v for k, v in values.items() if k not in added_later or v != added_later[k]}
