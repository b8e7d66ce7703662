"""The memoised engine plays exactly as TextWorld does unpatched: same observations, admissible commands and
outcome on every step, compared against a fresh process that never installs the speedups."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.alfworld.engine import GameEngine
from agentrl_envs.tasks.alfworld.games import GameStore

from .conftest import GENERATION_TIMEOUT

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

# Upstream's construction of the environment, with nothing of ours imported.
PLAIN_TEXTWORLD = """
import json, sys
import textworld
from textworld.envs.pddl import PddlEnv
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
env = AlfredInfos(AlfredDemangler(PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True)), shuffle=False))
transcripts = []
for game, commands in json.load(open(sys.argv[1])):
    env.load(game)
    state = env.reset()
    transcript = [[state["feedback"], state["admissible_commands"], state["won"]]]
    for command in commands:
        state, _, _ = env.step(command)
        transcript.append([state["feedback"], state["admissible_commands"], state["won"]])
    transcripts.append(transcript)
print(json.dumps(transcripts))
"""


def transcript(engine: GameEngine, game: dict, commands: list[str]) -> list[list]:
    state = engine.reset(game)
    rows = [[state.feedback, state.admissible_commands, state.won]]
    for command in commands:
        state = engine.step(command)
        rows.append([state.feedback, state.admissible_commands, state.won])
    return rows


def test_the_memoised_engine_matches_plain_textworld(test_games: list[str], tmp_path: Path) -> None:
    store = GameStore(DataRoot.find())
    cases = []
    for index in (2, 50, 90):  # a put, a heat/cool and a lamp game
        game = store.game(test_games[index])
        plan = game["walkthrough"]
        cases.append((game, ["look", "inventory", "open it", *plan[:2], "look", *plan[2:]]))
    file = tmp_path / "cases.json"
    file.write_text(json.dumps(cases))
    environment = {**os.environ, "ALFWORLD_DATA": str(tmp_path / "alfworld_data")}
    plain = subprocess.run(
        [sys.executable, "-c", PLAIN_TEXTWORLD, str(file)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env=environment,
    )
    expected = json.loads(plain.stdout.strip().splitlines()[-1])
    engine = GameEngine()
    for (game, commands), plain_transcript in zip(cases, expected, strict=True):
        ours = transcript(engine, game, commands)
        assert ours == plain_transcript
        assert ours[-1][2] is True
        assert transcript(engine, game, commands) == plain_transcript  # again, from the warm caches
    engine.close()
