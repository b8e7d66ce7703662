"""Chat-template plumbing for the rollout loop: prompts, environment-message tokens and tool-call parsing.

The model's own tokens are never re-tokenized: an episode's token stream is the rendered prompt, then for
each turn the engine's exact sampled ids, then the ids of the environment's answer rendered on its own.
The environment part follows TRL's ``GRPOTrainer._get_tool_suffix_ids``: render a dummy conversation with
and without the new messages and keep the difference after the last end-of-turn token, so any chat
template with a generation prompt works. Tool calls are parsed with TRL's ``parse_response`` (the
tokenizer's response template) and turned back into OpenAI messages with JSON-string arguments.

The same pieces render a recorded assistant message as the tokens the policy would have had to sample
(:func:`assistant_message_ids`), so supervised warm-up data (:mod:`agentrl_trainer.sft.render`) and rollouts
share one token layout.
"""

from __future__ import annotations

import json
from typing import Any

from trl.chat_template_utils import parse_response

__all__ = ["assistant_message_ids", "env_message_ids", "parse_assistant", "render_prompt"]

_DUMMY = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "dummy"}]
_DUMMY_CALL = {"type": "function", "function": {"name": "dummy", "arguments": {}}}


def render_prompt(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
    """Token ids of the first messages with the task's tools and the generation prompt."""
    return list(
        tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, tokenize=True, return_dict=False
        )
    )


def env_message_ids(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    """Token ids that follow an assistant turn's end-of-turn token: the new messages and the next generation prompt.

    Raises:
        ValueError: If the chat template does not render the dummy turn as a prefix of the longer conversation
            (a template that rewrites history; such templates cannot be used for multi-turn RL).
    """
    tool_names = [m.get("name", "dummy") for m in messages if m.get("role") == "tool"]
    assistant: dict[str, Any] = dict(_DUMMY[1])
    if tool_names:
        # Some templates (GPT-OSS) name the tool in the response header, so give the call the real name.
        assistant["tool_calls"] = [{**_DUMMY_CALL, "function": {"name": tool_names[0], "arguments": {}}}]
    dummy = [_DUMMY[0], assistant]
    prefix = tokenizer.apply_chat_template(dummy, tokenize=True, return_dict=False)
    full = tokenizer.apply_chat_template(
        dummy + _plain(messages), add_generation_prompt=True, tokenize=True, return_dict=False
    )
    eos = tokenizer.eos_token_id
    ends = [i for i, t in enumerate(prefix) if t == eos]
    if ends:
        prefix = prefix[: ends[-1] + 1]
    if list(full[: len(prefix)]) != list(prefix):
        raise ValueError(
            "The chat template does not keep earlier turns unchanged when messages are appended; "
            "multi-turn rollouts need a prefix-preserving template."
        )
    return list(full[len(prefix) :])


def assistant_message_ids(tokenizer: Any, message: dict[str, Any]) -> list[int]:
    """Token ids the policy samples to write ``message``: after the generation prompt, through the end-of-turn token.

    The message is rendered after a dummy user turn and the generation prompt's tokens are cut off the front,
    the mirror of :func:`env_message_ids` (which starts right after this end-of-turn token).

    Raises:
        ValueError: If the template does not render the generation prompt as a prefix of the assistant turn, or
            a tool call's arguments are not a JSON object.
    """
    prefix = tokenizer.apply_chat_template(_DUMMY[:1], add_generation_prompt=True, tokenize=True, return_dict=False)
    full = tokenizer.apply_chat_template([_DUMMY[0], template_assistant(message)], tokenize=True, return_dict=False)
    if list(full[: len(prefix)]) != list(prefix):
        raise ValueError(
            "The chat template does not start an assistant turn with its generation prompt; the tokens a policy "
            "samples cannot be told apart from the prompt's."
        )
    action = list(full[len(prefix) :])
    eos = tokenizer.eos_token_id
    ends = [i for i, t in enumerate(action) if t == eos]
    if not ends:
        raise ValueError(f"The chat template rendered the assistant turn without the end-of-turn token {eos}.")
    return action[: ends[-1] + 1]


def template_assistant(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI assistant message as chat templates take it: content a string, tool-call arguments a mapping.

    Raises:
        ValueError: If a tool call's arguments are not a JSON object (a model's malformed call cannot be rendered
            as the template would write a call).
    """
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError as e:
                raise ValueError(f"tool call {function.get('name')!r} has arguments that are not JSON: {e}") from e
        if not isinstance(arguments, dict):
            raise ValueError(f"tool call {function.get('name')!r} has arguments that are not an object: {arguments!r}")
        calls.append({"type": "function", "function": {"name": str(function.get("name", "")), "arguments": arguments}})
    rendered: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if calls:
        rendered["tool_calls"] = calls
    return rendered


def parse_assistant(
    tokenizer: Any, token_ids: list[int], prefix: list[int], tools: list[dict[str, Any]] | None, turn: int
) -> dict[str, Any]:
    """Parse sampled tokens into an OpenAI assistant message (tool-call arguments as JSON strings).

    Malformed output never raises: what cannot be parsed stays text, which the environment answers.
    """
    parsed = parse_response(tokenizer, list(token_ids), prefix=list(prefix), tools=None if tools is None else [*tools])
    message: dict[str, Any] = {"role": "assistant", "content": parsed.get("content") or None}
    calls = []
    for number, call in enumerate(parsed.get("tool_calls") or []):
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(
            {
                "id": f"call_{turn}_{number}",
                "type": "function",
                "function": {"name": str(function.get("name", "")), "arguments": arguments},
            }
        )
    if calls:
        message["tool_calls"] = calls
    return message


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the chat template expects them (content always a string)."""
    return [{**m, "content": m.get("content") or ""} for m in messages]
