"""The three upstream OS images (``default``, ``packages``, ``ubuntu``) as rootfs recipes and Docker tags.

One provisioning script (``provision.sh`` next to this module) defines them for both backends: the ``bwrap`` backend
builds a Debian bookworm rootfs with it (see :mod:`agentrl_envs.sandboxes.rootfs`), the ``docker`` backend
builds ``env_images/os/<name>/Dockerfile`` whose only step runs the same script.
"""

from __future__ import annotations

from pathlib import Path

from agentrl_envs.core.errors import EnvError
from agentrl_envs.sandboxes.rootfs import RootfsRecipe

__all__ = ["IMAGES", "PROVISION_SCRIPT", "docker_tag", "recipe"]

IMAGES = ("default", "packages", "ubuntu")
PROVISION_SCRIPT = Path(__file__).with_name("provision.sh")


def recipe(image: str) -> RootfsRecipe:
    """The rootfs recipe of an upstream image name."""
    if image not in IMAGES:
        raise EnvError(f"Unknown OS image {image!r}; the OS task has {list(IMAGES)}.")
    return RootfsRecipe(f"os-{image}", script=PROVISION_SCRIPT, script_args=(image,))


def docker_tag(image: str) -> str:
    """The Docker tag ``env_images/os/build`` gives an upstream image name."""
    if image not in IMAGES:
        raise EnvError(f"Unknown OS image {image!r}; the OS task has {list(IMAGES)}.")
    return f"agentrl/os-{image}:latest"
