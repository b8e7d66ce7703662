"""The example environment of docs/envs/custom.md, written out as the module ``guess_env`` for tests to run.

The tests run the page's code itself (its first ``python`` block), so the page cannot drift from what works.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentrl_envs.core.registry import unregister_task

PAGE = Path(__file__).resolve().parents[1] / "docs" / "envs" / "custom.md"
MODULE = "guess_env"
SECRETS_TEST = [3, 17, 42, 64, 99]


def example_code() -> str:
    """The page's first Python code block."""
    return re.search(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL).group(1)


@contextmanager
def guess_env_module(directory: Path) -> Iterator[Path]:
    """``directory/guess_env.py`` from the docs, importable (on ``sys.path``) while the block runs."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{MODULE}.py").write_text(example_code())
    sys.path.insert(0, str(directory))
    try:
        yield directory
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop(MODULE, None)
        unregister_task("guess")
