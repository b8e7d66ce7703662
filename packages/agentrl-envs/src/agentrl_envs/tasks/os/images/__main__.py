"""Build (or confirm) the OS task's images: ``python -m agentrl_envs.tasks.os.images [--docker] [IMAGE...]``.

``scripts/bootstrap.sh`` runs this so a fresh machine has the ``bwrap`` backend's root filesystems before the
tests need them; ``--docker`` (what ``env_images/os/build`` runs) also imports them into the Docker engine as
``agentrl/os-<image>:latest``. The shared debootstrap base is built first, then the images in parallel (their
apt runs wait on the network and the disk as much as on the CPU). A warm cache answers in milliseconds. Prints
one line per image with where it is and how long it took.
"""

from __future__ import annotations

import argparse
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentrl_envs.sandboxes.docker import engine_client
from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.images import IMAGES, docker_tag, ensure_docker_images, recipe

logger = logging.getLogger("agentrl_envs.tasks.os.images")


def build(image: str, *, client: Any = None) -> None:
    """Build the rootfs of ``image`` and, given a Docker client, import it as :func:`docker_tag`."""
    started = time.monotonic()
    path = ensure_rootfs(recipe(image))
    logger.info("os image %s: %s (%.1f s)", image, path, time.monotonic() - started)
    if client is not None:
        started = time.monotonic()
        state = "imported" if ensure_docker_images([image], client=client)[image] else "up to date"
        logger.info("os image %s: %s %s (%.1f s)", image, docker_tag(image), state, time.monotonic() - started)


def main() -> None:
    """Build the named images (all three by default)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("images", nargs="*", help="default, packages, ubuntu (default: all)")
    parser.add_argument("--docker", action="store_true", help="also import them into the Docker engine")
    parser.add_argument("--jobs", type=int, default=len(IMAGES), help="images built at once (1: one after another)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    images = args.images or list(IMAGES)
    client = engine_client() if args.docker else None  # fails fast, before any rootfs build, without an engine
    started = time.monotonic()
    ensure_rootfs(recipe(images[0]).base())  # shared by all; built once before they start
    logger.info("os images: base %s (%.1f s)", recipe(images[0]).base().key, time.monotonic() - started)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs), thread_name_prefix="os-image") as pool:
        for done in [pool.submit(build, image, client=client) for image in images]:
            done.result()  # the first failure is raised once the others have finished
    logger.info("os images: all done (%.1f s)", time.monotonic() - started)


if __name__ == "__main__":
    main()
