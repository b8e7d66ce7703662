import agentrl_envs.eval as eval_package


def test_all_is_sorted_and_importable() -> None:
    assert eval_package.__all__ == sorted(eval_package.__all__)
    for name in eval_package.__all__:
        assert getattr(eval_package, name) is not None
