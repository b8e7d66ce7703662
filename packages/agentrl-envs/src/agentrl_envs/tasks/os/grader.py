"""Grading an OS episode's committed answer, as upstream's ``_evaluate_answer`` does.

``match``: the answer (stripped when the sample says so) equals ``match.answer``, or ``match.regex`` is found
in it. ``check``: each script of the chain runs as an independent process in the episode's sandbox with
``argv = [answer, stdout of every earlier script...]`` (a ``null`` script is the sample's ``example``); the
answer is correct iff every script exits 0.
"""

from __future__ import annotations

import re

from agentrl_envs.core.errors import DataError
from agentrl_envs.sandboxes.base import Sandbox
from agentrl_envs.tasks.os.data import OSSample

__all__ = ["grade"]


def grade(answer: str | None, sample: OSSample, sandbox: Sandbox) -> bool:
    """Whether ``answer`` solves ``sample`` (check scripts run in ``sandbox``)."""
    if sample.match is not None:
        return _match(answer, sample.match)
    if sample.check is not None:
        return _check(answer, sample, sandbox)
    raise DataError("An OS sample without 'match' or 'check' cannot be graded.")


def _match(answer: str | None, match: dict[str, object]) -> bool:
    if answer is None:
        return False
    if match.get("strip"):
        answer = answer.strip()
    if "answer" in match:
        return answer == match["answer"]
    if "regex" in match:
        return re.search(str(match["regex"]), answer) is not None
    return False


def _check(answer: str | None, sample: OSSample, sandbox: Sandbox) -> bool:
    assert sample.check is not None
    params = [str(answer)]
    for script in sample.check:
        script = script if script is not None else sample.example
        if script is None:
            raise DataError("A check chain refers to the example script, but the sample has none.")
        result = sandbox.exec(script.argv(*params))
        if result.exit_code != 0:
            return False
        params.append(result.stdout.decode("utf-8", errors="replace"))
    return True
