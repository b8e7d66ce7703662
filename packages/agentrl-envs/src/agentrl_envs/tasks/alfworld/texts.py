"""Upstream's ALFWorld texts and loop constants (``prompts.json`` → ``tasks.alfworld``), read once per data root."""

from __future__ import annotations

from dataclasses import dataclass

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import DataError

__all__ = ["AlfworldTexts"]


@dataclass(frozen=True, slots=True)
class AlfworldTexts:
    """The prompt and message texts of ALFWorld-FC, verbatim from upstream, and the loop's limits."""

    system_prompt: str
    first_user_template: str
    tool_result_template: str
    separator: str
    intro_split_on: str
    intro_drop_first_parts: int
    intro_join_with: str
    arrive_prefix: str
    arrive_cut_after: str
    no_tool_call: str
    invalid_tool_call: str
    invalid_action_marker: str
    min_bleu: float
    max_step: int
    repeat_window: int

    @classmethod
    def load(cls, data: DataRoot) -> AlfworldTexts:
        """Read the texts from a data root's ``prompts.json``.

        Raises:
            DataError: If an expected key is missing.
        """
        p = data.prompts("alfworld")
        try:
            return cls(
                system_prompt=p["system_prompt"],
                first_user_template=p["first_user_template"],
                tool_result_template=p["tool_result_template"],
                separator=p["available_actions_separator"],
                intro_split_on=p["initial_observation"]["split_on"],
                intro_drop_first_parts=int(p["initial_observation"]["drop_first_parts"]),
                intro_join_with=p["initial_observation"]["join_with"],
                arrive_prefix=p["arrive_observation"]["prefix"],
                arrive_cut_after=p["arrive_observation"]["cut_after"],
                no_tool_call=p["no_tool_call_message"],
                invalid_tool_call=p["invalid_tool_call_message"],
                invalid_action_marker=p["invalid_action_marker"],
                min_bleu=float(p["action_normalization"]["min_bleu"]),
                max_step=int(p["max_step"]),
                repeat_window=int(p["repeat_failure"]["window"]),
            )
        except (KeyError, TypeError) as e:
            raise DataError(f"prompts.json → tasks.alfworld lacks the key {e}; is the data root complete?") from e

    def first_user_message(self, intro: str, admissible: list[str]) -> str:
        """``Here is your task. ...``: the intro without TextWorld's welcome banner, then the actions."""
        parts = intro.split(self.intro_split_on)[self.intro_drop_first_parts :]
        observation = self.intro_join_with.join(parts)
        return self.first_user_template.format(observation=observation, available_actions=self._actions(admissible))

    def tool_result(self, feedback: str, admissible: list[str]) -> str:
        """The tool message after a step: the processed observation, then the actions."""
        return self.tool_result_template.format(
            observation=self.process_observation(feedback), available_actions=self._actions(admissible)
        )

    def process_observation(self, feedback: str) -> str:
        """Upstream's ``process_ob``: drop ``You arrive at loc N. `` from arrival messages."""
        if feedback.startswith(self.arrive_prefix):
            return feedback[feedback.find(self.arrive_cut_after) + len(self.arrive_cut_after) :]
        return feedback

    def _actions(self, admissible: list[str]) -> str:
        return self.separator.join(admissible)
