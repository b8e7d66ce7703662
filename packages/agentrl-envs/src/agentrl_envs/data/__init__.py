"""The AgentBench data root, fetched and built by code (``agentrl-envs data ...`` on the command line).

:func:`fetch` downloads upstream AgentBench at the pinned commit (or reads a mirror or a local archive),
:func:`import_checkout` reads a local checkout; both verify every file against the commit's git blob id
(:mod:`.pinned`), copy the data and configs (:mod:`.layout`), derive ``prompts.json`` from upstream's task code
(:mod:`.prompts`) and put the root in place atomically (:mod:`.build`). :func:`inspect` reports what a root holds.
"""

from agentrl_envs.data.build import DataRootInfo, read_info
from agentrl_envs.data.fetch import cached_data_root, default_data_root, fetch, import_checkout
from agentrl_envs.data.pinned import PINNED_COMMIT, github_archive_url
from agentrl_envs.data.status import RootStatus, SplitStatus, inspect

__all__ = [
    "PINNED_COMMIT",
    "DataRootInfo",
    "RootStatus",
    "SplitStatus",
    "cached_data_root",
    "default_data_root",
    "fetch",
    "github_archive_url",
    "import_checkout",
    "inspect",
    "read_info",
]
