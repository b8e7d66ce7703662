"""Game generation: one game per split entry, on upstream's 2.1.1 domain and grammar, solved by the planner,
deterministic for a seed and cached."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentrl_envs.core import DataError
from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.alfworld import games
from agentrl_envs.tasks.alfworld.games import MAX_PLAN_STEPS, GameStore, split_entries
from agentrl_envs.tasks.alfworld.scenes import parse_entry

from .conftest import GENERATION_TIMEOUT

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

ENTRY = "json_2.1.1/valid_unseen/pick_and_place_simple-Pencil-None-Shelf-308/trial_T20190908_121952_610012/game.tw-pddl"


@pytest.fixture(scope="module")
def data() -> DataRoot:
    return DataRoot.find()


@pytest.mark.parametrize(("split", "size"), [("test", 109), ("dev", 20), ("train", 3150)])
def test_splits_are_upstreams_lists(data: DataRoot, split: str, size: int) -> None:
    assert len(split_entries(data, split)) == size


def test_an_entry_names_task_object_receptacle_and_scene() -> None:
    spec = parse_entry(ENTRY)
    assert (spec.task_type, spec.object_target, spec.mrecep_target, spec.parent_target, spec.scene) == (
        "pick_and_place_simple",
        "Pencil",
        None,
        "Shelf",
        308,
    )


@pytest.mark.parametrize(
    "path",
    ["json_2.1.1/train/not-a-game/game.tw-pddl", "json_2.1.1/train/fly_to_moon-Pen-None-Shelf-1/trial_1/game.tw-pddl"],
)
def test_a_malformed_entry_is_a_data_error(path: str) -> None:
    with pytest.raises(DataError, match="ALFWorld"):
        parse_entry(path)


def test_every_test_game_uses_upstreams_logic_and_is_solved(data: DataRoot, test_games: list[str]) -> None:
    store = GameStore(data)
    domain = data.file("data/alfworld/logic/alfred.pddl").read_text()
    for path in test_games:
        game = store.game(path)
        assert game["pddl_domain"] == domain
        assert 'template :: "put {o} in/on {r}";' in game["grammar"]
        assert "move {o} to {r}" not in game["grammar"] and "UNKNOWN GOAL" not in game["grammar"]
        assert game["solvable"] and 0 < len(game["walkthrough"]) <= MAX_PLAN_STEPS
        assert game["source"] == path


def test_placing_tasks_end_with_upstreams_put_command(data: DataRoot, test_games: list[str]) -> None:
    store = GameStore(data)
    spec = parse_entry(test_games[0])
    walkthrough = store.game(test_games[0])["walkthrough"]
    assert re.fullmatch(
        rf"put {spec.object_target.lower()} \d+ in/on {spec.parent_target.lower()} \d+", walkthrough[-1]
    )


def test_generation_is_deterministic_for_a_seed(data: DataRoot, test_games: list[str], tmp_path: Path) -> None:
    cached = GameStore(data).game(test_games[5])
    fresh = GameStore(data, cache_dir=tmp_path).game(test_games[5])
    assert fresh == cached


def test_another_seed_gives_another_game(data: DataRoot, test_games: list[str], tmp_path: Path) -> None:
    assert GameStore(data, seed=1, cache_dir=tmp_path).game(ENTRY) != GameStore(data).game(ENTRY)


def test_a_cached_game_is_read_not_regenerated(
    data: DataRoot, test_games: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = GameStore(data)
    assert store.file(test_games[0]).is_file()
    monkeypatch.setattr(store, "generate", lambda spec: pytest.fail("regenerated a cached game"))
    assert store.game(test_games[0])["source"] == test_games[0]


def test_the_expert_solves_every_test_game(data: DataRoot, test_games: list[str]) -> None:
    store = GameStore(data)
    assert {store.game(path)["solver"] for path in test_games} == {"expert"}


def test_the_planner_takes_over_when_the_expert_fails(
    data: DataRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(games, "expert_plan", lambda spec, problem, names: ["look"])
    game = GameStore(data, cache_dir=tmp_path).game(ENTRY)
    assert game["solver"] == "planner" and game["walkthrough"][-1].startswith("put pencil ")
