"""The in-process engine is safe to use from several threads and to close and make again, many times over."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from agentrl_envs.tasks.alfworld.env import AlfworldEnv

MANY_ENGINES = textwrap.dedent(
    """
    from agentrl_envs.tasks.alfworld.engine import GameEngine

    engines = [GameEngine() for _ in range(16)]
    for engine in engines:
        engine.close()
    for _ in range(20):
        GameEngine(planner=True).close()
    print("ok")
    """
)


def test_engines_closed_by_the_dozen_leave_the_next_one_loadable() -> None:
    # In a child: the failure this guards against was a SIGSEGV of the whole interpreter (fast-downward's
    # library copies unloaded, then a new copy loaded).
    done = subprocess.run([sys.executable, "-c", MANY_ENGINES], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_inline_engines_reset_and_step_from_many_threads(
    make_env: Callable[..., AlfworldEnv], test_games: list[str]
) -> None:
    envs = [make_env(engine="inline") for _ in range(6)]

    def play(i: int) -> str:
        env = envs[i]
        _, info = env.reset(options={"index": i})
        call = {"id": "c", "type": "function", "function": {"name": "take_action", "arguments": '{"action": "look"}'}}
        _, _, _, _, info = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
        return str(info["status"])

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(play, range(6)))
    assert "task error" not in statuses, statuses
