"""WebShop's texts, read from ``src/server/tasks/webshop/task.py``."""

from __future__ import annotations

import ast

from agentrl_envs.data.prompts.source import (
    DerivationError,
    PySource,
    assigned,
    branch,
    contents,
    handler,
    template,
    text,
)
from agentrl_envs.data.prompts.texts import TaskTexts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["derive"]

TASK = "src/server/tasks/webshop/task.py"
_PAGE = {"observation", "available_actions"}


def derive(files: UpstreamFiles) -> TaskTexts:
    """The ``webshop`` entry of ``prompts.json``."""
    out = TaskTexts("webshop")
    task = PySource(TASK, files.text(TASK))
    out.put(
        "system_prompt", task, "prompt_with_max_turn", lambda: (text(n := task.constant("prompt_with_max_turn")), n)
    )
    scope = "WebShop.sync_start_sample"
    run = task.function(scope)
    first_round = branch(run, "j == 0")
    out.put("first_user_template", task, scope, lambda: _page(contents(first_round.body[0], "User")[0], _PAGE))
    no_action = branch(run, "action is None")
    out.put("user_observation_template", task, scope, lambda: _page(contents(no_action.body[0], "User")[0], _PAGE))
    out.put("tool_result_template", task, scope, lambda: _page(contents(no_action, "Tool")[0], {*_PAGE, "action"}))
    no_calls = branch(run, "not tool_calls")
    out.put("no_tool_call_observation", task, scope, lambda: (text(n := assigned(no_calls, "observation")), n))
    bad_call = handler(run, None)
    out.put("invalid_tool_call_message", task, scope, lambda: (text(n := contents(bad_call, "User")[0]), n))
    out.put("task_limit_message", task, scope, lambda: _task_limit(run))
    out.put("search_action_template", task, scope, lambda: _action(run, "search_action", "keywords"))
    out.put("click_action_template", task, scope, lambda: _action(run, "click_action", "value"))
    return out


def _page(node: ast.expr, fields: set[str]) -> tuple[str, ast.AST]:
    return template(node, expect=fields), node


def _task_limit(run: ast.AST) -> tuple[str, ast.AST]:
    """The tool message of the round loop's ``else:`` (the rounds ran out)."""
    for loop in ast.walk(run):
        if isinstance(loop, ast.For) and loop.orelse:
            found = contents(ast.Module(body=loop.orelse, type_ignores=[]), "Tool")
            if found:
                return text(found[0]), found[0]
    raise DerivationError("no round loop whose else: sends a tool message")


def _action(run: ast.AST, tool: str, field: str) -> tuple[str, ast.AST]:
    """``action = f"search[{arguments[0]}]"`` under ``if func_name == '<tool>':``, its argument as ``{field}``."""
    chosen = branch(run, f"func_name == '{tool}'")
    node = assigned(chosen, "action")
    return template(node, {"arguments[0]": field}, expect={field}), node
