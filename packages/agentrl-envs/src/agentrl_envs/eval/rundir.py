"""An evaluation's output directory: refusing to overwrite a run by accident, and resuming an unfinished one.

A directory holds a run when it has ``results.json`` or episodes in ``episodes.jsonl``; ``run.json`` (the
config, written before the first episode) lets a run killed before it wrote ``results.json`` be resumed. A
run that failed before its first episode (a bad flag, a dead endpoint) leaves nothing that blocks a rerun. A
new run refuses a directory holding a run unless told ``overwrite`` (start afresh) or ``resume``: keep the
episodes the earlier run finished (see
:attr:`~agentrl_envs.eval.records.EpisodeRecord.is_finished`), drop the ones the endpoint or the environment
cut short, and play only what is missing, as long as the run's config is the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from agentrl_envs.core.errors import EnvError
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import EPISODES_FILE, RESULTS_FILE
from agentrl_envs.eval.runconfig import identity

__all__ = ["RUN_FILE", "OutputMode", "prepare_output"]

RUN_FILE = "run.json"
OutputMode = Literal["new", "overwrite", "resume"]


def prepare_output(output: Path, config: dict[str, Any], mode: OutputMode) -> list[EpisodeRecord]:
    """Make ``output`` ready for a run of ``config``; returns the finished episodes a resumed run keeps.

    Raises:
        EnvError: If ``output`` holds a run and ``mode`` is ``new``, or ``resume`` meets a different config
            or no run at all.
    """
    held = [name for name in (RESULTS_FILE, EPISODES_FILE) if _has_content(output / name)]
    if held and mode == "new":
        raise EnvError(
            f"--output {output} already holds a run ({', '.join(held)}); pass --resume to finish it, --overwrite "
            "to replace it, or choose another --output."
        )
    kept: list[EpisodeRecord] = []
    if mode == "resume":
        if not held:
            raise EnvError(f"--resume: {output} holds no run to resume; drop --resume to start one.")
        _check_same_run(output, config)
        kept = _finished_episodes(output / EPISODES_FILE)
    output.mkdir(parents=True, exist_ok=True)
    _write_episodes(output / EPISODES_FILE, kept)
    (output / RUN_FILE).write_text(json.dumps({"config": config}, indent=2, default=str) + "\n", encoding="utf-8")
    if mode == "overwrite":
        (output / RESULTS_FILE).unlink(missing_ok=True)
    return kept


def _has_content(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def _check_same_run(output: Path, config: dict[str, Any]) -> None:
    earlier = _earlier_config(output)
    if earlier is None:
        raise EnvError(f"--resume: {output} has no run.json or results.json config; rerun with --overwrite.")
    was, now = identity(earlier), identity(config)
    differ = [key for key in now if _canonical(was.get(key)) != _canonical(now[key])]
    if differ:
        detail = "; ".join(f"{key}: was {was.get(key)!r}, now {now[key]!r}" for key in differ)
        raise EnvError(f"--resume: {output} holds a different run ({detail}). Use the same flags, or --overwrite.")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _earlier_config(output: Path) -> dict[str, Any] | None:
    for name in (RUN_FILE, RESULTS_FILE):
        path = output / name
        if path.is_file():
            try:
                config = json.loads(path.read_text(encoding="utf-8")).get("config")
            except (ValueError, AttributeError):
                continue
            if isinstance(config, dict):
                return config
    return None


def _finished_episodes(path: Path) -> list[EpisodeRecord]:
    """The finished episodes of ``episodes.jsonl``; a line cut off by a kill is dropped."""
    if not path.is_file():
        return []
    records: dict[tuple[str, str, int, int], EpisodeRecord] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = EpisodeRecord.from_json(json.loads(line))
        except (ValueError, TypeError):
            continue
        if record.is_finished:
            records[record.key] = record
    return list(records.values())


def _write_episodes(path: Path, records: list[EpisodeRecord]) -> None:
    with path.open("w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record.to_json(), ensure_ascii=False, default=str) + "\n")
