"""ALFWorld-FC's texts, read from ``src/server/tasks/alfworld/{task,utils}.py``."""

from __future__ import annotations

import ast

from agentrl_envs.data.prompts.source import (
    DerivationError,
    PySource,
    assigned,
    branch,
    calls,
    contents,
    default,
    handler,
    literal,
    template,
    text,
)
from agentrl_envs.data.prompts.texts import TaskTexts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["derive"]

TASK = "src/server/tasks/alfworld/task.py"
UTILS = "src/server/tasks/alfworld/utils.py"
_AVAILABLE = "self.get_available_actions(info.get('admissible_commands', [[]])[0])"
"""How the loop appends the action list to an observation (a field of the first-user and tool templates)."""


def derive(files: UpstreamFiles) -> TaskTexts:
    """The ``alfworld`` entry of ``prompts.json``."""
    out = TaskTexts("alfworld")
    task, utils = PySource(TASK, files.text(TASK)), PySource(UTILS, files.text(UTILS))
    available_actions = _instructions(out, task)
    _loop(out, task, available_actions)
    _utils(out, utils)
    return out


def _returned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr:
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1:
        raise DerivationError(f"{function.name} has {len(returns)} return values, expected 1")
    assert returns[0].value is not None
    return returns[0].value


def _instructions(out: TaskTexts, task: PySource) -> str:
    scope = "ALFWorld.get_task_instruction"
    out.put("system_prompt", task, scope, lambda: (text(node := _returned(task.function(scope))), node))
    scope = "ALFWorld.get_available_actions"
    available = task.function(scope)
    fields = {"actions": "available_actions"}
    out.put(
        "available_actions_template",
        task,
        scope,
        lambda: (template(node := _returned(available), fields, expect={"available_actions"}), node),
    )

    def separator() -> tuple[str, ast.AST]:
        join = _one_call(available, "join")
        assert isinstance(join.func, ast.Attribute)  # calls() matched a method name
        return text(join.func.value), join

    out.put("available_actions_separator", task, scope, separator)
    return out.values["available_actions_template"]


def _loop(out: TaskTexts, task: PySource, available_actions: str) -> None:
    scope = "ALFWorld.alfworld_run"
    run = task.function(scope)
    inline = {_AVAILABLE: available_actions}
    names = {"observation", "available_actions"}

    def first_user() -> tuple[str, ast.AST]:
        node = assigned(run, "init_prompt")
        return template(node, {"ob": "observation"}, inline=inline, expect=names), node

    def tool_result() -> tuple[str, ast.AST]:
        node = contents(run, "Tool")[0]
        return template(node, inline=inline, expect=names), node

    out.put("first_user_template", task, scope, first_user)
    out.put("tool_result_template", task, scope, tool_result)
    out.put("initial_observation", task, scope, lambda: _banner_cut(assigned(run, "ob")))
    no_calls = branch(run, "not tool_calls")
    out.put("no_tool_call_message", task, scope, lambda: (text(n := contents(no_calls, "User")[0]), n))
    bad_call = handler(run, None)
    out.put("invalid_tool_call_message", task, scope, lambda: (text(n := contents(bad_call, "User")[0]), n))
    out.put("invalid_action_marker", task, scope, lambda: _membership_test(run, "observation"))
    out.put("repeat_failure", task, scope, lambda: _repeat_window(run))
    scope = "ALFWorld.__init__"
    out.put("max_step", task, scope, lambda: (literal(n := default(task.function(scope), "max_step")), n))


def _banner_cut(node: ast.expr) -> tuple[dict[str, object], ast.AST]:
    r"""``'\n'.join(ob[0].split('\n\n')[1:])``: split on a separator, drop the first parts, join the rest."""
    match node:
        case ast.Call(
            func=ast.Attribute(value=join_with, attr="join"),
            args=[
                ast.Subscript(
                    value=ast.Call(func=ast.Attribute(attr="split"), args=[split_on]),
                    slice=ast.Slice(lower=ast.expr() as drop, upper=None),
                )
            ],
        ):
            value = {"split_on": literal(split_on), "drop_first_parts": literal(drop), "join_with": literal(join_with)}
            return value, node
    raise DerivationError(f"`{ast.unparse(node)[:80]}` is not '<sep>'.join(ob.split('<sep>')[n:])")


def _membership_test(run: ast.AST, name: str) -> tuple[str, ast.AST]:
    """The marker of ``if "<marker>" in observation``."""
    for node in ast.walk(run):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In):
            if ast.unparse(node.comparators[0]) == name and isinstance(node.left, ast.Constant):
                return text(node.left), node
    raise DerivationError(f"no `if '...' in {name}` test")


def _repeat_window(run: ast.AST) -> tuple[dict[str, int], ast.AST]:
    """``pre_logs = log_info["log"][-N:]``: the last N outputs must differ."""
    node = assigned(run, "pre_logs")
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is not None:
        return {"window": -int(literal(node.slice.lower))}, node
    raise DerivationError(f"`pre_logs = {ast.unparse(node)[:60]}` is not a slice of the last N")


def _utils(out: TaskTexts, utils: PySource) -> None:
    scope = "process_ob"
    process_ob = utils.function(scope)

    def arrive() -> tuple[dict[str, str], ast.AST]:
        test = _one_call(process_ob, "startswith")
        cut = _one_call(process_ob, "find")
        return {"prefix": text(test.args[0]), "cut_after": text(cut.args[0])}, test

    out.put("arrive_observation", utils, scope, arrive)
    scope = "process_action"
    process_action = utils.function(scope)

    def min_bleu() -> tuple[dict[str, float], ast.AST]:
        limit = default(process_action, "limit")
        return {"min_bleu": float(literal(limit))}, limit

    out.put("action_normalization", utils, scope, min_bleu)


def _one_call(function: ast.AST, method: str) -> ast.Call:
    found = calls(function, method)
    if len(found) != 1:
        raise DerivationError(f"{len(found)} calls of .{method}(...), expected 1")
    return found[0]
