"""The OS generator: every family of every level, played in the bwrap sandbox; the oracle solves what is
kept, an empty or wrong answer fails, and a problem whose check cannot pass is dropped."""

from __future__ import annotations

import logging
from itertools import islice
from pathlib import Path

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.synth.pipeline import synthesize
from agentrl_envs.synth.shell import OSAdapter, OSGenerator, _Families
from agentrl_envs.synth.types import Candidate
from agentrl_envs.synth.validate import validate


def test_generation_is_deterministic_per_seed() -> None:
    def draw(seed: int) -> list[dict]:
        return [c.sample for c in islice(OSGenerator(seed=seed).candidates(2), 5)]

    assert draw(1) == draw(1)
    assert draw(1) != draw(2)


@pytest.mark.slow
def test_every_family_validates_in_the_sandbox(
    data: DataRoot, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import random

    caplog.set_level(logging.INFO, logger="agentrl_envs")  # a failure then shows how each init script ended

    from agentrl_envs.synth.shell import problem_dict

    families = _Families(random.Random(0))
    candidates = []
    for level in (1, 2, 3):
        for family in families.by_level(level):
            problem = None
            while problem is None:
                problem = family()
            candidates.append(Candidate("os", "procedural", level, problem_dict(problem, level)))
    broken = problem_dict(families.count_kind(), 1)
    broken["evaluation"]["example"] = {"code": "echo 999"}  # the check re-runs the example: the oracle "passes"...
    broken["evaluation"]["check"] = [{"language": "bash", "code": "exit 1"}]  # ...but this check never does
    verdicts = validate(OSAdapter(data), [*candidates, Candidate("os", "procedural", 1, broken)])
    assert verdicts[:-1] == [None] * len(candidates), verdicts
    assert verdicts[-1] is not None and verdicts[-1].reason == "oracle_failed"


@pytest.mark.slow
def test_a_run_writes_a_train_file_the_env_plays(data: DataRoot, tmp_path: Path) -> None:
    out = tmp_path / "os.json"
    result = synthesize(OSAdapter(data), OSGenerator(seed=5), name="procedural", n=3, difficulties=(1, 2, 3), out=out)
    assert result.counts.kept == 3 and result.counts.oracle_success == 1.0
    assert result.counts.max_overlap < 0.5


@pytest.mark.slow
def test_a_candidate_whose_setup_failed_once_is_validated_again(
    data: DataRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    from agentrl_envs.core.errors import InfraError
    from agentrl_envs.synth.shell import problem_dict
    from agentrl_envs.tasks.os.env import OSEnv

    real_start, failures = OSEnv._start, []

    def start_failing_once(self: OSEnv, index: int):  # noqa: ANN202
        if not failures:
            failures.append(index)
            raise InfraError("init script 1 was killed (exit 137) before it finished")
        return real_start(self, index)

    monkeypatch.setattr(OSEnv, "_start", start_failing_once)
    problem = None
    families = _Families(random.Random(3))
    while problem is None:
        problem = families.read_setting()
    verdicts = validate(OSAdapter(data), [Candidate("os", "procedural", 1, problem_dict(problem, 1))])
    assert failures == [0] and verdicts == [None]
