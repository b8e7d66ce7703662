"""``python -m agentrl_envs.tasks.alfworld.prepare``: generate and cache the ALFWorld games of a split.

Games are otherwise generated lazily, on the first reset of each index; this command builds a whole split ahead
of time (the test split's 109 games take about a minute per core).
"""

from __future__ import annotations

import argparse
import logging
import os
import time

from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.alfworld.games import SPLIT_FILES, GameStore, prepare_games, split_entries


def main(argv: list[str] | None = None) -> None:
    """Parse arguments and generate the requested games."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--split", choices=sorted(SPLIT_FILES), default="test", help="split to generate")
    parser.add_argument("--limit", type=int, default=None, help="only the first N entries of the split")
    parser.add_argument("--stride", type=int, default=1, help="only every Nth of those entries")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="generator processes")
    parser.add_argument("--data-root", default=None, help="AgentBench data root (default: $AGENTRL_DATA_ROOT)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    data = DataRoot.find(args.data_root)
    paths = split_entries(data, args.split)[: args.limit : args.stride]
    started = time.perf_counter()
    made = prepare_games(data, paths, workers=args.workers, seed=args.seed)
    elapsed = time.perf_counter() - started
    directory = GameStore(data, seed=args.seed).directory
    logging.info("%s: %d games (%d generated now) in %.1f s under %s", args.split, len(paths), made, elapsed, directory)


if __name__ == "__main__":
    main()
