"""``agentrl-envs data fetch | import | status``: get the AgentBench data root and see what it holds."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DATA_ROOT_ENV
from agentrl_envs.data.fetch import DATA_URL_ENV, default_data_root, fetch, import_checkout
from agentrl_envs.data.pinned import PINNED_COMMIT
from agentrl_envs.data.status import RootStatus, inspect

__all__ = ["add_commands"]


def add_commands(groups: Any) -> None:
    """Add the ``data`` command group to the top-level CLI's sub-parsers."""
    parser = groups.add_parser("data", help="Fetch, import or inspect the AgentBench data root.")
    commands = parser.add_subparsers(dest="command", required=True)
    get = commands.add_parser("fetch", help="Download AgentBench at the pinned commit, verify it, build the data root.")
    get.add_argument(
        "--from",
        dest="source",
        default=None,
        help=f"URL or local .tar.gz of the commit's archive (default ${DATA_URL_ENV}, else GitHub's tarball).",
    )
    _common(get)
    get.add_argument("--no-progress", action="store_true", help="No progress bar.")
    get.set_defaults(run=_fetch)
    local = commands.add_parser("import", help="Build the data root from a local AgentBench checkout.")
    local.add_argument("path", help="The checkout (a clone at the commit, or its unpacked archive).")
    _common(local)
    local.set_defaults(run=_import)
    status = commands.add_parser("status", help="What the data root holds: commit, source, usable splits.")
    status.add_argument(
        "--data-root", default=None, help=f"The root to inspect (default ${DATA_ROOT_ENV}, else the cache)."
    )
    status.set_defaults(run=_status)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--commit", default=PINNED_COMMIT, help=f"Upstream commit (default {PINNED_COMMIT}).")
    parser.add_argument(
        "--dest", default=None, help="The data root to build (default $AGENTRL_CACHE_DIR/agentbench/<commit>)."
    )
    parser.add_argument("--tree", default=None, help="`git ls-tree -r <commit>` output, for a commit not pinned here.")
    parser.add_argument("--force", action="store_true", help="Rebuild even if the data root is already there.")


def _fetch(args: argparse.Namespace) -> int:
    root = fetch(
        commit=args.commit,
        source=args.source,
        dest=args.dest,
        tree_file=args.tree,
        force=args.force,
        show_progress=False if args.no_progress else None,
    )
    print(_describe(inspect(root)))
    return 0


def _import(args: argparse.Namespace) -> int:
    root = import_checkout(args.path, commit=args.commit, dest=args.dest, tree_file=args.tree, force=args.force)
    print(_describe(inspect(root)))
    return 0


def _status(args: argparse.Namespace) -> int:
    root = Path(args.data_root or os.environ.get(DATA_ROOT_ENV) or default_data_root()).expanduser()
    status = inspect(root)
    print(_describe(status))
    return 0 if status.exists else 1


def _describe(status: RootStatus) -> str:
    if not status.exists:
        return f"No AgentBench data root at {status.path}. Run `agentrl-envs data fetch` to build it there."
    lines = [f"AgentBench data root: {status.path}"]
    info = status.info
    if info is None:
        lines.append("  not built by agentrl-envs (no agentrl-data.json): commit and file checks unknown")
    else:
        lines.append(f"  commit {info.commit}, from {info.source}, built {info.built_at}")
        lines.append(f"  {len(info.files)} upstream files, each verified against its git blob id")
        for upstream in sorted(info.missing.values()):
            lines.append(f"  absent from the source: {upstream}")
    lines.append("  splits:")
    for split in status.splits:
        state = "usable" if split.usable else f"not usable (missing {', '.join(split.missing)})"
        lines.append(f"    {split.task:9} {split.split:6} {state}")
    return "\n".join(lines)
