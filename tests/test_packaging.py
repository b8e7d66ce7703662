"""The three packages build into wheels and sdists that install into clean venvs and run their console scripts.

Each wheel goes into a fresh venv with its dependencies, resolved from its own metadata. The lock's versions are
given as constraints, so uv finds every dependency in its cache (seconds, nothing new downloaded); the trainer's
torch comes from the machine's local CPU wheel, the source the workspace itself uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agentrl-envs", "agentrl-controller", "agentrl-trainer")
HEAVY = ("torch", "transformers", "trl", "accelerate")
"""What the eval-only install must not pull in (DESIGN.md: ``pip install agentrl-envs`` stays light)."""

pytestmark = pytest.mark.slow


def _run(*command: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``uv build --all-packages``: each sdist, then each wheel built from that sdist (so the sdists are whole)."""
    out = tmp_path_factory.mktemp("dist")
    _run("uv", "build", "--all-packages", "--quiet", "-o", out)
    return out


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lock's versions of every third-party package, as a constraints file."""
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    exported = _run(
        "uv", "export", "--frozen", "--all-packages", "--all-extras", "--no-hashes", "--no-emit-workspace",
        "--no-header", "--no-annotate",
    )  # fmt: skip
    path.write_text(exported)
    return path


def _wheel(dist: Path, package: str) -> Path:
    return dist / f"{package.replace('-', '_')}-0.1.0-py3-none-any.whl"


def _local_torch_wheels() -> Path:
    """The folder of the workspace's ``torch`` index (the machine's CPU wheel), read from the root pyproject."""
    uv = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["uv"]
    index = {entry["name"]: entry["url"] for entry in uv["index"]}[uv["sources"]["torch"]["index"]]
    return Path(urlparse(index).path if "://" in index else index)


class Venv:
    """A fresh venv with some of the built wheels installed."""

    def __init__(self, root: Path, wheels: list[Path], constraints: Path, find_links: Path | None = None) -> None:
        self.root = root
        _run("uv", "venv", "--quiet", "--python", sys.executable, root)
        install = ["uv", "pip", "install", "--quiet", "--python", self.python, "-c", constraints, *wheels]
        if find_links is not None:
            install += ["--find-links", find_links]
        _run(*install, env=self.env)

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def env(self) -> dict[str, str]:
        """The test's environment without anything that points into the workspace's venv."""
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT")}
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def script(self, name: str, *args: str | Path, cwd: Path = REPO) -> str:
        """Run one of the venv's console scripts (by its path, so it is this venv's)."""
        return _run(self.root / "bin" / name, *args, cwd=cwd, env=self.env)

    def installed(self) -> set[str]:
        listing = json.loads(_run("uv", "pip", "list", "--python", self.python, "--format", "json", env=self.env))
        return {entry["name"].lower() for entry in listing}

    def module_file(self, module: str) -> Path:
        return Path(_run(self.python, "-c", f"import {module}; print({module}.__file__)", env=self.env).strip())


def test_build_gives_three_wheels_and_sdists_with_every_source_file(dist: Path) -> None:
    assert sorted(p.name for p in dist.glob("*.whl")) == sorted(_wheel(dist, p).name for p in PACKAGES)
    assert sorted(p.name for p in dist.glob("*.tar.gz")) == sorted(
        f"{p.replace('-', '_')}-0.1.0.tar.gz" for p in PACKAGES
    )
    for package in PACKAGES:
        tracked = _run("git", "ls-files", f"packages/{package}/src").split()
        expected = {path.split("/src/", 1)[1] for path in tracked}
        with zipfile.ZipFile(_wheel(dist, package)) as wheel:
            shipped = {name for name in wheel.namelist() if ".dist-info/" not in name}
        assert shipped == expected, package  # package data too (the OS image script, py.typed)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_wheel_describes_itself_with_its_readme_and_scripts(dist: Path, package: str) -> None:
    info = f"{package.replace('-', '_')}-0.1.0.dist-info"
    with zipfile.ZipFile(_wheel(dist, package)) as wheel:
        metadata = wheel.read(f"{info}/METADATA").decode()
        scripts = [line.split("=")[0].strip() for line in wheel.read(f"{info}/entry_points.txt").decode().splitlines()]
    description = metadata.split("\n\n", 1)[1]
    assert description == (REPO / "packages" / package / "README.md").read_text()
    scripts = [name for name in scripts if name and not name.startswith("[")]
    assert scripts and all(f"{name} " in description for name in scripts), scripts  # a quickstart per script


def test_trainer_metadata_takes_a_torch_range(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist, "agentrl-trainer")) as wheel:
        metadata = wheel.read("agentrl_trainer-0.1.0.dist-info/METADATA").decode()
    torch = [line for line in metadata.splitlines() if line.startswith("Requires-Dist: torch")]
    assert len(torch) == 1 and "==" not in torch[0] and ">=" in torch[0], torch


def test_envs_wheel_is_light_and_evaluates(dist: Path, constraints: Path, tmp_path: Path, data_root: Path) -> None:
    venv = Venv(tmp_path / "venv", [_wheel(dist, "agentrl-envs")], constraints)
    assert not venv.installed() & set(HEAVY), "agentrl-envs must not pull in the training stack"
    assert venv.module_file("agentrl_envs").is_relative_to(venv.root)
    assert "--tasks" in venv.script("agentrl-eval", "--help")
    assert "webshop" in venv.script("agentrl-envs", "--help")
    # A real evaluation from the wheel alone (run outside the checkout): two oracle episodes of DB on SQLite.
    venv.script("agentrl-eval", "--tasks", "db", "--agent", "oracle", "--limit", "2", "--output", tmp_path / "run",
                "--data-root", data_root, cwd=tmp_path)  # fmt: skip
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"]["db"]["n"] == 2 and results["tasks"]["db"]["success_rate"] == 1.0


def test_controller_wheel_runs_its_script(dist: Path, constraints: Path, tmp_path: Path) -> None:
    venv = Venv(tmp_path / "venv", [_wheel(dist, "agentrl-controller"), _wheel(dist, "agentrl-envs")], constraints)
    assert not venv.installed() & set(HEAVY)
    assert "serve" in venv.script("agentrl-controller", "--help")
    assert "--port" in venv.script("agentrl-controller", "serve", "--help")
    _run(venv.python, "-c", "import agentrl_controller.api.app", env=venv.env)  # FastAPI, uvicorn and co. resolve


def test_trainer_wheel_runs_its_script(dist: Path, constraints: Path, tmp_path: Path) -> None:
    wheels = [_wheel(dist, "agentrl-trainer"), _wheel(dist, "agentrl-envs")]
    venv = Venv(tmp_path / "venv", wheels, constraints, find_links=_local_torch_wheels())
    assert set(HEAVY) <= venv.installed()
    assert venv.module_file("agentrl_trainer").is_relative_to(venv.root)
    assert "config" in venv.script("agentrl-train", "--help")
    # The trainer module imports torch, transformers, TRL and accelerate: every runtime dependency is declared.
    _run(venv.python, "-c", "from agentrl_trainer import AgentRLConfig, AgentRLTrainer", env=venv.env)
