"""The knowledge-graph task's texts, read from ``src/server/tasks/knowledgegraph/{task,const}.py``."""

from __future__ import annotations

import ast

from agentrl_envs.data.prompts.source import (
    DerivationError,
    PySource,
    branch,
    calls,
    contents,
    handler,
    literal,
    template,
    text,
)
from agentrl_envs.data.prompts.texts import TaskTexts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["derive"]

TASK = "src/server/tasks/knowledgegraph/task.py"
CONST = "src/server/tasks/knowledgegraph/const.py"
_ENTITY_NAMES = "[entity for entity in entities]"
"""What the first user message joins: the entity names of the sample."""


def derive(files: UpstreamFiles) -> TaskTexts:
    """The ``kg`` entry of ``prompts.json``."""
    out = TaskTexts("kg")
    task, const = PySource(TASK, files.text(TASK)), PySource(CONST, files.text(CONST))
    out.put("system_prompt_template", const, "INSTRUCTIONS", lambda: (text(n := const.constant("INSTRUCTIONS")), n))
    out.put("one_shot_messages", const, "ONE_SHOT", lambda: (literal(n := const.constant("ONE_SHOT")), n))
    out.put("tools", const, "TOOLS", lambda: (literal(n := const.constant("TOOLS")), n))
    out.put(
        "tools_param_order", const, "TOOLS_PARAM_ORDER", lambda: (literal(n := const.constant("TOOLS_PARAM_ORDER")), n)
    )
    scope = "KnowledgeGraph.sync_start_sample"
    run = task.function(scope)
    out.put("entities_separator", task, scope, lambda: _entities_join(run))
    out.put("first_user_template", task, scope, lambda: _first_user(run))
    out.put("tool_result_template", task, scope, lambda: _tool_result(run))
    no_calls = branch(run, "not tool_calls")
    out.put("no_tool_call_message", task, scope, lambda: (text(n := contents(no_calls, "User")[-1]), n))
    unknown = handler(run, "AttributeError")
    out.put(
        "invalid_function_name_template",
        task,
        scope,
        lambda: (template(n := contents(unknown, "Tool")[0], expect={"function_name"}), n),
    )
    mismatch = handler(run, "KeyError")
    out.put(
        "argument_mismatch_template",
        task,
        scope,
        lambda: (template(n := contents(mismatch, "Tool")[0], expect={"function_name"}), n),
    )
    failed = _tool_error_handler(run)
    out.put(
        "tool_error_template",
        task,
        scope,
        lambda: (template(n := contents(failed, "Tool")[0], {"e": "error"}, expect={"error"}), n),
    )
    out.put("final_answer", task, scope, lambda: _final_answer(no_calls))
    return out


def _user_content(run: ast.AST) -> ast.expr:
    """The first user message: the question and the entity names (an f-string)."""
    for node in contents(run, "User"):
        if isinstance(node, ast.JoinedStr):
            return node
    raise DerivationError("no f-string user message")


def _entities_join(run: ast.AST) -> tuple[str, ast.AST]:
    for call in calls(_user_content(run), "join"):
        if ast.unparse(call.args[0]) == _ENTITY_NAMES:
            assert isinstance(call.func, ast.Attribute)  # calls() matched a method name
            return text(call.func.value), call
    raise DerivationError(f"no '<sep>'.join({_ENTITY_NAMES})")


def _first_user(run: ast.AST) -> tuple[str, ast.AST]:
    node = _user_content(run)
    joined = next(c for c in calls(node, "join") if ast.unparse(c.args[0]) == _ENTITY_NAMES)
    return template(node, {ast.unparse(joined): "entities"}, expect={"question", "entities"}), node


def _tool_result(run: ast.AST) -> tuple[str, ast.AST]:
    """The tool message after a call that ran: the API's observation as it is."""
    for node in contents(run, "Tool"):
        if isinstance(node, ast.Name):
            return template(node, {node.id: "observation"}, expect={"observation"}), node
    raise DerivationError("no tool message that passes the API's message on")


def _tool_error_handler(run: ast.AST) -> ast.ExceptHandler:
    """The ``except Exception:`` that reports a failed tool call to the model (the one with a tool message)."""
    nth = 0
    while not contents(node := handler(run, "Exception", nth), "Tool"):  # handler() raises when none is left
        nth += 1
    return node


def _final_answer(no_calls: ast.If) -> tuple[dict[str, str], ast.AST]:
    """How a reply without tool calls is read: cut at a marker, unescape, find the answer variable."""
    cut = calls(no_calls, "split")[0]
    unescape = calls(no_calls, "replace")[0]
    find = calls(no_calls, "re.findall")[0]
    value = {
        "regex": text(find.args[0]),
        "cut_marker": text(cut.args[0]),
        "unescape_from": text(unescape.args[0]),
        "unescape_to": text(unescape.args[1]),
    }
    return value, find
