"""It learns real tasks: success per task before SFT, after SFT and after RL, on held-out synthesized tasks, over seeds.

Per seed, the run ``make train`` does (``examples/configs/learn_db.yaml``, through
:func:`agentrl_trainer.cli.run_training`):

1. synthesize level-1 DB and KG tasks with ``agentrl-envs synth`` (validated by the envs): a training set
   (seed 0), a held-out set (seed 1, none of whose tasks has the text of a training task), the warm-up's DB tasks
   (``--sft-synth-n``) and RL's DB tasks (``--rl-synth-n``, only the ``--rl-types`` question types: INSERT is
   left out, as the warm-up rarely solves one and RL on them gained nothing; docs/benchmarks.md, session 14),
   and held-out DB tasks of RL's types (seed 1, unseen as the other: what RL can be expected to improve, scored
   beside the held-out set of every type);
2. build the tiny model (seeded), SFT it on oracle transcripts of the warm-up's tasks;
3. async AgentRL on the real DB and KG environments (DB on RL's tasks, KG on the training set), with task
   advantage normalization on (``norm``) and off (``no_norm``), both from the same SFT checkpoint;
4. score success per task on the held-out set and on dev before SFT, after SFT and after RL (sampling).

A finished run (its ``summary.json`` beside the overrides and task files it ran with) is reused, so the seeds of a
long bench can be run across several invocations (``--seeds`` counts from ``--first-seed``, 0 by default; a seed
takes ~2 h on 2 cores, so ``--first-seed 1 --seeds 1`` runs seed 1 alone); a run whose held-out sets changed since
is scored again, not trained again.

    uv run python bench/learning_real.py                 # 3 seeds
    uv run python bench/learning_real.py --quick         # one seed, small budgets: a smoke check

Prints a table and, last, one JSON line:
``{"tasks": {"db": {"before_sft": [..per seed], "after_sft": [...], "after_rl": [...]}, ...}, ...}`` (held-out
set, normalization on), with the same figures for normalization off (``no_task_norm``), for held-out DB of RL's
types (``db_rl_types``, and ``no_task_norm_db_rl_types``) and for dev (``dev``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.synth.dedupe import normalized, read_samples, task_text, texts_in
from agentrl_trainer.cli import load_config, prepare_model, run_training
from agentrl_trainer.stages import evaluate_model, write_stages

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "examples" / "configs" / "learn_db.yaml"
STAGES = ("before_sft", "after_sft", "after_rl")
VARIANTS = {"norm": True, "no_norm": False}
QUICK = {
    "steps": 4,
    "sft_max_steps": 40,
    "limit": 10,
    "bfcl_limit": 5,
    "synth_n": 60,
    "heldout_n": 20,
    "sft_synth_n": 60,
    "rl_synth_n": 60,
}
_TASK_FILES = (("db", "db.jsonl"), ("kg", "kg.json"))
SYNTH_ARGS = "bench_synth_options.json"
"""In a synthesized directory: the ``synth`` options that wrote it."""
RUN_ARGS = "bench_overrides.json"
"""Beside a run's summary.json: the overrides and task files it ran with (a run is reused only for the same)."""


@dataclass(frozen=True)
class TaskFiles:
    """The synthesized task directories of a bench."""

    train: Path  # DB and KG, seed 0: KG's RL tasks
    heldout: Path  # DB and KG, seed 1
    sft: Path  # DB, seed 0: the warm-up's
    rl: Path  # DB, seed 0, --rl-types only: DB's RL tasks
    heldout_rl: Path  # DB, seed 1, --rl-types only

    def trained(self) -> list[Path]:
        """The directories whose tasks a run trains on."""
        return [self.train, self.sft, self.rl]


def synthesize(out: Path, args: argparse.Namespace) -> TaskFiles:
    """The bench's task directories (see :class:`TaskFiles`), each synthesized once.

    The held-out sets are synthesized with ``--exclude`` of every training set, so none of their tasks has the
    text (question and schema, case folded) of a task the run trains on: level-1 DB draws from a small space, and
    without it 4,200 training tasks shared the text of ~16% of 200 held-out ones (rows and answers differ, but
    the task is no longer unseen).
    """
    types = args.rl_types.replace(" ", "")
    files = TaskFiles(
        out / f"synth-train-{args.synth_n}",
        out / f"synth-heldout-{args.heldout_n}-unseen",
        out / f"synth-sft-{args.sft_synth_n}",
        out / f"synth-rl-{args.rl_synth_n}-{types.replace(',', '-')}",
        out / f"synth-heldout-{args.heldout_n}-{types.replace(',', '-')}-unseen",
    )
    unseen = [option for trained in files.trained() for option in ("--exclude", str(trained))]
    for seed, count, tasks, path, extra in (  # the training sets first: the held-out ones exclude them
        (0, args.synth_n, "db,kg", files.train, []),
        (0, args.sft_synth_n, "db", files.sft, []),
        (0, args.rl_synth_n, "db", files.rl, ["--types", types]),
        (1, args.heldout_n, "db,kg", files.heldout, unseen),
        (1, args.heldout_n, "db", files.heldout_rl, ["--types", types, *unseen]),
    ):
        options = ["--task", tasks, "--n", str(count), "--seed", str(seed), "--difficulty", "1", *extra]
        marker = path / SYNTH_ARGS  # a directory is reused only if these options wrote it
        if not marker.is_file() or json.loads(marker.read_text()) != options:
            command = [sys.executable, "-m", "agentrl_envs.cli", "synth", *options, "--out", str(path)]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            marker.write_text(json.dumps(options) + "\n", encoding="utf-8")
    return files


def fingerprint(files: TaskFiles) -> dict[str, dict[str, str]]:
    """The SHA-256 of every task file of the bench, those a run trains on and those it is scored on apart."""

    def hashes(directories: list[Path]) -> dict[str, str]:
        paths = sorted(d / name for d in directories for _, name in _TASK_FILES if (d / name).is_file())
        return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}

    return {"trained": hashes(files.trained()), "scored": hashes([files.heldout, files.heldout_rl])}


def overlap(trained: list[Path], heldout: Path) -> dict[str, int]:
    """Held-out tasks whose text (question and schema) equals a task's of a ``trained`` directory, per task.

    0 by construction (``synth --exclude``): the check that it held.
    """
    out = {}
    for task, name in _TASK_FILES:
        if (heldout / name).is_file():
            seen = texts_in(task, [d / name for d in trained])
            out[task] = sum(normalized(task_text(task, row)) in seen for row in read_samples(heldout / name))
    return out


def sizes(directory: Path) -> dict[str, int]:
    """Tasks per task file of a directory."""
    return {task: len(read_samples(directory / name)) for task, name in _TASK_FILES if (directory / name).is_file()}


def overrides(args: argparse.Namespace, seed: int, variant: str, files: TaskFiles) -> list[str]:
    """``KEY=VALUE`` overrides of the learning config for one run."""
    sets = {
        "heldout": {"split": "train", "env_kwargs": {"db": {"train_file": str(files.heldout / "db.jsonl")},
                                                     "kg": {"train_file": str(files.heldout / "kg.json")}}},
        "heldout_rl_types": {"split": "train", "tasks": ["db"],
                             "env_kwargs": {"db": {"train_file": str(files.heldout_rl / "db.jsonl")}}},
        "dev": {"split": "dev"},
        # Held out in kind: BFCL's multi-turn categories, never trained on (the paper's Table 5).
        "bfcl": {"split": "test", "tasks": ["bfcl"], "limit": args.bfcl_limit},
    }  # fmt: skip
    values: dict[str, Any] = {
        "seed": seed,
        "output_dir": str(args.out / f"{variant}-seed{seed}"),
        "task_advantage_normalization": VARIANTS[variant],
        "env_kwargs": {
            "db": {"train_file": str(files.rl / "db.jsonl")},
            "kg": {"train_file": str(files.train / "kg.json")},
        },
        "stage_eval": {"sets": sets, "limit": args.limit},
        "max_steps": args.steps,
        "disable_tqdm": True,
    }
    config = load_config(args.config, args.set)[1]  # a --set sft_warmup=... is the warm-up changed below
    warmup = dict(config.sft_warmup or {})
    if warmup.get("env_kwargs"):  # the config's warm-up tasks are make train's file: this run's own instead
        warmup["env_kwargs"] = {"db": {"train_file": str(files.sft / "db.jsonl")}}
    if args.sft_max_steps is not None:
        warmup["max_steps"] = args.sft_max_steps
    values["sft_warmup"] = warmup
    return list(args.set) + [f"{k}={json.dumps(v)}" for k, v in values.items()]


def run_once(args: argparse.Namespace, values: list[str], files: dict[str, dict[str, str]]) -> dict[str, Any]:
    """One training run's summary.

    A finished run with the same overrides and task files (their :func:`fingerprint`) is reused; one that
    trained with the same but was scored on other held-out sets is scored again (:func:`rescore`), its models
    kept; any other is trained now.
    """
    model_args, config = load_config(args.config, values)
    output = Path(config.output_dir)
    summary_path, args_path = output / "summary.json", output / RUN_ARGS
    ran_with = {"overrides": values, "task_files": files}
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    before = json.loads(args_path.read_text()) if args_path.is_file() else None
    if "after_rl" in summary.get("stages", {}) and isinstance(before, dict) and before["overrides"] == values:
        if before["task_files"] == files:
            print(f"reused {output} (finished with the same overrides and task files)", file=sys.stderr)
            return summary
        warmup = (summary.get("sft_warmup") or {}).get("model_path")
        if before["task_files"]["trained"] == files["trained"] and warmup and Path(warmup).is_dir():
            print(f"rescored {output} (trained on the same tasks; other held-out sets)", file=sys.stderr)
            summary = rescore(model_args, config, warmup)
            args_path.write_text(json.dumps(ran_with, indent=1) + "\n", encoding="utf-8")
            return summary
    summary = run_training(model_args, config)
    args_path.write_text(json.dumps(ran_with, indent=1) + "\n", encoding="utf-8")
    return summary


def rescore(model_args: Any, config: Any, warmup: str) -> dict[str, Any]:
    """A finished run's three models scored on the config's sets again; returns its updated summary."""
    start, tokenizer = prepare_model(model_args, config)  # the cached tiny model
    stage_eval = config.stage_eval_config()
    models = {"before_sft": start, "after_sft": warmup, "after_rl": config.output_dir}
    stages = {stage: evaluate_model(path, tokenizer, config, stage_eval).scores for stage, path in models.items()}
    write_stages(config.output_dir, stages)
    return json.loads((Path(config.output_dir) / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds, from --first-seed")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="one seed, small budgets (a smoke check)")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--steps", type=int, default=50, help="RL steps (make train's config runs 6)")
    parser.add_argument("--sft-max-steps", type=int, default=None, help="SFT steps (default: the config's epochs)")
    parser.add_argument(
        "--limit", type=int, default=200, help="held-out/dev samples per task scored per stage (200: a standard "
        "error of ~0.035 on a success near 0.5; 40 gives ~0.08, too coarse for a +0.10 goal)"
    )  # fmt: skip
    parser.add_argument("--bfcl-limit", type=int, default=20, help="BFCL samples per category scored per stage")
    parser.add_argument("--synth-n", type=int, default=200, help="training tasks per task")
    parser.add_argument("--heldout-n", type=int, default=200, help="held-out tasks per task")
    parser.add_argument(
        "--sft-synth-n", type=int, default=2000, help="DB tasks for the warm-up (where the config has its own)"
    )
    parser.add_argument("--rl-synth-n", type=int, default=2000, help="DB tasks for RL")
    parser.add_argument(
        "--rl-types", default="other,counting,aggregation-MIN,aggregation-MAX",
        help="DB question types RL plays (agentrl-envs synth --types; default: level 1 without INSERT)",
    )  # fmt: skip
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-learning-real")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    args = parser.parse_args()
    if args.quick:
        args.seeds = 1
        for key, value in QUICK.items():
            if getattr(args, key) in (None, parser.get_default(key)):
                setattr(args, key, value)
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    files = synthesize(args.out, args)
    variants = args.variants.split(",")

    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for variant in variants:
            summary = run_once(args, overrides(args, seed, variant, files), fingerprint(files))
            runs[variant].append({"stages": summary["stages"], "sft_warmup": summary.get("sft_warmup")})
            print(f"seed {seed} {variant}: {json.dumps(summary['stages'])}", file=sys.stderr)

    def table(variant: str, split: str) -> dict[str, dict[str, list[float]]]:
        tasks = list(runs[variant][0]["stages"]["before_sft"][split])
        return {
            task: {stage: [r["stages"][stage][split][task] for r in runs[variant]] for stage in STAGES}
            for task in tasks
        }

    main_variant = "norm" if "norm" in runs else variants[0]
    figures: dict[str, Any] = {
        "tasks": table(main_variant, "heldout"),
        "dev": table(main_variant, "dev"),
        "bfcl": table(main_variant, "bfcl"),
        "no_task_norm": table("no_norm", "heldout") if "no_norm" in runs else None,
        "db_rl_types": table(main_variant, "heldout_rl_types"),
        "no_task_norm_db_rl_types": table("no_norm", "heldout_rl_types") if "no_norm" in runs else None,
        "heldout_overlap_with_train": {
            "heldout": overlap(files.trained(), files.heldout),
            "heldout_rl_types": overlap(files.trained(), files.heldout_rl),
        },
        "heldout_sizes": {"heldout": sizes(files.heldout), "heldout_rl_types": sizes(files.heldout_rl)},
        "sft_warmup": [r["sft_warmup"] for r in runs[main_variant]],
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    }
    for name, key in (
        ("held-out, norm on", "tasks"),
        ("held-out, norm off", "no_task_norm"),
        ("held-out DB of RL's types, norm on", "db_rl_types"),
        ("held-out DB of RL's types, norm off", "no_task_norm_db_rl_types"),
        ("dev, norm on", "dev"),
        ("BFCL multi-turn (never trained on), norm on", "bfcl"),
    ):
        if figures[key] is None:
            continue
        print(f"{name}: success per task, mean +- std over {args.seeds} seed(s)")
        for task, stages in figures[key].items():
            cells = [f"{s} {statistics.mean(v):.3f} +- {statistics.pstdev(v):.3f}" for s, v in stages.items()]
            print(f"  {task:17} " + " | ".join(cells))
    figures["wall_s"] = time.perf_counter() - started
    print(f"wall time: {figures['wall_s']:.0f}s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
