"""Held-out DB success of a tiny model along its SFT: does it learn to copy names and values from the prompt?

A diagnostic for ``examples/configs/learn_db.yaml`` (docs/benchmarks.md, "Learning on real DB: what we tried").
It builds the config's tiny model (``--set`` overrides, e.g. ``tiny_pretokenizer=words``), records oracle
transcripts of a synthesized DB training file, and trains on them with the warm-up's own rendering
(:func:`~agentrl_trainer.sft.render.render_transcript`) and shared-prefix loss
(:func:`~agentrl_trainer.sft.prefix.prefix_shared_loss`) in a plain AdamW loop (no TRL around it, so it can stop
to score). Every ``--eval-every`` steps it plays held-out tasks through the real DB env and grader
(:func:`~agentrl_trainer.rollout.episode.run_episode`, as rollouts do) and prints the success rate per question
type, how episodes ended, and the first episodes' raw actions, at each ``--temperature`` given (greedy and
temperature 1 tell apart what the model knows from what it samples). ``--save DIR`` writes the model, tokenizer and
optimizer state at each scoring to ``DIR/last``, and to ``DIR/best`` when its success rates, compared in the order
of the temperatures (the next one breaks a tie), are the best so far. ``--checkpoint DIR --steps N`` trains N more
steps from a saved (or any) checkpoint, resuming its step count and optimizer when it has them; ``--steps 0`` only
scores (and shows) it, e.g. a cached SFT warm-up. ``--set tiny_copy_pretrain_steps=N`` builds the tiny model with
a copy pre-training stage (:mod:`agentrl_trainer.copy_pretrain`); ``--copy-mix N`` adds N copy sequences to every
SFT step's loss so the copy circuit is kept.

    uv run python bench/sft_copy_curve.py --train runs/learn/synth-train-2000/db.jsonl \\
        --heldout runs/learn/synth-heldout/db.jsonl --set tiny_pretokenizer=words --set tiny_vocab_size=3072 \\
        --temperature 1 --temperature 1e-3 --save runs/learn/sft-copy
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import random
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from agentrl_trainer.cli import load_config, prepare_model
from agentrl_trainer.copy_pretrain import CopyPretrainSettings, copy_batch, copyable_token_ids
from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.envs import make_env_factory
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.sft.copy_metric import copy_token_accuracy, shared_prompt_tokens
from agentrl_trainer.sft.prefix import prefix_shared_loss, shared_prefix_length
from agentrl_trainer.sft.rename import rename_messages, word_pieces
from agentrl_trainer.sft.render import RenderedTranscript, render_transcript
from agentrl_trainer.sft.transcripts import record_oracle
from agentrl_trainer.tiny import load_tokenizer
from agentrl_trainer.types import TrainingRow, Trajectory

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "examples" / "configs" / "learn_db.yaml"
STATE = "train_state.pt"  # beside a saved model: step, best success so far, optimizer state


class Transcripts:
    """The DB oracle's successful transcripts of a task file, played once and rendered as the SFT warm-up renders
    them, as often as needed (each pass over the data, each held-out variant)."""

    def __init__(self, tokenizer: Any, tasks: Path, oracle: dict[str, Any]) -> None:
        """Play the oracle on every task of ``tasks`` (a DB ``train_file``) and keep its successes."""
        factory = make_env_factory(env_kwargs={"db": {"train_file": str(tasks)}})
        played = record_oracle(factory, "db", "train", train_file=str(tasks), **oracle)
        self.played = [t for t in played if t.score == 1.0]
        self.tokenizer, self.pieces = tokenizer, word_pieces(tokenizer)

    def render(self, seed: int = 0, random_names: float = 0.0, short: bool = False) -> list[RenderedTranscript]:
        """Every transcript rendered.

        Args:
            seed: Draws which transcripts are renamed and their new names (a new seed per pass over the data, so
                no name is seen twice).
            random_names: The share of transcripts whose table name, column names and text values are replaced,
                everywhere after the system prompt, by names made of random word pieces of the vocabulary
                (:func:`~agentrl_trainer.sft.rename.rename_messages`), so they cannot be learnt by heart, only
                copied from the prompt.
            short: Render without the system prompt and tool schemas (~1,050 of the ~1,150 prompt tokens, the
                same in every task), a diagnosis of whether the long shared prefix is what keeps a model from
                copying (episodes cannot be scored then: the env's prompt has them).
        """
        rng, rendered = random.Random(seed), []
        for t in self.played:
            messages = t.messages
            if random_names and t.names and rng.random() < random_names:
                messages = rename_messages(messages, t.names, rng, self.pieces)
            if short:
                rendered.append(render_transcript(self.tokenizer, messages[1:], None))
            else:
                rendered.append(render_transcript(self.tokenizer, messages, t.tools))
        return rendered

    def system_tokens(self) -> set[int]:
        """The token ids of the first task's full prompt before its question: the system prompt's and tools'."""
        first = render_transcript(self.tokenizer, self.played[0].messages, self.played[0].tools)
        return shared_prompt_tokens(first, self.tokenizer.convert_tokens_to_ids("<|im_start|>"))


def score(model: Any, tokenizer: Any, heldout: Path, args: argparse.Namespace, temperature: float) -> list[Trajectory]:
    """Play the first ``--n-eval`` held-out tasks through the real DB env (8 in flight)."""
    factory = make_env_factory(env_kwargs={"db": {"train_file": str(heldout)}})
    engine = HFEngine(
        model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, temperature=temperature
    )
    limits = EpisodeLimits(args.max_turns, args.max_new_tokens, 4096, unfinished_penalty=0.0)

    async def run() -> list[Trajectory]:
        envs: asyncio.Queue[Any] = asyncio.Queue()
        for _ in range(8):
            envs.put_nowait(factory("db", "train"))

        async def play(index: int) -> Trajectory:
            env = await envs.get()
            try:
                return await run_episode(
                    TrainingRow("db", "train", index), env, tokenizer=tokenizer, pick_engine=lambda: engine,
                    limits=limits,
                )  # fmt: skip
            finally:
                envs.put_nowait(env)

        try:
            return await asyncio.gather(*(play(i) for i in range(args.n_eval)))
        finally:
            await engine.aclose()
            while not envs.empty():
                envs.get_nowait().close()

    return asyncio.run(run())


def report(
    step: int, temperature: float, results: list[Trajectory], types: list[str], tokenizer: Any, seconds: float
) -> float:
    """One line of figures, then the raw actions of the first two episodes; returns the success rate."""
    by_type: dict[str, list[float]] = collections.defaultdict(list)
    for t in results:
        by_type[types[t.row.index]].append(t.score)
    rates = {k: round(sum(v) / len(v), 2) for k, v in sorted(by_type.items())}
    ended = dict(collections.Counter(t.status for t in results))
    success = sum(t.score for t in results) / len(results)
    print(
        f"EVAL step {step} temperature {temperature:g} success {success:.3f} by type {rates} ended {ended} "
        f"({seconds:.0f}s)",
        flush=True,
    )
    for t in results[:2]:
        for segment in t.segments:
            if segment.is_action:
                print("   ", repr(tokenizer.decode(list(segment.token_ids)))[:240], flush=True)
    return success


def report_copying(
    model: Any,
    tokenizer: Any,
    step: int,
    heldout: dict[str, list[RenderedTranscript]],
    shared: frozenset[int] = frozenset(),
) -> None:
    """Teacher-forced accuracy on held-out oracle transcripts' copied tokens vs the rest (no episodes), per set.

    ``shared``: token ids never counted as copied (the system prompt's and tools', under ``--short-prompt``).
    """
    turn_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    for name, rows in heldout.items():
        started = time.perf_counter()
        result = copy_token_accuracy(model, rows, turn_start, shared=shared)
        print(
            f"COPY step {step} {name}: copied-token accuracy {result.copied:.3f} ({result.copied_tokens} tokens) "
            f"other {result.other:.3f} ({result.other_tokens}) transcripts with every copied token right "
            f"{result.rows_all_copied:.3f} ({time.perf_counter() - started:.0f}s)",
            flush=True,
        )


def evaluate(
    model: Any,
    tokenizer: Any,
    step: int,
    types: list[str],
    args: argparse.Namespace,
    heldout: dict[str, list[RenderedTranscript]] | None = None,
    shared: frozenset[int] = frozenset(),
) -> list[float]:
    """Report copying on ``heldout`` transcripts (when given), score at each ``--temperature``; the success rates."""
    if heldout:
        report_copying(model, tokenizer, step, heldout, shared)
    if not args.n_eval:
        return [0.0] * len(args.temperature)
    rates = []
    for temperature in args.temperature:
        started = time.perf_counter()
        results = score(model.eval(), tokenizer, args.heldout, args, temperature)
        rates.append(report(step, temperature, results, types, tokenizer, time.perf_counter() - started))
    return rates


def save(directory: Path, model: Any, tokenizer: Any, optimizer: Any, step: int, best: list[float]) -> None:
    """Write a checkpoint ``--checkpoint`` can score or resume: model, tokenizer, then the training state."""
    partial = directory.with_name(directory.name + ".partial")  # a run killed mid-save keeps the previous one
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    torch.save({"step": step, "best": best, "optimizer": optimizer.state_dict()}, partial / STATE)
    shutil.rmtree(directory, ignore_errors=True)
    partial.rename(directory)
    print(f"saved step {step} to {directory}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, default=REPO / "runs/learn/synth-train/db.jsonl")
    parser.add_argument("--heldout", type=Path, default=REPO / "runs/learn/synth-heldout/db.jsonl")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument(
        "--checkpoint", type=Path, default=None, help="start (or resume) from this model (default: the tiny)"
    )
    parser.add_argument("--save", type=Path, default=None, help="save DIR/last and DIR/best at each scoring")
    parser.add_argument("--oracle", default='{"show_sql": true}', help="DB oracle options (JSON)")
    parser.add_argument("--steps", type=int, default=600, help="steps to train (more, when resuming)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument(
        "--copy-every", type=int, default=0, metavar="N", help="also report copying alone every N steps (seconds)"
    )
    parser.add_argument("--n-eval", type=int, default=40, help="held-out episodes per scoring (0: copying only)")
    parser.add_argument(
        "--temperature", type=float, action="append", help="scoring temperature, repeatable (default 1e-3: ~greedy)"
    )
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--copy-mix",
        type=int,
        default=0,
        metavar="N",
        help="add N prompt-length copy rows (agentrl_trainer.copy_pretrain) to each step's loss (keeps the circuit)",
    )
    parser.add_argument(
        "--random-names",
        type=float,
        default=0.0,
        metavar="P",
        help="share of training transcripts whose table, column and text value names are replaced by random ones",
    )
    parser.add_argument(
        "--short-prompt",
        action="store_true",
        help="train and measure copying without the system prompt and tools (a diagnosis; needs --n-eval 0)",
    )
    args = parser.parse_args()
    if args.short_prompt and args.n_eval:
        parser.error("--short-prompt trains on prompts the env does not show: pass --n-eval 0 (copying only)")
    args.temperature = args.temperature or [1e-3]
    logging.basicConfig(format="%(message)s")  # the tiny model's copy pre-training (tiny_copy_pretrain_steps)
    logging.getLogger("agentrl_trainer.copy_pretrain").setLevel(logging.INFO)
    torch.set_num_threads(args.threads)
    if args.checkpoint is not None:
        path, tokenizer = str(args.checkpoint), load_tokenizer(args.checkpoint)
    else:
        # The config's task_weights fit its own tasks; this diagnostic builds the model for whatever tasks --set gives.
        model_args, config = load_config(args.config, ["task_weights=null", *args.set])
        path, tokenizer = prepare_model(model_args, config)
    model = AutoModelForCausalLM.from_pretrained(path)
    print(f"model {path}: {sum(p.numel() for p in model.parameters())} parameters", flush=True)
    types = [json.loads(line)["type"][0] for line in args.heldout.read_text().splitlines() if line.strip()]
    oracle = json.loads(args.oracle)
    # The oracle's held-out transcripts, for copying teacher-forced; renamed, names can only be copied, not recalled.
    # Under --short-prompt the system prompt's tokens still count as "other": the groups of the full prompt.
    held = Transcripts(tokenizer, args.heldout, oracle)
    shared = frozenset(held.system_tokens()) if args.short_prompt else frozenset()
    heldout = {
        "held-out": held.render(short=args.short_prompt),
        "held-out, random names": held.render(seed=1, random_names=1.0, short=args.short_prompt),
    }
    train = Transcripts(tokenizer, args.train, oracle) if args.steps else None
    rows = train.render(random_names=args.random_names, short=args.short_prompt) if train else []
    passes = 0
    if rows:
        mean = sum(len(r.input_ids) for r in rows) / len(rows)
        trained = sum(sum(r.loss_mask) for r in rows) / len(rows)
        print(f"{len(rows)} transcripts, {mean:.0f} tokens each, {trained:.0f} of them trained", flush=True)
    else:
        evaluate(model, tokenizer, 0, types, args, heldout, shared)
        return
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    start, best = 0, [-1.0]
    if args.checkpoint is not None and (args.checkpoint / STATE).is_file():
        state = torch.load(args.checkpoint / STATE)
        optimizer.load_state_dict(state["optimizer"])
        start, best = state["step"], state["best"]
        best = best if isinstance(best, list) else [best]  # saved by the first version: the first rate only
        print(f"resuming at step {start} (best success so far {best})", flush=True)
    # Seeded by the start step: a resumed run draws a new order rather than replaying the first batches.
    rng, order, losses, train_s = random.Random(start), [], [], 0.0
    copy_rng, copy_tokens = random.Random(-1 - start), copyable_token_ids(tokenizer)  # the SFT order stays as without
    copy_settings = replace(CopyPretrainSettings().long, batch_size=args.copy_mix)  # rows as long as a prompt
    for step in range(start + 1, start + args.steps + 1):
        started = time.perf_counter()
        model.train()
        if len(order) < args.batch:
            if train is not None and args.random_names and step > start + 1:
                passes += 1  # a new pass over the data: new random names
                rows = train.render(seed=start + passes, random_names=args.random_names, short=args.short_prompt)
            order += rng.sample(range(len(rows)), len(rows))
        batch, order = [rows[i] for i in order[: args.batch]], order[args.batch :]
        width = max(len(r.input_ids) for r in batch)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        mask, labels = torch.zeros_like(ids), torch.full_like(ids, -100)
        for i, r in enumerate(batch):
            ids[i, : len(r.input_ids)] = torch.tensor(r.input_ids)
            mask[i, : len(r.input_ids)] = 1
            labels[i, : len(r.input_ids)] = torch.tensor(r.labels)
        for group in optimizer.param_groups:  # 20 warm-up steps, then constant
            group["lr"] = args.lr * min(1.0, step / 20)
        loss = prefix_shared_loss(model, ids, mask, labels, shared_prefix_length(ids, mask, labels))
        if args.copy_mix:
            copy_ids, copy_mask, copy_labels = copy_batch(copy_rng, copy_tokens, tokenizer.pad_token_id, copy_settings)
            loss = loss + model(input_ids=copy_ids, attention_mask=copy_mask, labels=copy_labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        train_s += time.perf_counter() - started
        if step % 20 == 0:
            print(f"step {step} loss {sum(losses[-20:]) / 20:.3f} train {train_s:.0f}s", flush=True)
        if args.copy_every and step % args.copy_every == 0 and step % args.eval_every:
            report_copying(model, tokenizer, step, heldout, shared)
        if step % args.eval_every == 0 or step == start + args.steps:
            success = evaluate(model, tokenizer, step, types, args, heldout, shared)
            if args.save is not None:
                if success > best:  # lists: the first temperature's rate, then the next one's on a tie
                    best = success
                    save(args.save / "best", model, tokenizer, optimizer, step, best)
                save(args.save / "last", model, tokenizer, optimizer, step, best)


if __name__ == "__main__":
    main()
