"""SFT warm start: a transcript's tokens are exactly those a rollout of it samples, and SFTTrainer trains them."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
import torch

from agentrl_trainer.rollout.chat import template_assistant
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.sft.render import render_transcript
from agentrl_trainer.sft.transcripts import Transcript, play_oracle
from agentrl_trainer.types import Generation, TrainingRow
from tests.agentrl_envs.core.toy_env import ToyEnv


# A toy episode with every kind of turn: plain text (answered by a user message), a tool call with text before
# it, two tool calls in one turn (two tool messages), and the winning call.
def _toy_actions(index: int) -> list[dict[str, Any]]:
    return [*TOY_ACTIONS[:-1], {**TOY_ACTIONS[-1], "tool_calls": [_call("d", "answer", {"value": index})]}]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


TOY_ACTIONS: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Let me think."},
    {
        "role": "assistant",
        "content": "Echo first.",
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "echo", "arguments": '{"text": "hi"}'}}],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "b", "type": "function", "function": {"name": "echo", "arguments": '{"text": "x y"}'}},
            {"id": "c", "type": "function", "function": {"name": "echo", "arguments": '{"text": "z"}'}},
        ],
    },
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "d", "type": "function", "function": {"name": "answer", "arguments": '{"value": 2}'}}],
    },
]


class _ScriptedOracle:
    def __init__(self, actions: list[dict[str, Any]]) -> None:
        self.actions = actions

    def begin(self, index: int) -> None:
        self.turn = 0

    def act(self, observation: list[dict[str, Any]]) -> dict[str, Any]:
        self.turn += 1
        return self.actions[self.turn - 1]


def _toy_transcript(index: int = 2) -> Transcript:
    env = ToyEnv(split="test", max_rounds=len(TOY_ACTIONS))
    first, info = env.reset(options={"index": index})
    played, last = play_oracle(env, _ScriptedOracle(_toy_actions(index)), index, first, max_turns=10)
    env.close()
    assert last["status"] == "completed" and last["score"] == 1.0
    return Transcript("toy", "test", index, [*first, *played], info["tools"], last["score"])


def _whole_conversation_ids(tokenizer: Any, transcript: Transcript) -> list[int]:
    """The transcript rendered by the chat template in one piece (a second, independent rendering)."""
    messages = [
        template_assistant(m) if m["role"] == "assistant" else {**m, "content": m.get("content") or ""}
        for m in transcript.messages
    ]
    return list(tokenizer.apply_chat_template(messages, tools=transcript.tools, tokenize=True, return_dict=False))


class _ReplayEngine:
    """A policy that writes exactly the transcript: its next tokens are those of the whole-conversation rendering.

    It checks on every turn that the rollout's context is a prefix of that rendering, so any drift between the
    rollout's token assembly and the chat template fails here.
    """

    name = "replay"
    version = 0

    def __init__(self, whole: list[int], eos: int) -> None:
        self.whole, self.eos = whole, eos

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        assert self.whole[: len(prompt_ids)] == list(prompt_ids), "rollout context drifted from the template"
        end = self.whole.index(self.eos, len(prompt_ids)) + 1
        tokens = tuple(self.whole[len(prompt_ids) : end])
        assert len(tokens) <= max_new_tokens
        return Generation(tokens, (0.0,) * len(tokens), 0, self.name, "stop")

    async def aclose(self) -> None:
        pass


def _rollout(env: Any, transcript: Transcript, tokenizer: Any) -> Any:
    engine = _ReplayEngine(_whole_conversation_ids(tokenizer, transcript), tokenizer.eos_token_id)
    limits = EpisodeLimits(max_turns=50, max_new_tokens=4096, max_total_tokens=100_000)
    row = TrainingRow(transcript.task, transcript.split, transcript.index)
    return asyncio.run(run_episode(row, env, tokenizer=tokenizer, pick_engine=lambda: engine, limits=limits))


def _same_action(recorded: dict[str, Any], played: dict[str, Any]) -> bool:
    def calls(m: dict[str, Any]) -> list[tuple[str, Any]]:
        return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls") or []]

    return (recorded.get("content") or "") == (played.get("content") or "") and calls(recorded) == calls(played)


def _assert_identical(rendered: Any, trajectory: Any, transcript: Transcript) -> None:
    assert trajectory.prompt_ids + trajectory.completion_ids == rendered.input_ids
    assert [0] * len(trajectory.prompt_ids) + trajectory.action_mask == rendered.loss_mask
    assert rendered.prompt_length == len(trajectory.prompt_ids)
    recorded = [m for m in transcript.messages if m["role"] == "assistant"]
    played = [m for m in trajectory.messages if m["role"] == "assistant"]
    assert len(played) == len(recorded) and all(_same_action(r, p) for r, p in zip(recorded, played, strict=True))


def test_transcript_tokens_equal_the_tokens_a_rollout_samples(tokenizer: Any) -> None:
    transcript = _toy_transcript()
    rendered = render_transcript(tokenizer, transcript.messages, transcript.tools)
    trajectory = _rollout(ToyEnv(split="test", max_rounds=len(TOY_ACTIONS)), transcript, tokenizer)
    assert trajectory.status == "completed" and trajectory.reward == 1.0
    _assert_identical(rendered, trajectory, transcript)
    # Trained tokens are exactly the assistant turns, each through its end-of-turn token.
    trained = tokenizer.decode([t for t, m in zip(rendered.input_ids, rendered.loss_mask, strict=True) if m])
    assert trained.count("<|im_end|>") == len(TOY_ACTIONS)
    assert "Let me think." in trained and "Find the number." not in trained and "<tool_response>" not in trained


def test_transcript_tokens_equal_the_template_rendering_of_the_whole_conversation(tokenizer: Any) -> None:
    transcript = _toy_transcript()
    rendered = render_transcript(tokenizer, transcript.messages, transcript.tools)
    whole = _whole_conversation_ids(tokenizer, transcript)
    # The stream stops at the last end-of-turn token, as a rollout does; the template adds only its newline.
    assert whole[: len(rendered.input_ids)] == rendered.input_ids
    assert tokenizer.decode(whole[len(rendered.input_ids) :]) == "\n"


def test_oracle_transcript_of_a_real_task_matches_its_rollout(tokenizer: Any) -> None:
    """DB's oracle, through the real DB environment: SFT tokens == rollout tokens, and the replay wins too."""
    import agentrl_envs
    from agentrl_trainer.sft.transcripts import record_oracle

    def factory(task: str, split: str) -> Any:
        return agentrl_envs.make(task, split=split).unwrapped

    transcripts = record_oracle(factory, "db", "dev", max_samples=2)
    assert transcripts and all(t.score == 1.0 for t in transcripts)
    transcript = transcripts[0]
    rendered = render_transcript(tokenizer, transcript.messages, transcript.tools)
    env = factory("db", "dev")
    try:
        trajectory = _rollout(env, transcript, tokenizer)
    finally:
        env.close()
    assert trajectory.score == 1.0
    _assert_identical(rendered, trajectory, transcript)


def test_render_refuses_what_a_policy_could_not_have_written(tokenizer: Any) -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(ValueError, match="no assistant message"):
        render_transcript(tokenizer, messages, None)
    bad = {"role": "assistant", "tool_calls": [{"function": {"name": "echo", "arguments": "{not json"}}]}
    with pytest.raises(ValueError, match="not JSON"):
        render_transcript(tokenizer, [*messages, bad], None)


def test_sft_trainer_trains_only_the_assistant_tokens(tiny_model_path: Any, tokenizer: Any, tmp_path: Any) -> None:
    from datasets import Dataset
    from trl import SFTConfig

    from agentrl_trainer.sft.prefix import PrefixSharingSFTTrainer
    from agentrl_trainer.sft.warmup import sft_rows

    rows = sft_rows(tokenizer, [_toy_transcript(i) for i in (1, 2)])
    config = SFTConfig(
        output_dir=str(tmp_path), max_steps=1, report_to="none", save_strategy="no", bf16=False,
        gradient_checkpointing=False, per_device_train_batch_size=2,
    )  # fmt: skip
    trainer = PrefixSharingSFTTrainer(
        model=str(tiny_model_path), args=config, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    # SFTTrainer keeps pre-tokenized rows as they are: labels -100 off the assistant tokens.
    assert trainer.train_dataset[0]["labels"] == rows[0]["labels"]
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.train()
    assert any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    # The two toy transcripts share their system prompt and tools: that batch ran them once.
    assert trainer.shared_prefix_batches == 1 and trainer.shared_prefix_tokens_saved > 32


def test_the_warmup_stage_trains_from_a_transcripts_file_and_reuses_its_checkpoint(
    tiny_model_path: Any, tokenizer: Any, tmp_path: Any
) -> None:
    from safetensors.torch import load_file

    from agentrl_trainer import AgentRLConfig
    from agentrl_trainer.sft.config import SFTWarmupConfig
    from agentrl_trainer.sft.warmup import run_sft_warmup, warmup_key

    # agentrl-eval's episodes.jsonl shape: no tools on the rows (they come from the task's environment).
    path = tmp_path / "episodes.jsonl"
    rows = [{"task": "toy", "split": "test", "index": t.index, "messages": t.messages, "score": t.score} for t in
            (_toy_transcript(i) for i in (1, 2, 3))]  # fmt: skip
    rows.append({**rows[0], "score": 0.0})  # a failure: filtered out by min_score
    path.write_text("\n".join(json.dumps(r) for r in rows))
    config = AgentRLConfig(
        output_dir=str(tmp_path / "run"), tasks=["toy"], report_to="none", max_total_tokens=1024,
        sft_warmup={"source": str(path), "max_steps": 2, "per_device_train_batch_size": 2,
                    "output_dir": str(tmp_path / "warm")},
    )  # fmt: skip
    factory = {"toy": lambda split: ToyEnv(split=split)}

    def env_factory(task: str, split: str) -> Any:
        return factory[task](split)

    first = run_sft_warmup(str(tiny_model_path), tokenizer, config, env_factory=env_factory)
    assert not first.reused and first.transcripts == 3 and first.trained_tokens > 0 and first.train_s > 0
    start, warm = load_file(tiny_model_path / "model.safetensors"), load_file(first.model_path / "model.safetensors")
    assert any(not torch.equal(start[k], warm[k]) for k in start)
    again = run_sft_warmup(str(tiny_model_path), tokenizer, config, env_factory=env_factory)
    assert again.reused and again.key == first.key and again.model_path == first.model_path
    # Changed inputs (here the learning rate) name another checkpoint.
    changed = SFTWarmupConfig.from_mapping({**config.sft_warmup, "learning_rate": 1e-3})
    assert warmup_key(str(tiny_model_path), tokenizer, config, changed) != first.key


def test_the_learning_rate_schedule_is_a_setting_whose_default_keeps_cached_keys(
    tiny_model_path: Any, tokenizer: Any, tmp_path: Any
) -> None:
    from agentrl_trainer import AgentRLConfig
    from agentrl_trainer.sft.config import SFTWarmupConfig
    from agentrl_trainer.sft.warmup import _warmup_identity, warmup_key

    config = AgentRLConfig(output_dir=str(tmp_path), tasks=["toy"], report_to="none", sft_warmup={"max_steps": 2})
    default = SFTWarmupConfig.from_mapping({"max_steps": 2})
    # Checkpoints cached before the schedule was a setting were keyed without it: the default leaves it out.
    assert not {"lr_scheduler_type", "warmup_steps"} & set(_warmup_identity(default))
    constant = SFTWarmupConfig.from_mapping({"max_steps": 2, "lr_scheduler_type": "constant_with_warmup"})
    assert _warmup_identity(constant)["lr_scheduler_type"] == "constant_with_warmup"
    keys = {warmup_key(str(tiny_model_path), tokenizer, config, w) for w in (default, constant)}
    assert len(keys) == 2
    with pytest.raises(ValueError, match="warmup_steps must be >= 0"):
        SFTWarmupConfig.from_mapping({"warmup_steps": -1})


def test_shared_prefix_loss_and_gradients_equal_the_plain_forward_pass(model: Any, tokenizer: Any) -> None:
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from agentrl_trainer.sft.prefix import prefix_shared_loss, shared_prefix_length
    from agentrl_trainer.sft.warmup import sft_rows

    # Different samples of one task: the same system prompt and tools, then different user messages and turns.
    rows = [
        {k: row[k] for k in ("input_ids", "labels")}
        for row in sft_rows(tokenizer, [_toy_transcript(i) for i in (1, 2, 3)])
    ]
    rows[2] = {k: v[:-5] for k, v in rows[2].items()}  # rows of different lengths: padding on the right
    batch = DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id)(rows)
    prefix = shared_prefix_length(batch["input_ids"], batch["attention_mask"], batch["labels"])
    assert 32 < prefix < len(rows[0]["input_ids"])

    def loss_and_grads(compute: Any) -> tuple[float, list[torch.Tensor]]:
        model.zero_grad()
        loss = compute()
        loss.backward()
        return loss.item(), [p.grad.clone() for p in model.parameters()]

    def plain() -> torch.Tensor:
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        logits, targets = out.logits[:, :-1], batch["labels"][:, 1:]
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))

    expected, expected_grads = loss_and_grads(plain)
    shared, shared_grads = loss_and_grads(
        lambda: prefix_shared_loss(model, batch["input_ids"], batch["attention_mask"], batch["labels"], prefix)
    )
    model.zero_grad()
    assert shared == pytest.approx(expected, rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6, rtol=1e-4) for a, b in zip(shared_grads, expected_grads, strict=True))


def test_task_batches_keep_one_task_per_batch() -> None:
    from agentrl_trainer.sft.prefix import task_batches

    tasks = ["a", "b", "a", "b", "a", "a", "c", "c"]
    ordered = task_batches(list(range(8)), tasks, 2, seed=0)
    assert sorted(ordered) == list(range(8))
    batches = [ordered[i : i + 2] for i in range(0, 8, 2)]
    assert all(len({tasks[r] for r in batch}) == 1 for batch in batches)


def test_task_batches_put_each_tasks_remainder_last_so_the_trainers_windows_stay_one_task() -> None:
    # The trainer reads the flat order in windows of the batch size: a remainder in the middle would shift every
    # later window across two tasks (no shared prompt, the slow path) for the rest of the run.
    from agentrl_trainer.sft.prefix import task_batches

    tasks = ["a"] * 9 + ["b"] * 6 + ["c"] * 8  # remainders of 1 (a) and 2 (b) with batches of 4
    ordered = task_batches(list(range(len(tasks))), tasks, 4, seed=3)
    assert sorted(ordered) == list(range(len(tasks)))
    windows = [ordered[i : i + 4] for i in range(0, len(ordered), 4)]
    assert all(len({tasks[r] for r in window}) == 1 for window in windows[:5])  # the 5 full batches
    assert [tasks[r] for r in ordered[20:]] == ["a", "b", "b"]  # the remainders, last


def test_the_sft_warmup_block_is_checked_and_filled_with_defaults(tmp_path: Any) -> None:
    from agentrl_trainer import AgentRLConfig

    config = AgentRLConfig(output_dir=str(tmp_path), report_to="none", sft_warmup={})
    warmup = config.sft_warmup_config()
    assert warmup is not None and warmup.source == "oracle" and warmup.share_prefix
    assert AgentRLConfig(output_dir=str(tmp_path), report_to="none").sft_warmup_config() is None
    with pytest.raises(ValueError, match=re.escape("sft_warmup has unknown keys ['epochs']")):
        AgentRLConfig(output_dir=str(tmp_path), report_to="none", sft_warmup={"epochs": 3})


def test_the_warmup_can_record_with_its_own_env_options_over_the_runs(
    tiny_model_path: Any, tokenizer: Any, tmp_path: Any
) -> None:
    from agentrl_trainer import AgentRLConfig
    from agentrl_trainer.sft.config import SFTWarmupConfig
    from agentrl_trainer.sft.warmup import _warmup_identity, recording_env_kwargs, warmup_key

    run = {"db": {"train_file": "rl.jsonl", "backend": "sqlite"}, "kg": {"train_file": "kg.json"}}
    config = AgentRLConfig(output_dir=str(tmp_path), tasks=["db", "kg"], report_to="none", env_kwargs=run)
    own = SFTWarmupConfig.from_mapping({"env_kwargs": {"db": {"train_file": "sft.jsonl"}}})
    # A larger SFT file for DB; DB's other options and KG's stay the run's.
    assert recording_env_kwargs(config, own) == {
        "db": {"train_file": "sft.jsonl", "backend": "sqlite"}, "kg": {"train_file": "kg.json"}
    }  # fmt: skip
    assert recording_env_kwargs(config, SFTWarmupConfig()) == run
    keys = {warmup_key(str(tiny_model_path), tokenizer, config, w) for w in (own, SFTWarmupConfig())}
    assert len(keys) == 2 and "env_kwargs" not in _warmup_identity(SFTWarmupConfig())  # old keys are kept
    with pytest.raises(ValueError, match=r"sft_warmup.env_kwargs must map a task to its options"):
        SFTWarmupConfig.from_mapping({"env_kwargs": {"db": "sft.jsonl"}})
