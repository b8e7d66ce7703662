"""Loading OS interaction samples from the data root, as upstream's ``OSInteraction._load_configs`` reads them.

A sample names its image (``create.local``, default ``default``), its ``init`` scripts (independent processes
run before the episode), an optional ``start`` script (typed into the episode's shell first), and its
evaluation: ``match`` (an exact string or a regex) or a ``check`` chain whose ``null`` entries stand for the
``example`` script. Scripts are inline code or files under the split's script directory.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import DataError, EnvError

__all__ = ["OSSample", "Script", "load_samples", "parse_sample"]

_DEV = ("data/os_interaction/data/dev.json", "data/os_interaction/scripts/dev/")
_CONFIG_SECTION = {"test": "os-std", "train": "os-env_train"}


@dataclass(frozen=True)
class Script:
    """A script and its language (``bash``, ``python``, ``c`` or ``c++``)."""

    language: str
    code: str

    def argv(self, *params: str) -> list[str]:
        """The command line that runs the script with ``params`` as its arguments, as upstream builds it."""
        if self.language == "bash":
            return ["bash", "-c", self.code, *(["--", *params] if params else [])]
        if self.language == "python":
            return ["python3", "-c", self.code, *params]
        if self.language in ("c", "c++"):
            compiler = "gcc" if self.language == "c" else "g++"
            build = f'printf %s "$1" > /tmp/main.cpp && {compiler} -x {self.language} -o /tmp/a.out /tmp/main.cpp'
            return ["bash", "-c", f'{build} && shift && exec /tmp/a.out "$@"', "--", self.code, *params]
        raise DataError(f"Unsupported script language {self.language!r}.")


@dataclass(frozen=True)
class OSSample:
    """One OS interaction problem."""

    description: str
    image: str
    init: tuple[Script, ...]
    start: Script | None
    match: dict[str, Any] | None
    check: tuple[Script | None, ...] | None
    example: Script | None


def load_samples(data: DataRoot, split: str, train_file: str | os.PathLike[str] | None = None) -> list[OSSample]:
    """The samples of ``test`` (data/1..7, 144), ``dev`` (26) or ``train`` (train_0317, 1000).

    Files matched by a glob are read in sorted order (upstream takes the file system's order).
    ``train_file`` (a JSON list of problems, script files relative to its directory) replaces ``train``'s
    problems, e.g. with tasks from ``agentrl-envs synth``.
    """
    if train_file is not None:
        if split != "train":
            raise EnvError(f"train_file replaces the train split's problems; it cannot be used with split={split!r}.")
        path = Path(train_file).resolve()
        if not path.is_file():
            raise DataError(f"OS train_file {path} does not exist; it is a JSON list of problems.")
        return _load_file(path, path.parent)
    if split == "dev":
        sources = [_DEV]
    elif split in _CONFIG_SECTION:
        section = data.task_config("os")[_CONFIG_SECTION[split]]
        sources = [(f["problem_file"], f["script_dir"]) for f in section["parameters"]["data_config"]["files"]]
    else:
        raise EnvError(f"Unknown split {split!r} for the OS task; choose test, dev or train.")
    samples: list[OSSample] = []
    for pattern, script_dir in sources:
        files = sorted(glob.glob(str(data.path / pattern)))
        if not files:
            raise DataError(f"No OS problem files match {pattern} under {data.path}.")
        for file in files:
            samples.extend(_load_file(Path(file), data.path / script_dir))
    return samples


def _load_file(path: Path, script_dir: Path) -> list[OSSample]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path} is not valid JSON: {e}") from e
    items = raw if isinstance(raw, list) else [raw]
    return [parse_sample(item, script_dir, f"{path}[{n}]") for n, item in enumerate(items)]


def parse_sample(item: dict[str, Any], script_dir: Path, where: str) -> OSSample:
    """One problem as stored; script files are read from ``script_dir``, ``where`` names it in errors.

    Raises:
        DataError: If the problem lacks its evaluation or a script file.
    """
    create = item.get("create")
    # Upstream tests membership (`"local" in create`), so a malformed list-valued "create" means defaults.
    image, init_raw = "default", None
    if isinstance(create, dict):
        image = create.get("local", "default")
        init_raw = create.get("init")
    init = init_raw if isinstance(init_raw, list) else ([] if init_raw is None else [init_raw])
    evaluation = item["evaluation"]
    match = check = example = None
    if "match" in evaluation:
        match = evaluation["match"]
        match = {"answer": match, "strip": True} if isinstance(match, str) else dict(match)
    elif "check" in evaluation:
        raw_check = evaluation["check"]
        check = tuple(
            _script(s, script_dir, where) for s in (raw_check if isinstance(raw_check, list) else [raw_check])
        )
        if "example" in evaluation:
            example = _script(evaluation["example"], script_dir, where)
    else:
        raise DataError(f"{where}: the evaluation has neither 'match' nor 'check'.")
    start = _script(item["start"], script_dir, where) if "start" in item else None
    scripts = tuple(s for s in (_script(i, script_dir, where) for i in init) if s is not None)
    return OSSample(item["description"], image, scripts, start, match, check, example)


def _script(obj: Any, script_dir: Path, where: str) -> Script | None:
    if obj is None:
        return None
    if isinstance(obj, str):
        return Script("bash", obj)
    language = obj.get("language", "bash")
    if "file" in obj:
        path = script_dir / obj["file"]
        if not path.is_file():
            raise DataError(f"{where}: script file {path} is missing.")
        return Script(language, path.read_text(encoding="utf-8"))
    if "code" in obj:
        return Script(language, obj["code"])
    raise DataError(f"{where}: a script object needs 'file' or 'code', got {sorted(obj)}.")
