"""Action normalisation as AgentBench-FC's ``process_action``: lower-case, first line, BLEU snapping above 0.01."""

from __future__ import annotations

import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from agentrl_envs.tasks.alfworld.actions import bleu, snap_action

ADMISSIBLE = ["go to drawer 1", "go to shelf 2", "open drawer 1", "take pencil 1 from drawer 1", "inventory", "look"]


def test_an_admissible_command_is_used_as_is() -> None:
    snap = snap_action("open drawer 1", ADMISSIBLE)
    assert (snap.command, snap.how, snap.score) == ("open drawer 1", "exact", None)


def test_the_action_is_stripped_lower_cased_and_cut_to_its_first_line() -> None:
    snap = snap_action("  Open Drawer 1\nbecause the pencil is there", ADMISSIBLE)
    assert (snap.normalized, snap.command, snap.how) == ("open drawer 1", "open drawer 1", "exact")


def test_a_near_miss_snaps_to_the_highest_bleu_command() -> None:
    snap = snap_action("take the pencil 1 from drawer 1", ADMISSIBLE)
    assert snap.how == "bleu"
    assert snap.command == "take pencil 1 from drawer 1"
    assert snap.score == pytest.approx(max(bleu(c, "take the pencil 1 from drawer 1") for c in ADMISSIBLE))


def test_ties_go_to_the_first_command_as_numpy_argmax() -> None:
    snap = snap_action("go to", ["go to drawer 1", "go to shelf 2"])
    assert (snap.command, snap.how) == ("go to drawer 1", "bleu")


@pytest.mark.parametrize("text", ["xyzzy plugh", "", "走到 书架", "x" * 100_000])
def test_text_far_from_every_command_passes_through_unchanged(text: str) -> None:
    snap = snap_action(text, ADMISSIBLE)
    assert snap.how == "unmatched"
    assert snap.command == text.strip().lower().split("\n")[0]
    assert snap.score is not None and snap.score <= 0.01


def test_bleu_is_nltk_sentence_bleu_with_method4_on_whitespace_tokens() -> None:
    expected = sentence_bleu(
        [["go", "to", "shelf", "2"]], ["go", "shelf"], smoothing_function=SmoothingFunction().method4
    )
    assert bleu("go to shelf 2", "go shelf") == pytest.approx(expected)


def test_without_admissible_commands_the_text_is_used() -> None:
    assert snap_action("Look", []).command == "look"


def test_info_clips_huge_texts() -> None:
    info = snap_action("x" * 100_000, ADMISSIBLE).to_info()
    assert len(info["raw"]) < 1000 and info["how"] == "unmatched"
