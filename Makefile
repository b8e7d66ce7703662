# The two commands that matter: `make train` (the main job: async RL on CPU) and `make test` (CI); also `make eval`.
SHELL := /bin/bash
export AGENTRL_CACHE_DIR ?= $(HOME)/.cache/agentrl
# The data root is built by `agentrl-envs data fetch` (in `make setup`) into $(AGENTRL_CACHE_DIR)/agentbench/<commit>;
# where a local mirror of the pinned commit's archive sits beside the repository, it stands in for GitHub.
UPSTREAM_ARCHIVE := $(abspath ../shared/upstream/AgentBench-578c5e9.tar.gz)
ifneq ($(wildcard $(UPSTREAM_ARCHIVE)),)
export AGENTRL_DATA_URL ?= $(UPSTREAM_ARCHIVE)
endif
export NO_MKDOCS_2_WARNING ?= 1
EVAL_ARGS ?= --tasks db --split test --agent oracle --output runs/oracle-db --overwrite

.PHONY: setup test lint docs eval train bench
setup:
	@bash scripts/bootstrap.sh

lint: setup
	uv run ruff check .
	uv run ruff format --check .
	uv run pyright

docs: setup
	uv run mkdocs build --strict --quiet --site-dir site

# AGENTRL_TEST_ASSETS=1: the setup of `make test` also prepares what only the tests use (see scripts/bootstrap.sh).
test: export AGENTRL_TEST_ASSETS := 1
test: lint docs
	@bash scripts/test.sh $(PYTEST_ARGS)

eval: setup
	uv run agentrl-eval $(EVAL_ARGS)

# `make train TRAIN_CONFIG=... TRAIN_ARGS="max_steps=5"` runs agentrl-train. The default learns DB and KG (SFT on
# synthesized tasks, then async RL, scored before/after on held-out tasks); it first synthesizes its task files
# (once: they stay under runs/learn). The five-task pipeline run: TRAIN_CONFIG=examples/configs/quickstart.yaml.
TRAIN_CONFIG ?= examples/configs/learn_db.yaml
LEARN_SYNTH := runs/learn/synth-train/db.jsonl runs/learn/synth-train-2000/db.jsonl runs/learn/synth-heldout-unseen/db.jsonl
train: setup $(if $(findstring learn_db,$(TRAIN_CONFIG)),$(LEARN_SYNTH))
	uv run agentrl-train $(TRAIN_CONFIG) $(TRAIN_ARGS)

# The learning config's tasks: level-1 DB and KG, training sets (seed 0) and a held-out set (seed 1) that has none of
# their tasks (--exclude: level-1 DB draws from a small space, and ~15% of a seed would repeat a training task).
runs/learn/synth-train/db.jsonl:
	uv run agentrl-envs synth --task db,kg --n 200 --seed 0 --difficulty 1 --out runs/learn/synth-train
runs/learn/synth-train-2000/db.jsonl:
	uv run agentrl-envs synth --task db --n 2000 --seed 0 --difficulty 1 --out runs/learn/synth-train-2000
runs/learn/synth-heldout-unseen/db.jsonl: runs/learn/synth-train/db.jsonl runs/learn/synth-train-2000/db.jsonl
	uv run agentrl-envs synth --task db,kg --n 40 --seed 1 --difficulty 1 --out runs/learn/synth-heldout-unseen \
		--exclude runs/learn/synth-train --exclude runs/learn/synth-train-2000

# `make bench BENCH=env_step BENCH_ARGS="--tasks db"` runs one benchmark under bench/.
BENCH ?= env_step
bench: setup
	uv run python bench/$(BENCH).py $(BENCH_ARGS)
