"""Docker images made from the bwrap backend's rootfs tarballs with ``docker import``.

Importing the cached tarball of a :class:`~agentrl_envs.sandboxes.rootfs.RootfsRecipe` gives an image whose files
are exactly the bwrap rootfs (one recipe, no drift between backends) in seconds, instead of provisioning the
system a second time in a ``docker build``. ``docker import`` carries no image settings, so the ones a
Dockerfile would set (``CMD``, ``ENV``, ``WORKDIR``, ...) are passed as ``--change`` instructions. The image is
labelled with the recipe's key and a hash of those instructions; an image whose label matches is reused, so a
changed recipe or setting re-imports it and an unchanged one costs one ``inspect``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import InfraError
from agentrl_envs.sandboxes.rootfs import RootfsRecipe, rootfs_tarball

__all__ = ["RECIPE_LABEL", "ensure_imported", "import_label"]

logger = logging.getLogger(__name__)

RECIPE_LABEL = "agentrl.recipe"
"""Image label holding what the image was made from (see :func:`import_label`)."""


def import_label(recipe: RootfsRecipe, changes: Sequence[str]) -> str:
    """The :data:`RECIPE_LABEL` value of ``recipe`` imported with ``changes``: ``<recipe key>.<changes hash>``."""
    digest = hashlib.sha256(json.dumps(list(changes)).encode()).hexdigest()[:8]
    return f"{recipe.key}.{digest}"


def ensure_imported(
    client: Any, recipe: RootfsRecipe, tag: str, *, changes: Sequence[str] = (), cache_dir: Path | None = None
) -> bool:
    """Make ``tag`` the import of ``recipe``'s rootfs tarball (built first if missing) unless it already is.

    Args:
        client: A ``docker`` SDK client (:func:`agentrl_envs.sandboxes.docker.engine_client`).
        recipe: The rootfs recipe; its tarball is built (needs root, debootstrap and bwrap) when not cached.
        tag: The image tag to create, e.g. ``agentrl/os-default:latest``.
        changes: Dockerfile instructions applied to the image (``docker import --change``), e.g. ``CMD ["bash"]``.
        cache_dir: The cache dir holding the rootfs store (default: ``AGENTRL_CACHE_DIR``).

    Returns:
        True if the image was imported, False if ``tag`` already carried the same recipe and changes.

    Raises:
        InfraError: If the engine refused the import or the result does not carry the expected label.
    """
    from docker.utils import parse_repository_tag

    label = import_label(recipe, changes)
    if _label_of(client, tag) == label:
        return False
    tarball = rootfs_tarball(recipe, cache_dir=cache_dir)
    repository, version = parse_repository_tag(tag)
    logger.info("importing %s as %s", tarball.name, tag)
    settings = [*changes, f"LABEL {RECIPE_LABEL}={label}"]
    try:
        client.api.import_image_from_file(str(tarball), repository, tag=version or "latest", changes=settings)
    except Exception as e:  # the SDK raises several unrelated types (APIError, requests' errors, OSError)
        raise InfraError(f"docker import of {tarball} as {tag} failed: {e}") from e
    # The engine answers a failed import with an error inside a 200 stream, so check what the tag now is.
    found = _label_of(client, tag)
    if found != label:
        raise InfraError(
            f"docker import of {tarball} as {tag} did not produce the image (its {RECIPE_LABEL} label is {found!r}, "
            f"expected {label!r}); see the dockerd log."
        )
    return True


def _label_of(client: Any, tag: str) -> str | None:
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return (image.labels or {}).get(RECIPE_LABEL)
