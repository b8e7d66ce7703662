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

docs: setup
	uv run mkdocs build --strict --quiet --site-dir site

# AGENTRL_TEST_ASSETS=1: the setup of `make test` also prepares what only the tests use (see scripts/bootstrap.sh).
test: export AGENTRL_TEST_ASSETS := 1
test: lint docs
	@bash scripts/test.sh $(PYTEST_ARGS)

eval: setup
	uv run agentrl-eval $(EVAL_ARGS)

# `make train TRAIN_CONFIG=... TRAIN_ARGS="max_steps=5"` runs agentrl-train (default: the CPU quickstart).
TRAIN_CONFIG ?= examples/configs/quickstart.yaml
train: setup
	uv run agentrl-train $(TRAIN_CONFIG) $(TRAIN_ARGS)

# `make bench BENCH=env_step BENCH_ARGS="--tasks db"` runs one benchmark under bench/.
BENCH ?= env_step
bench: setup
	uv run python bench/$(BENCH).py $(BENCH_ARGS)
