"""``prompts.json`` derived from upstream's code holds the reference's texts for every key the envs read, says
where each came from, and refuses upstream code of another shape instead of guessing."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentrl_envs.data import PINNED_COMMIT
from agentrl_envs.data.prompts import DerivationError, derive_prompts
from agentrl_envs.data.prompts.source import template
from agentrl_envs.data.sources import UpstreamFiles

NOTES = {"rule", "line_separator"}
"""Keys of the reference's dict values that are prose for people (the envs never read them)."""


def _tasks(root: Path) -> dict[str, Any]:
    return json.loads((root / "prompts.json").read_text(encoding="utf-8"))["tasks"]


def _without_notes(value: Any) -> Any:
    return {k: v for k, v in value.items() if k not in NOTES} if isinstance(value, dict) else value


def test_every_derived_text_is_the_reference_text(built_root: Path, reference_root: Path) -> None:
    derived, reference = _tasks(built_root), _tasks(reference_root)
    assert sorted(derived) == sorted(reference)
    compared = 0
    for task, texts in derived.items():
        for key, value in texts.items():
            if key != "where":
                assert value == _without_notes(reference[task][key]), f"{task}.{key}"
                compared += 1
    assert compared == 53


def test_each_text_says_where_upstream_has_it(built_root: Path) -> None:
    texts = _tasks(built_root)["os"]
    assert texts["where"]["system_prompt"] == (
        "src/server/tasks/os_interaction/task.py:516 (OSInteraction._inject_initial_messages)"
    )
    assert set(texts["where"]) == set(texts) - {"where"}


def test_upstream_code_of_another_shape_is_refused(upstream_archive: Path) -> None:
    from agentrl_envs.data.pinned import load_listing
    from agentrl_envs.data.sources import read_archive

    files = read_archive(upstream_archive, load_listing(), origin="mirror")
    path = "src/server/tasks/webshop/task.py"
    changed = UpstreamFiles(PINNED_COMMIT, "mirror", dict(files.files))
    changed.files[path] = files.files[path].replace(b"prompt_with_max_turn", b"PROMPT")
    message = f"prompts.json -> webshop.system_prompt: cannot read it from {path}"
    with pytest.raises(DerivationError, match=re.escape(message)):
        derive_prompts(changed, repository="THUDM/AgentBench")


def test_a_task_whose_sources_are_absent_is_left_out_and_said_so(upstream_archive: Path) -> None:
    from agentrl_envs.data.pinned import load_listing
    from agentrl_envs.data.sources import read_archive

    files = read_archive(upstream_archive, load_listing(), origin="mirror")
    del files.files["src/server/tasks/os_interaction/task.py"]
    prompts = derive_prompts(files, repository="THUDM/AgentBench")
    assert "os" not in prompts["tasks"]
    assert prompts["missing_sources"] == {"os": ["src/server/tasks/os_interaction/task.py"]}


@pytest.mark.parametrize(
    ("code", "fields", "expected"),
    [
        ("'plain {braces}'", {}, "plain {{braces}}"),
        ("f'Q: {question}\\n'", {}, "Q: {question}\n"),
        ("'Evidence: ' + entry['evidence'] + '\\n'", {}, "Evidence: {evidence}\n"),
        ("f'Error: {e}'", {"e": "error"}, "Error: {error}"),
        ("f'[{\", \".join(names)}]'", {"', '.join(names)": "names"}, "[{names}]"),  # fields key by ast.unparse
    ],
)
def test_templates_keep_constants_and_name_fields(code: str, fields: dict[str, str], expected: str) -> None:
    assert template(ast.parse(code, mode="eval").body, fields) == expected


def test_an_unnamed_expression_is_refused() -> None:
    with pytest.raises(DerivationError, match=re.escape("no field name for `len(x)`")):
        template(ast.parse("'n=' + len(x)", mode="eval").body)


def test_a_missing_function_names_the_task_and_its_sources(upstream_archive: Path) -> None:
    from agentrl_envs.data.pinned import load_listing
    from agentrl_envs.data.sources import read_archive

    files = read_archive(upstream_archive, load_listing(), origin="mirror")
    path = "src/server/tasks/os_interaction/task.py"
    files.files[path] = files.files[path].replace(b"def _execute_bash_command", b"def _run_bash")
    message = f"prompts.json -> os: cannot derive it from {path}: {path} has no OSInteraction._execute_bash_command"
    with pytest.raises(DerivationError, match=re.escape(message)):
        derive_prompts(files, repository="THUDM/AgentBench")
