"""Upstream's DBBench texts (``prompts.json`` → ``tasks.dbbench``), read once per data root."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import DataError

__all__ = ["DBTexts"]


@dataclass(frozen=True, slots=True)
class DBTexts:
    """The prompt and message texts of DBBench, verbatim from upstream."""

    system_prompt: str
    evidence_template: str
    add_description_template: str
    question_template: str
    no_tool_call: str
    parse_error: str
    invalid_function: str
    empty_result: str
    timeout: str
    exception_template: str
    timeout_s: float
    truncation_limit: int
    truncation_suffix: str

    @classmethod
    def load(cls, data: DataRoot, task_key: str = "dbbench") -> DBTexts:
        """Read the texts from a data root's ``prompts.json``.

        Raises:
            DataError: If an expected key is missing.
        """
        prompts = data.prompts(task_key)
        try:
            parts = prompts["first_user_parts"]
            return cls(
                system_prompt=prompts["system_prompt"],
                evidence_template=parts["evidence_template"],
                add_description_template=parts["add_description_template"],
                question_template=parts["question_template"],
                no_tool_call=prompts["no_tool_call_message"],
                parse_error=prompts["tool_call_parse_error_message"],
                invalid_function=prompts["invalid_function_message"],
                empty_result=prompts["empty_result_message"],
                timeout=prompts["sql_timeout_message"],
                exception_template=prompts["sql_exception_template"],
                timeout_s=float(prompts["sql_timeout_seconds"]),
                truncation_limit=int(prompts["truncation"]["limit"]),
                truncation_suffix=prompts["truncation"]["suffix"],
            )
        except KeyError as e:
            raise DataError(f"prompts.json → tasks.{task_key} lacks the key {e}; is the data root complete?") from e

    def first_user_message(self, sample: dict[str, Any]) -> str:
        """The question as upstream words it: evidence and table description only when present."""
        text = ""
        if sample.get("evidence"):
            text += self.evidence_template.format(evidence=sample["evidence"])
        if sample.get("add_description"):
            text += self.add_description_template.format(add_description=sample["add_description"])
        return text + self.question_template.format(description=sample["description"])

    def truncate(self, result: str) -> str:
        """Cut a database result to the length upstream shows the agent."""
        if len(result) > self.truncation_limit:
            return result[: self.truncation_limit] + self.truncation_suffix
        return result
