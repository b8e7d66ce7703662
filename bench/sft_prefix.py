"""SFT step time with and without the shared prefix run once per batch (``agentrl_trainer.sft.prefix``).

Records oracle transcripts of one task (``--task``, dev split), renders them as the warm-up does, and times a
forward and backward pass over batches of ``--batch-size`` transcripts of that task: the plain pass (every row
runs its whole sequence) against the shared-prefix pass (the system prompt and tools once per batch). Both
losses are printed, so the speed-up is seen at equal loss.

    uv run python bench/sft_prefix.py --task kg --batch-size 4 --batches 3
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from agentrl_trainer.corpus import task_corpus
from agentrl_trainer.envs import make_env_factory
from agentrl_trainer.sft.prefix import prefix_shared_loss, shared_prefix_length
from agentrl_trainer.sft.transcripts import record_oracle
from agentrl_trainer.sft.warmup import sft_rows
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer


def _plain_loss(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    logits, targets = out.logits[:, :-1], batch["labels"][:, 1:]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def _timed(step: object) -> tuple[float, float]:
    started = time.perf_counter()
    loss = step()  # type: ignore[operator]
    loss.backward()
    return time.perf_counter() - started, float(loss)


def main() -> None:
    """Run the benchmark and print a table and a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="kg")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    factory = make_env_factory()
    corpus = task_corpus(factory, [args.task], "dev", max_samples=8)
    path = build_tiny_model(corpus, TinyModelSpec(vocab_size=1024, hidden_size=64, intermediate_size=128))
    tokenizer = load_tokenizer(path)
    from transformers import AutoModelForCausalLM
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    model = AutoModelForCausalLM.from_pretrained(path)
    model.train()
    transcripts = record_oracle(factory, args.task, "dev", max_samples=args.batch_size * args.batches)
    rows = [{k: r[k] for k in ("input_ids", "labels")} for r in sft_rows(tokenizer, transcripts)]
    collate = DataCollatorForLanguageModeling(pad_token_id=tokenizer.pad_token_id)
    plain_s, shared_s, plain_loss, shared_loss, prefixes, lengths = [], [], [], [], [], []
    for start in range(0, len(rows) - args.batch_size + 1, args.batch_size):
        batch = collate(rows[start : start + args.batch_size])
        prefix = shared_prefix_length(batch["input_ids"], batch["attention_mask"], batch["labels"])
        prefixes.append(prefix)
        lengths.append(float(batch["attention_mask"].sum(dim=1).float().mean()))
        model.zero_grad()
        seconds, loss = _timed(lambda batch=batch: _plain_loss(model, batch))
        plain_s.append(seconds)
        plain_loss.append(loss)
        model.zero_grad()
        seconds, loss = _timed(
            lambda batch=batch, prefix=prefix: prefix_shared_loss(
                model, batch["input_ids"], batch["attention_mask"], batch["labels"], prefix
            )
        )
        shared_s.append(seconds)
        shared_loss.append(loss)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    figures = {
        "task": args.task,
        "batch_size": args.batch_size,
        "batches": len(plain_s),
        "mean_tokens_per_row": mean(lengths),
        "mean_shared_prefix_tokens": mean(prefixes),
        "plain_step_s": mean(plain_s),
        "shared_step_s": mean(shared_s),
        "speedup": mean(plain_s) / mean(shared_s),
        "plain_loss": mean(plain_loss),
        "shared_loss": mean(shared_loss),
    }
    print("| pass | step s (fwd+bwd) | loss |\n|---|---|---|")
    print(f"| plain | {figures['plain_step_s']:.3f} | {figures['plain_loss']:.5f} |")
    print(f"| shared prefix | {figures['shared_step_s']:.3f} | {figures['shared_loss']:.5f} |")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
