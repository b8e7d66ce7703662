"""How long the real tasks' observations are: characters of the environment's messages, per task.

The oracle plays sampled episodes of each task's dev split; for each episode this counts the characters of
the first messages (system + task prompt, tool schemas excluded) and of every later environment message
(tool results, pages, command output), the characters of the oracle's actions, and per episode the
environment's text in all (prompt, tool schemas, observations) against what the oracle wrote. Tokens are estimated at
4 characters per token (the usual figure for English text with a GPT/Qwen-style BPE; tables and JSON run a
little denser), since no real model's tokenizer is available offline here.

It is what ``bench/async_vs_sync.py --obs-tokens`` is set from: how much text an update trains over per
turn compared to what the model writes.

    uv run python bench/observation_lengths.py                 # db, kg, os, webshop, alfworld
    uv run python bench/observation_lengths.py --tasks db --episodes 50

Prints a table and, last, one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

import agentrl_envs
from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script
from agentrl_envs.core.oracle import load_oracle

CHARS_PER_TOKEN = 4


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


def _action_chars(action: dict[str, Any]) -> int:
    calls = action.get("tool_calls") or []
    return len(str(action.get("content") or "")) + sum(len(c["function"]["arguments"]) for c in calls)


def measure(task: str, *, episodes: int, seed: int, split: str) -> dict[str, Any]:
    """Play ``episodes`` oracle episodes of ``task`` and summarise the lengths of its messages."""
    env = agentrl_envs.make(task, split=split)
    oracle = load_oracle(task, split=split)
    prompt, observations, actions, tools = [], [], [], 0
    episode_env, episode_actions = [], []
    try:
        count = env.unwrapped.num_samples()
        for index in random.Random(seed).sample(range(count), min(episodes, count)):
            oracle.begin(index)
            messages, info = env.reset(options={"index": index})
            tools = len(json.dumps(info.get("tools") or []))
            prompt.append(_chars(messages))
            env_chars, action_chars = prompt[-1], 0
            done = False
            while not done:
                action = oracle.act(messages)
                actions.append(_action_chars(action))
                action_chars += actions[-1]
                messages, _, terminated, truncated, _ = env.step(action)
                if messages:
                    observations.append(_chars(messages))
                    env_chars += observations[-1]
                done = terminated or truncated
            episode_env.append(env_chars)
            episode_actions.append(action_chars)
    finally:
        env.close()
    return {
        "task": task,
        "episodes": len(prompt),
        "prompt_chars_p50": percentile(prompt, 50),
        "observation_chars_p50": percentile(observations, 50) if observations else 0,
        "observation_chars_p90": percentile(observations, 90) if observations else 0,
        "action_chars_p50": percentile(actions, 50),
        "observation_tokens_p50_est": (percentile(observations, 50) if observations else 0) / CHARS_PER_TOKEN,
        "turns_mean": len(actions) / max(len(prompt), 1),
        # What one episode's update trains over (environment text, tool schemas in the prompt) vs writes.
        "tool_schema_chars": tools,
        "episode_env_chars_p50": percentile(episode_env, 50),
        "episode_action_chars_p50": percentile(episode_actions, 50),
        "episode_env_tokens_p50_est": (percentile(episode_env, 50) + tools) / CHARS_PER_TOKEN,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="db,kg,os,webshop,alfworld", help="comma-separated short task names")
    parser.add_argument("--episodes", type=int, default=30, help="oracle episodes per task")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    results = [measure(t, episodes=args.episodes, seed=args.seed, split=args.split) for t in args.tasks.split(",")]
    header = list(results[0])
    print(" | ".join(header))
    for row in results:
        print(" | ".join(f"{row[k]:.0f}" if isinstance(row[k], float) else str(row[k]) for k in header))
    print(json.dumps({"bench": "observation_lengths", "chars_per_token": CHARS_PER_TOKEN, "results": results}))


if __name__ == "__main__":
    main()
