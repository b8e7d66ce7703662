"""DBBench's texts, read from ``src/server/tasks/dbbench/{task,interaction}.py``."""

from __future__ import annotations

import ast

from agentrl_envs.data.prompts.source import (
    DerivationError,
    PySource,
    assigned,
    branch,
    calls,
    contents,
    final_else,
    handler,
    length_test,
    literal,
    template,
    text,
)
from agentrl_envs.data.prompts.texts import TaskTexts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["derive"]

TASK = "src/server/tasks/dbbench/task.py"
INTERACTION = "src/server/tasks/dbbench/interaction.py"


def derive(files: UpstreamFiles) -> TaskTexts:
    """The ``dbbench`` entry of ``prompts.json``."""
    out = TaskTexts("dbbench")
    task, interaction = PySource(TASK, files.text(TASK)), PySource(INTERACTION, files.text(INTERACTION))
    out.put("system_prompt", task, "SYSTEM_PROMPT", lambda: (text(n := task.constant("SYSTEM_PROMPT")), n))
    scope = "DBBenchTask.start_sample"
    start = task.function(scope)
    out.put("first_user_parts", task, scope, lambda: _first_user_parts(start))
    no_calls = branch(start, "not tool_calls")
    out.put("no_tool_call_message", task, scope, lambda: (text(n := contents(no_calls, "User")[0]), n))
    bad_json = handler(start, None)
    out.put("tool_call_parse_error_message", task, scope, lambda: (text(n := contents(bad_json, "Tool")[0]), n))
    unknown = final_else(branch(start, "function_name == 'execute_sql'"))
    out.put("invalid_function_message", task, scope, lambda: (text(n := contents(unknown, "Tool")[0]), n))
    empty = branch(start, "not response")
    out.put("empty_result_message", task, scope, lambda: (text(n := assigned(empty, "response")), n))
    timeout = handler(start, "asyncio.TimeoutError")
    out.put("sql_timeout_message", task, scope, lambda: (text(n := assigned(timeout, "response")), n))
    failed = handler(start, "Exception")
    error = {"e": "error"}
    out.put(
        "sql_exception_template",
        task,
        scope,
        lambda: (template(n := assigned(failed, "response"), error, expect={"error"}), n),
    )
    out.put(
        "sql_timeout_seconds", task, scope, lambda: (literal((n := calls(start, "asyncio.wait_for")[0]).args[1]), n)
    )
    scope = "MySQLDatabase.execute"
    out.put("truncation", interaction, scope, lambda: _truncation(interaction.function(scope)))
    return out


def _first_user_parts(start: ast.AST) -> tuple[dict[str, str], ast.AST]:
    """The three ``user_prompt +=`` parts: evidence and table description (each only when present), question."""
    keys = ("evidence_template", "add_description_template", "question_template")
    parts = [assigned(start, "user_prompt", nth) for nth in range(1, 4)]  # the first is `user_prompt = ""`
    names = ({"evidence"}, {"add_description"}, {"description"})
    value = {key: template(part, expect=name) for key, part, name in zip(keys, parts, names, strict=True)}
    return value, parts[0]


def _truncation(execute: ast.AST) -> tuple[dict[str, object], ast.AST]:
    """``if len(result_str) > LIMIT: result_str = result_str[:KEEP] + SUFFIX``."""
    test = length_test(execute, "result_str")
    cut = assigned(test, "result_str")
    match cut:
        case ast.BinOp(
            left=ast.Subscript(slice=ast.Slice(lower=None, upper=ast.expr() as keep)), op=ast.Add(), right=suffix
        ):
            assert isinstance(test.test, ast.Compare)  # length_test matched a comparison
            limit = test.test.comparators[0]
            return {"limit": literal(limit), "keep": literal(keep), "suffix": text(suffix)}, test
    raise DerivationError(f"`result_str = {ast.unparse(cut)[:60]}` is not result_str[:N] + '<suffix>'")
