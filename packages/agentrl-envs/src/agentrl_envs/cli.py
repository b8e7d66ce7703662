"""``agentrl-envs``: data and task utilities that are not evaluation (``agentrl-envs data fetch``, ``webshop serve``).

Each task that has commands contributes a sub-command group through an ``add_commands(subparsers)`` function.
"""

from __future__ import annotations

import argparse
import logging
import sys

from agentrl_envs.core.errors import AgentRLError
from agentrl_envs.data import cli as data_cli
from agentrl_envs.synth import cli as synth_cli
from agentrl_envs.tasks.webshop import cli as webshop_cli

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = argparse.ArgumentParser(prog="agentrl-envs", description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--log-level", default="INFO", help="Python logging level (default INFO).")
    groups = parser.add_subparsers(dest="group", required=True)
    data_cli.add_commands(groups)
    webshop_cli.add_commands(groups)
    synth_cli.add_commands(groups)
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.run(args) or 0)
    except AgentRLError as e:  # a setup problem the message explains; no traceback needed
        print(f"agentrl-envs: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
