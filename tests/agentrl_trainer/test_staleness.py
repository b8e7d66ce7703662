"""The staleness rule as a spec: admission at the bound, keep/drop/downweight at the bound, version tags."""

from __future__ import annotations

import pytest

from agentrl_trainer.staleness import StalenessRule, StalePolicy
from agentrl_trainer.types import Group, TokenSegment, TrainingRow, Trajectory


def _group(*versions: int, lagged: tuple[int, ...] = (), created: int = 0) -> Group:
    """A group of one trajectory whose current-policy turns carry ``versions`` and lagged turns ``lagged``."""
    row = TrainingRow("length", "train", 0)
    trajectory = Trajectory(row=row, prompt_ids=[1])
    for version in versions:
        trajectory.segments.append(TokenSegment((2,), True, (0.0,), version=version, engine="policy"))
    for version in lagged:
        trajectory.segments.append(TokenSegment((3,), True, (0.0,), version=version, engine="lagged0", lagged=True))
    trajectory.segments.append(TokenSegment((4,), False, version=99))  # environment tokens carry no version
    return Group(row, [trajectory], created_version=created)


@pytest.mark.parametrize("policy", ["drop", "downweight"])
def test_a_group_at_the_bound_is_kept_whole_and_one_past_it_is_not(policy: StalePolicy) -> None:
    rule = StalenessRule(max_staleness=2, policy=policy)
    assert [rule.verdict(s) for s in (0, 1, 2)] == ["keep"] * 3
    assert rule.verdict(3) == policy
    assert [rule.weight(s) for s in (0, 2)] == [1.0, 1.0]


def test_downweighting_decays_per_version_past_the_bound() -> None:
    rule = StalenessRule(max_staleness=1, policy="downweight", weight_decay=0.5)
    assert [rule.weight(s) for s in (1, 2, 3, 4)] == [1.0, 0.5, 0.25, 0.125]


def test_the_filter_drops_past_the_bound_and_counts_the_oldest_current_policy_turn() -> None:
    rule = StalenessRule(max_staleness=1)
    at_bound, past, mixed = _group(4, 5), _group(3), _group(5, 3)  # the oldest turn decides, not the newest
    kept, dropped = rule.filter([at_bound, past, mixed], version=5)
    assert kept == [at_bound] and dropped == [past, mixed]
    assert at_bound.weight == 1.0


def test_the_filter_downweights_instead_of_dropping() -> None:
    rule = StalenessRule(max_staleness=1, policy="downweight", weight_decay=0.5)
    fresh, two_past = _group(5), _group(2)
    kept, dropped = rule.filter([fresh, two_past], version=5)
    assert kept == [fresh, two_past] and dropped == []
    assert (fresh.weight, two_past.weight) == (1.0, 0.25)


def test_lagged_turns_lag_by_design_and_do_not_make_a_group_stale() -> None:
    rule = StalenessRule(max_staleness=0)
    only_lagged_old = _group(5, lagged=(1,))
    no_policy_turns = _group(lagged=(0,), created=5)  # staleness falls back to the version it started at
    kept, dropped = rule.filter([only_lagged_old, no_policy_turns], version=5)
    assert kept == [only_lagged_old, no_policy_turns] and dropped == []


def test_admission_with_drop_stops_at_s_plus_one_times_b_live_groups() -> None:
    rule = StalenessRule(max_staleness=2, policy="drop")
    assert rule.admits(live_groups=11, groups_per_version=4)
    assert not rule.admits(live_groups=12, groups_per_version=4)  # (2 + 1) x 4
    assert StalenessRule(max_staleness=0).admits(0, 1) and not StalenessRule(max_staleness=0).admits(1, 1)


def test_admission_with_downweight_never_waits() -> None:
    """A stale group still trains when down-weighted, so holding rollouts back would only idle the engines."""
    assert StalenessRule(max_staleness=0, policy="downweight").admits(live_groups=10_000, groups_per_version=1)


def test_a_rule_that_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="max_staleness must be >= 0"):
        StalenessRule(max_staleness=-1)
    with pytest.raises(ValueError, match="stale_policy must be one of"):
        StalenessRule(max_staleness=1, policy="skip")  # type: ignore[arg-type]
