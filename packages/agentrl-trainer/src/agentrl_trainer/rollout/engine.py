"""Where :class:`RolloutEngine` used to live; docs/deployment.md named this path, so it still imports.

The protocol and every engine now live in :mod:`agentrl_trainer.engines` (:mod:`agentrl_trainer.engines.protocol`).
"""

from agentrl_trainer.engines.protocol import RolloutEngine

__all__ = ["RolloutEngine"]
