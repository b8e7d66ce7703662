"""A learnable CPU suite for the learning bench: two one-turn copy tasks with different difficulty and reward scale.

``say`` (reward 0 or 1): the answer must be the task's word (``red``). ``twice`` (reward 0 or 5): the answer
must be the task's word twice (``blue blue``). The prompts name neither word. A tiny model warm-started by SFT
on *random* words (the answer format, not which word) answers right about one time in four (``say``) or
sixteen (``twice``); RL has to find and keep the rewarded answer of each task.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from agentrl_envs.core import AssistantMessage, SampleStatus, ToolEnv, Turn
from agentrl_envs.core.messages import system_message, user_message

WORDS = ["red", "blue", "green", "gold"]


class SayEnv(ToolEnv):
    """Answer with the task's word (reward 1)."""

    task = "say"
    default_max_rounds = 1
    scale = 1.0
    repeat = 1
    word = "red"
    template = "Say a color ({n})."

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def num_samples(self) -> int:
        return len(WORDS)

    @classmethod
    def target(cls) -> str:
        """The rewarded answer."""
        return " ".join([cls.word] * cls.repeat)

    def _start(self, index: int) -> list[dict[str, Any]]:
        return [system_message("Answer."), user_message(self.template.format(n=index))]

    def _respond(self, message: AssistantMessage) -> Turn:
        won = (message.content or "").strip() == self.target()
        return Turn([], SampleStatus.COMPLETED, reward=self.scale * won)


class TwiceEnv(SayEnv):
    """Answer with the task's word twice (reward 5)."""

    task = "twice"
    scale = 5.0
    repeat = 2
    word = "blue"
    template = "Say a color twice ({n})."


ENVS = {"say": SayEnv, "twice": TwiceEnv}
CORPUS = ["Answer.", *[t.template.format(n=n) for t in ENVS.values() for n in range(len(WORDS))], *WORDS, "red blue"]


def sft_warm_start(model: Any, tokenizer: Any, *, steps: int, seed: int, lr: float = 3e-3) -> None:
    """Teach the answer format with random words: the model learns *how* to answer, not *which* word."""
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        batch = []
        for _ in range(16):
            env = rng.choice(list(ENVS.values()))
            word = rng.choice(WORDS)
            prompt = [system_message("Answer."), user_message(env.template.format(n=rng.randrange(len(WORDS))))]
            prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, return_dict=False)
            answer = tokenizer.encode(" ".join([word] * env.repeat)) + [tokenizer.eos_token_id]
            batch.append((list(prompt_ids), answer))
        width = max(len(p) + len(a) for p, a in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        for row, (p, a) in enumerate(batch):
            ids[row, : len(p) + len(a)] = torch.tensor(p + a)
            labels[row, len(p) : len(p) + len(a)] = torch.tensor(a)
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
