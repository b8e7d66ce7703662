"""The three upstream OS images (``default``, ``packages``, ``ubuntu``) as rootfs recipes and Docker tags.

One provisioning script (``provision.sh`` next to this module) defines them for both backends: the ``bwrap``
backend builds a Debian bookworm rootfs with it (see :mod:`agentrl_envs.sandboxes.rootfs`), and the ``docker``
backend's images are those same rootfs tarballs, imported with the settings of
``env_images/os/<name>/Dockerfile`` (see :mod:`agentrl_envs.sandboxes.docker_import`). The Dockerfiles run the
same script over a Debian base for machines that cannot build the rootfs (``env_images/os/build --dockerfile``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import EnvError
from agentrl_envs.sandboxes.options import ImageSet
from agentrl_envs.sandboxes.rootfs import RootfsRecipe, ensure_rootfs

__all__ = [
    "APPROX_GB",
    "DOCKER_CHANGES",
    "IMAGES",
    "OS_IMAGES",
    "PROVISION_SCRIPT",
    "docker_tag",
    "ensure_docker_images",
    "recipe",
]

IMAGES = ("default", "packages", "ubuntu")
PROVISION_SCRIPT = Path(__file__).with_name("provision.sh")
APPROX_GB = {"default": 1.9, "packages": 2.8, "ubuntu": 0.7}
"""Disk use of a first build of each image (its tree and tarball plus the shared Debian base's, 0.4 GB), measured
on bookworm; said before a build."""
DOCKER_CHANGES = ('CMD ["bash"]',)
"""The image settings of ``env_images/os/*/Dockerfile`` (all three set only ``CMD``), applied on import."""


def recipe(image: str) -> RootfsRecipe:
    """The rootfs recipe of an upstream image name."""
    _check(image)
    return RootfsRecipe(f"os-{image}", script=PROVISION_SCRIPT, script_args=(image,), approx_gb=APPROX_GB[image])


def docker_tag(image: str) -> str:
    """The Docker tag ``env_images/os/build`` gives an upstream image name."""
    _check(image)
    return f"agentrl/os-{image}:latest"


OS_IMAGES = ImageSet(rootfs=lambda image: ensure_rootfs(recipe(image)), docker_tag=docker_tag)
"""The three images for the sandbox backends (what :class:`~agentrl_envs.sandboxes.options.SandboxOptions` names by
default)."""


def ensure_docker_images(images: Sequence[str] = IMAGES, *, client: Any = None) -> dict[str, bool]:
    """Import the rootfs of each image into Docker as :func:`docker_tag` unless it is up to date.

    Returns:
        For each image, whether it was (re)imported.

    Raises:
        BackendUnavailableError: If no engine answers, or a rootfs must be built without debootstrap or bwrap.
    """
    from agentrl_envs.sandboxes.docker import engine_client
    from agentrl_envs.sandboxes.docker_import import ensure_imported

    client = client or engine_client()
    return {
        image: ensure_imported(client, recipe(image), docker_tag(image), changes=DOCKER_CHANGES) for image in images
    }


def _check(image: str) -> None:
    if image not in IMAGES:
        raise EnvError(f"Unknown OS image {image!r}; the OS task has {list(IMAGES)}.")
