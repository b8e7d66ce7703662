"""Docker images imported from rootfs tarballs: the OS images are the bwrap rootfs with the Dockerfiles' settings,
and an import is redone only when the recipe or the settings change."""

from __future__ import annotations

import io
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl_envs.sandboxes.docker_import import RECIPE_LABEL, ensure_imported, import_label
from agentrl_envs.sandboxes.rootfs import RootfsRecipe, ensure_rootfs
from agentrl_envs.tasks.os.images import DOCKER_CHANGES, IMAGES, docker_tag, recipe

REPO = Path(__file__).resolve().parents[3]
_BUILD_STEPS = ("FROM", "COPY", "RUN")


def _settings(dockerfile: Path) -> tuple[str, ...]:
    lines = [line.strip() for line in dockerfile.read_text().splitlines()]
    return tuple(line for line in lines if line and not line.startswith("#") and line.split()[0] not in _BUILD_STEPS)


@pytest.mark.parametrize("image", IMAGES)
def test_the_import_applies_what_the_dockerfile_sets(image: str) -> None:
    dockerfile = REPO / "env_images/os" / image / "Dockerfile"
    assert _settings(dockerfile) == DOCKER_CHANGES
    assert f"RUN bash /tmp/provision.sh {image} " in dockerfile.read_text()


def test_label_names_the_recipe_and_changes_with_the_settings(tmp_path: Path) -> None:
    script = tmp_path / "provision.sh"
    script.write_text("true\n")
    one = RootfsRecipe("x", script=script)
    assert import_label(one, ['CMD ["bash"]']).startswith(one.key + ".")
    assert import_label(one, ['CMD ["bash"]']) == import_label(one, ['CMD ["bash"]'])
    assert import_label(one, ['CMD ["bash"]']) != import_label(one, ['CMD ["sh"]'])
    assert import_label(one, []) != import_label(RootfsRecipe("x", script=script, script_args=("a",)), [])


def _cached_rootfs(cache_dir: Path, recipe: RootfsRecipe) -> None:
    """Put a tiny built rootfs of ``recipe`` into the store, as ensure_rootfs leaves one (tarball + marker)."""
    store = cache_dir / "rootfs"
    store.mkdir(parents=True)
    with tarfile.open(store / f"{recipe.key}.tar", "w") as tar:
        data = b"hello\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (store / recipe.key).mkdir()
    (store / f"{recipe.key}.complete").touch()


@pytest.fixture
def client(docker_engine: None) -> Iterator[object]:
    from agentrl_envs.sandboxes.docker import engine_client

    yield engine_client()


@pytest.mark.docker
def test_import_is_reused_until_the_settings_change(tmp_path: Path, client: object) -> None:
    script = tmp_path / "provision.sh"
    script.write_text("true\n")
    tiny = RootfsRecipe("tiny", script=script)
    _cached_rootfs(tmp_path, tiny)
    tag = f"agentrl-test/import-{secrets.token_hex(4)}:latest"
    try:
        assert ensure_imported(client, tiny, tag, changes=['CMD ["bash"]'], cache_dir=tmp_path)
        first = client.images.get(tag)  # type: ignore[attr-defined]
        assert first.labels[RECIPE_LABEL] == import_label(tiny, ['CMD ["bash"]'])
        assert first.attrs["Config"]["Cmd"] == ["bash"]

        assert not ensure_imported(client, tiny, tag, changes=['CMD ["bash"]'], cache_dir=tmp_path)
        assert client.images.get(tag).id == first.id  # type: ignore[attr-defined]

        assert ensure_imported(client, tiny, tag, changes=['CMD ["sh"]'], cache_dir=tmp_path)
        second = client.images.get(tag)  # type: ignore[attr-defined]
        assert second.id != first.id
        assert second.attrs["Config"]["Cmd"] == ["sh"]
    finally:
        client.images.remove(tag, force=True)  # type: ignore[attr-defined]
        for image in client.images.list(filters={"dangling": True, "label": RECIPE_LABEL}):  # type: ignore[attr-defined]
            if image.labels.get(RECIPE_LABEL, "").startswith(tiny.key):
                client.images.remove(image.id, force=True)  # type: ignore[attr-defined]


@pytest.mark.docker
@pytest.mark.parametrize("image", IMAGES)
def test_os_images_are_the_bwrap_rootfs(image: str, client: object) -> None:
    found = client.images.get(docker_tag(image))  # type: ignore[attr-defined]
    assert found.labels[RECIPE_LABEL] == import_label(recipe(image), DOCKER_CHANGES)
    in_image = client.containers.run(  # type: ignore[attr-defined]
        docker_tag(image), ["dpkg-query", "-W"], network_mode="none", remove=True
    ).decode()
    root = ensure_rootfs(recipe(image))
    in_rootfs = subprocess.run(
        ["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W"], capture_output=True, text=True, check=True
    ).stdout
    assert in_image == in_rootfs
    assert "python3" in in_image or image == "ubuntu"
