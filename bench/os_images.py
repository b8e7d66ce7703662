"""OS Docker image build time, cold: ``docker import`` of the cached rootfs vs ``docker build`` of the Dockerfiles.

Both methods build into throwaway tags (``agentrl-bench/os-<image>:<method>``, removed at the end), so the
images the tests use are left alone. ``import`` times :func:`ensure_imported` of the cached rootfs tarball
(built first, untimed, when missing); ``dockerfile`` times ``docker build --no-cache`` of
``env_images/os/<image>/Dockerfile`` over ``agentrl/base:bookworm`` (made first, untimed, when missing), i.e.
the provisioning apt run the import avoids (it needs the network).

    uv run python bench/os_images.py                          # both methods, all three images
    uv run python bench/os_images.py --methods import --repeat 3

Needs root, bwrap and debootstrap (the rootfs) and a running Docker engine (scripts/dockerd.sh start).
Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from agentrl_envs.sandboxes.docker import engine_client
from agentrl_envs.sandboxes.docker_import import ensure_imported
from agentrl_envs.sandboxes.rootfs import rootfs_tarball
from agentrl_envs.tasks.os.images import DOCKER_CHANGES, IMAGES, recipe

REPO = Path(__file__).resolve().parents[1]
CONTEXT = REPO / "packages/agentrl-envs/src/agentrl_envs/tasks/os/images"


def _tag(image: str, method: str) -> str:
    return f"agentrl-bench/os-{image}:{method}"


def build_import(client: Any, image: str) -> None:
    """Import the cached rootfs tarball (always: the bench tag was removed before)."""
    assert ensure_imported(client, recipe(image), _tag(image, "import"), changes=DOCKER_CHANGES)


def build_dockerfile(client: Any, image: str) -> None:
    """``docker build --no-cache`` of the image's Dockerfile."""
    dockerfile = REPO / "env_images/os" / image / "Dockerfile"
    command = ["docker", "build", "-q", "--no-cache", "-t", _tag(image, "dockerfile"), "-f", dockerfile, CONTEXT]
    subprocess.run(command, check=True, capture_output=True)


METHODS = {"import": build_import, "dockerfile": build_dockerfile}


def _remove(client: Any, tag: str) -> None:
    import docker.errors

    try:
        client.images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass


def main() -> None:
    """Time each method on each image and print the table and the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated: import, dockerfile")
    parser.add_argument("--images", default=",".join(IMAGES), help="comma-separated: default, packages, ubuntu")
    parser.add_argument("--repeat", type=int, default=1, help="builds per image and method (the median is shown)")
    args = parser.parse_args()
    methods, images = args.methods.split(","), args.images.split(",")
    if unknown := set(methods) - set(METHODS):
        raise SystemExit(f"os_images: unknown method(s) {sorted(unknown)}; known: {', '.join(METHODS)}")

    client = engine_client()
    for image in images:
        rootfs_tarball(recipe(image))  # untimed: what scripts/bootstrap.sh builds before either method runs
    if "dockerfile" in methods:
        subprocess.run([REPO / "env_images/base/build"], check=True, capture_output=True)

    results = []
    for method in methods:
        for image in images:
            seconds = []
            for _ in range(args.repeat):
                _remove(client, _tag(image, method))
                started = time.monotonic()
                METHODS[method](client, image)
                seconds.append(time.monotonic() - started)
                _remove(client, _tag(image, method))
            results.append({"method": method, "image": image, "seconds": round(statistics.median(seconds), 1)})

    header = ["method", "image", "seconds"]
    print(" | ".join(header))
    for row in results:
        print(" | ".join(str(row[key]) for key in header))
    totals = {method: round(sum(r["seconds"] for r in results if r["method"] == method), 1) for method in methods}
    print("total: " + ", ".join(f"{method} {seconds} s" for method, seconds in totals.items()))
    machine = {"python": platform.python_version(), "machine": platform.machine()}
    print(json.dumps({"bench": "os_images", "machine": machine, "results": results, "totals_s": totals}))


if __name__ == "__main__":
    main()
