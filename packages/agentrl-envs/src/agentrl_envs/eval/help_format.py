"""The ``--help`` formatter of the eval commands (``agentrl-eval``, ``agentrl-eval compare``)."""

from __future__ import annotations

import argparse

__all__ = ["DefaultsHelpFormatter"]


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default in ``--help`` unless it has none, or its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, []) or "default" in text:
            return text
        return super()._get_help_string(action)
