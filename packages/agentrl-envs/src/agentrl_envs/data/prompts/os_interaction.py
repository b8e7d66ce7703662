"""The OS interaction task's texts, read from ``src/server/tasks/os_interaction/task.py``."""

from __future__ import annotations

import ast

from agentrl_envs.data.prompts.source import (
    DerivationError,
    PySource,
    assigned,
    calls,
    contents,
    handler,
    length_test,
    literal,
    template,
    text,
)
from agentrl_envs.data.prompts.texts import TaskTexts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["derive"]

TASK = "src/server/tasks/os_interaction/task.py"


def derive(files: UpstreamFiles) -> TaskTexts:
    """The ``os`` entry of ``prompts.json``."""
    out = TaskTexts("os")
    task = PySource(TASK, files.text(TASK))
    scope = "OSInteraction._inject_initial_messages"
    inject = task.function(scope)
    out.put("system_prompt", task, scope, lambda: (text(n := assigned(inject, "system_message")), n))
    out.put(
        "first_user_template",
        task,
        scope,
        lambda: (template(n := contents(inject, "User")[0], expect={"description"}), n),
    )
    scope = "OSInteraction._execute_bash_command"
    execute = task.function(scope)
    out.put("tool_result_template", task, scope, lambda: _result(execute, "body"))
    out.put("empty_output_message", task, scope, lambda: _result(execute, "orelse"))
    undecodable = handler(execute, "Exception")
    out.put("decode_error_output", task, scope, lambda: (text(n := assigned(undecodable, "result_text")), n))
    out.put("truncation", task, scope, lambda: _truncation(execute))
    scope = "OSInteraction._handle_agent_action"
    act = task.function(scope)
    out.put("no_tool_call_message", task, scope, lambda: (text(n := contents(act, "User")[0]), n))
    out.put("invalid_function_message", task, scope, lambda: _invalid_function(act))
    scope = "Container.execute"
    out.put("output_cleanup_regexes", task, scope, lambda: _cleanup(task.function(scope)))
    return out


def _result(execute: ast.AST, part: str) -> tuple[str, ast.AST]:
    """The tool message: ``f'...{result_text}' if result_text else '...'`` (``part`` picks the branch)."""
    for node in contents(execute, "Tool"):
        if isinstance(node, ast.IfExp):
            chosen = getattr(node, part)
            if part == "body":
                return template(chosen, {"result_text": "output"}, expect={"output"}), chosen
            return text(chosen), chosen
    raise DerivationError("no `... if result_text else ...` tool message")


def _truncation(execute: ast.AST) -> tuple[dict[str, object], ast.AST]:
    """``if len(result_text) > LIMIT: result_text = result_text[:KEEP] + SUFFIX``."""
    test = length_test(execute, "result_text")
    cut = assigned(test, "result_text")
    match cut:
        case ast.BinOp(
            left=ast.Subscript(slice=ast.Slice(lower=None, upper=ast.expr() as keep)), op=ast.Add(), right=suffix
        ):
            assert isinstance(test.test, ast.Compare)  # length_test matched a comparison
            limit = test.test.comparators[0]
            return {"limit": literal(limit), "keep": literal(keep), "suffix": text(suffix)}, test
    raise DerivationError(f"`result_text = {ast.unparse(cut)[:60]}` is not result_text[:N] + '<suffix>'")


def _invalid_function(act: ast.AST) -> tuple[str, ast.AST]:
    """The tool message for a function other than the three (every constant tool message says it)."""
    texts = {text(node): node for node in contents(act, "Tool") if isinstance(node, ast.Constant)}
    if len(texts) != 1:
        raise DerivationError(f"{len(texts)} different constant tool messages, expected 1")
    [(value, node)] = texts.items()
    return value, node


def _cleanup(execute: ast.AST) -> tuple[list[str], ast.AST]:
    """The ``re.sub(b'<pattern>', b'', output)`` calls, in order; bytes patterns kept as Latin-1 text."""
    subs = calls(execute, "re.sub")
    if not subs:
        raise DerivationError("no re.sub(...) calls")
    patterns = []
    for call in subs:
        pattern = literal(call.args[0])
        if not isinstance(pattern, bytes) or literal(call.args[1]) != b"":
            raise DerivationError(f"`{ast.unparse(call)[:60]}` does not delete a bytes pattern")
        patterns.append(pattern.decode("latin-1"))
    return patterns, subs[0]
