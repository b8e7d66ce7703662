"""The learning run: its configs, the stage evaluation, recovery transcripts, and bench/learning_real.py end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrl_trainer.cli import load_config

REPO = Path(__file__).parents[2]
CONFIGS = REPO / "examples" / "configs"


def test_the_learning_config_has_a_copying_model_renamed_sft_rl_on_train_files_and_stage_eval() -> None:
    model_args, config = load_config(CONFIGS / "learn_db.yaml")
    assert model_args.model_name_or_path == "tiny" and config.tasks == ["db", "kg"]
    assert model_args.tiny_copy_pretrain_steps > 0  # names are copied from the prompt
    assert config.task_split == "train" and config.env_kwargs["db"]["train_file"].endswith("synth-train/db.jsonl")
    warmup = config.sft_warmup_config()
    assert 0 < warmup.random_names < 1 and warmup.max_steps > 0  # renamed and real names both
    assert warmup.env_kwargs["db"]["train_file"].endswith("synth-train-2000/db.jsonl")
    assert warmup.oracle_options == {"db": {"show_sql": True}}
    stage_eval = config.stage_eval_config()
    assert stage_eval.sets["heldout"]["split"] == "train" and stage_eval.sets["dev"] == {"split": "dev"}
    assert "synth-heldout" in stage_eval.sets["heldout"]["env_kwargs"]["kg"]["train_file"]


def test_the_gpu_recipe_config_trains_the_five_tasks_on_their_train_splits() -> None:
    model_args, config = load_config(CONFIGS / "gpu_qwen7b_agentbench.yaml", ["bf16=false"])  # no GPU here
    assert model_args.model_name_or_path == "Qwen/Qwen2.5-7B-Instruct"
    assert sorted(config.tasks) == ["alfworld", "db", "kg", "os", "webshop"] and config.task_split == "train"
    assert "train_file" in config.env_kwargs["db"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"sets": {"dev": {"split": "dev"}}, "limt": 3}, "unknown keys"),
        ({"sets": {"dev": {"splt": "dev"}}}, "split"),
        ({"sets": {}}, "at least one set"),
        ({"limit": 0}, "limit"),
    ],
)
def test_a_bad_stage_eval_block_is_refused_with_what_to_write(value: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(CONFIGS / "learn_db.yaml", [f"stage_eval={json.dumps(value)}"])


def test_bad_oracle_options_are_refused() -> None:
    with pytest.raises(ValueError, match="oracle_options"):
        load_config(CONFIGS / "learn_db.yaml", ['sft_warmup={"oracle_options": {"db": true}}'])


def test_stage_plot_draws_every_stage_and_set(tmp_path: Path) -> None:
    from agentrl_trainer.stages import write_stages

    (tmp_path / "summary.json").write_text(json.dumps({"steps": 3}))
    stages = {s: {"heldout": {"db": 0.1, "kg": 0.0}, "dev": {"db": 0.0, "kg": 0.0}} for s in ("before_sft", "after_rl")}
    write_stages(tmp_path, stages)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["stages"] == stages  # added beside the trainer's figures
    assert (tmp_path / "stages.png").stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the bench's own command has 900 s, its rerun 300 s (284 s for the test under load)
def test_learning_real_quick_runs_synth_sft_rl_and_scores_every_stage(tmp_path: Path) -> None:
    """The whole pipeline with tiny budgets: synth -> SFT (renamed, with recovery) -> async RL -> stage scores."""
    # env_kwargs as the config's (make train's warm-up file): the bench puts its own warm-up tasks there.
    warmup = {"source": "oracle", "oracle_options": {"db": {"recovery": True}}, "max_steps": 2, "random_names": 1.0,
              "env_kwargs": {"db": {"train_file": "absent.jsonl"}}, "output_dir": str(tmp_path / "sft")}  # fmt: skip
    command = [
        sys.executable, str(REPO / "bench" / "learning_real.py"), "--quick", "--out", str(tmp_path),
        "--synth-n", "4", "--heldout-n", "2", "--sft-synth-n", "3", "--rl-synth-n", "3",
        "--limit", "2", "--bfcl-limit", "1", "--steps", "1",
        "--set", "tiny_corpus_samples=4", "--set", "tiny_copy_pretrain_steps=0", "--set", "tiny_hidden_size=32",
        "--set", "max_turns=2", "--set", "max_new_tokens_per_turn=16",
        "--set", "min_groups_per_step=1", "--set", "max_groups_per_step=1", "--set", "num_generations=2",
        "--set", f"sft_warmup={json.dumps(warmup)}",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert result.returncode == 0, result.stderr[-4000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    for key in ("tasks", "no_task_norm", "dev"):
        assert set(figures[key]) == {"db", "kg"}
        for stages in figures[key].values():
            assert set(stages) == {"before_sft", "after_sft", "after_rl"}
            assert all(len(v) == 1 and 0.0 <= v[0] <= 1.0 for v in stages.values())
    # BFCL, never trained on, is scored at every stage too: one accuracy per multi-turn category.
    categories = {"bfcl_base", "bfcl_miss_func", "bfcl_miss_param", "bfcl_long_context"}
    assert set(figures["bfcl"]) == categories
    assert all(set(stages) == {"before_sft", "after_sft", "after_rl"} for stages in figures["bfcl"].values())
    # Held-out DB of RL's types is scored at every stage, beside the held-out set of every type.
    for key in ("db_rl_types", "no_task_norm_db_rl_types"):
        assert set(figures[key]) == {"db"} and set(figures[key]["db"]) == {"before_sft", "after_sft", "after_rl"}
    heldout_rl = next(tmp_path.glob("synth-heldout-2-*-unseen")) / "db.jsonl"
    assert {json.loads(line)["type"][0] for line in heldout_rl.read_text().splitlines()} <= {
        "other", "counting", "aggregation-MIN", "aggregation-MAX"
    }  # fmt: skip
    # Held-out sets have only tasks whose text no training set has (level-1 DB draws from a small space), and as
    # many as asked for (synth --exclude draws others in place of the seen ones).
    assert figures["heldout_overlap_with_train"] == {"heldout": {"db": 0, "kg": 0}, "heldout_rl_types": {"db": 0}}
    assert figures["heldout_sizes"] == {"heldout": {"db": 2, "kg": 2}, "heldout_rl_types": {"db": 2}}
    # The SFT stage trained on DB transcripts that recover from an error (recorded with recovery=True).
    assert figures["sft_warmup"][0]["transcripts"] >= 4  # 3 DB (the bench's own warm-up file) and the KG ones
    run = tmp_path / "norm-seed0"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 1 and set(summary["stages"]) == {"before_sft", "after_sft", "after_rl"}
    assert (run / "stages.png").is_file() and (run / "reward.png").is_file()
    # RL played DB's --rl-types only: no INSERT question (the warm-up rarely solves one)
    rl_file = next(tmp_path.glob("synth-rl-3-*")) / "db.jsonl"
    rl_types = {json.loads(line)["type"][0] for line in rl_file.read_text().splitlines()}
    assert rl_types and "INSERT" not in rl_types
    # A second invocation reuses the finished runs (a long bench can be run a few seeds at a time).
    again = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert again.returncode == 0, again.stderr[-4000:]
    assert again.stderr.count("reused") == 2  # norm and no_norm
    assert json.loads(again.stdout.strip().splitlines()[-1])["tasks"] == figures["tasks"]
    # A run whose held-out set changed since is scored again on it with the models it has, not trained again.
    heldout_rl.write_text(heldout_rl.read_text().splitlines(keepends=True)[0], encoding="utf-8")
    trained = (run / "model.safetensors").stat().st_mtime_ns
    third = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert third.returncode == 0, third.stderr[-4000:]
    assert third.stderr.count("rescored") == 2 and "reused" not in third.stderr.replace("reused from", "")
    assert json.loads(third.stdout.strip().splitlines()[-1])["heldout_sizes"]["heldout_rl_types"] == {"db": 1}
    assert (run / "model.safetensors").stat().st_mtime_ns == trained


def test_oracle_options_record_db_transcripts_that_recover_from_an_error(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from agentrl_trainer.envs import make_env_factory
    from agentrl_trainer.sft.config import SFTWarmupConfig
    from agentrl_trainer.sft.warmup import load_transcripts

    command = [
        sys.executable,
        "-m",
        "agentrl_envs.cli",
        "synth",
        "--task",
        "db",
        "--n",
        "2",
        "--seed",
        "0",
        "--difficulty",
        "1",
    ]
    subprocess.run([*command, "--out", str(tmp_path)], check=True, capture_output=True, timeout=300)
    env_kwargs = {"db": {"train_file": str(tmp_path / "db.jsonl")}}
    args = SimpleNamespace(tasks=["db"], task_split="train", env_kwargs=env_kwargs)

    def errors(warmup: SFTWarmupConfig) -> list[bool]:
        transcripts = load_transcripts(warmup, args, make_env_factory(env_kwargs=env_kwargs))
        assert len(transcripts) == 2 and all(t.score == 1.0 for t in transcripts)
        return [any("1146" in str(m.get("content")) for m in t.messages if m["role"] == "tool") for t in transcripts]

    assert errors(SFTWarmupConfig(oracle_options={"db": {"recovery": True}})) == [True, True]
    assert errors(SFTWarmupConfig()) == [False, False]


def test_the_tiny_model_is_keyed_by_its_corpus_recipe_so_random_task_text_does_not_rebuild_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OS dev 25's stock log is random at each reset: a corpus of such text gave a new tiny model every run."""
    import agentrl_trainer.corpus
    from agentrl_trainer.cli import prepare_model

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path))
    calls: list[int] = []

    def corpus(*args: object, **kwargs: object) -> list[str]:
        calls.append(1)
        return ["SELECT * FROM stock", f"The output of the OS:\n\n{90 + len(calls)}\n"]  # differs per call

    monkeypatch.setattr(agentrl_trainer.corpus, "task_corpus", corpus)
    model_args, config = load_config(CONFIGS / "quickstart.yaml", ["tasks=[db]", "tiny_vocab_size=300"])
    first, _ = prepare_model(model_args, config)
    second, _ = prepare_model(model_args, config)
    assert first == second and calls == [1]  # the same model, and the corpus was not even collected again
    other, _ = prepare_model(
        model_args, load_config(CONFIGS / "quickstart.yaml", ["tasks=[kg]", "tiny_vocab_size=300"])[1]
    )
    assert other != first  # another recipe, another model


def test_a_cached_model_keeps_its_stage_scores_until_what_they_depend_on_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from agentrl_trainer import stages
    from agentrl_trainer.stages import StageEvalConfig, evaluate_model

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path / "cache"))
    played: list[str] = []

    def play(model_path: Any, tokenizer: Any, args: Any, stage_eval: StageEvalConfig) -> dict[str, Any]:
        played.append(str(model_path))
        return {"heldout": {"db": 0.25 * len(played)}}

    monkeypatch.setattr(stages, "_play", play)
    heldout = tmp_path / "heldout.jsonl"
    heldout.write_text('{"task": 1}\n')
    config = StageEvalConfig(sets={"heldout": {"split": "train", "env_kwargs": {"db": {"train_file": str(heldout)}}}})
    args = SimpleNamespace(tasks=["db"], max_turns=4, max_new_tokens_per_turn=64, max_total_tokens=2048, seed=0)
    tokenizer = SimpleNamespace(chat_template="{{ messages }}")
    cached, elsewhere = tmp_path / "cache" / "sft-warmup" / "abc", tmp_path / "run"
    cached.mkdir(parents=True)
    elsewhere.mkdir()

    first = evaluate_model(cached, tokenizer, args, config)
    again = evaluate_model(cached, tokenizer, args, config)
    assert first.reused_from is None and again.scores == first.scores == {"heldout": {"db": 0.25}}
    assert again.reused_from is not None and again.reused_from.parent == cached / stages.SCORES_DIR
    assert played == [str(cached)]
    # Another seed, another episode limit, or other held-out tasks in the same file: played again.
    evaluate_model(cached, tokenizer, SimpleNamespace(**{**vars(args), "seed": 1}), config)
    evaluate_model(cached, tokenizer, SimpleNamespace(**{**vars(args), "max_turns": 5}), config)
    heldout.write_text('{"task": 2}\n')
    evaluate_model(cached, tokenizer, args, config)
    assert len(played) == 4
    # reuse: false plays again; a model outside the cache (the RL result) is never kept.
    evaluate_model(cached, tokenizer, args, StageEvalConfig(sets=config.sets, reuse=False))
    evaluate_model(elsewhere, tokenizer, args, config)
    evaluate_model(elsewhere, tokenizer, args, config)
    assert len(played) == 7 and not (elsewhere / stages.SCORES_DIR).exists()
