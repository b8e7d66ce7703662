"""Build (or confirm) the OS task's root filesystems: ``python -m agentrl_envs.tasks.os.images [IMAGE...]``.

``scripts/bootstrap.sh`` runs this so a fresh machine has the ``bwrap`` backend's images before the tests
need them; a warm cache answers in milliseconds. Prints one line per image with where it is and how long
it took.
"""

from __future__ import annotations

import argparse
import logging
import time

from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.images import IMAGES, recipe

logger = logging.getLogger("agentrl_envs.tasks.os.images")


def main() -> None:
    """Build the named images (all three by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="*", help="default, packages, ubuntu (default: all)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for image in args.images or IMAGES:
        started = time.monotonic()
        path = ensure_rootfs(recipe(image))
        logger.info("os image %s: %s (%.1f s)", image, path, time.monotonic() - started)


if __name__ == "__main__":
    main()
