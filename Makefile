# The two commands that matter: `make eval` (the main job) and `make test` (what CI runs).
SHELL := /bin/bash
export AGENTRL_DATA_ROOT ?= $(abspath ../shared/agentbench)
export AGENTRL_CACHE_DIR ?= $(HOME)/.cache/agentrl
EVAL_ARGS ?= --tasks db --split test --agent oracle --output runs/oracle-db

.PHONY: setup test lint docs eval bench
setup:
	@bash scripts/bootstrap.sh

lint: setup
	uv run ruff check .
	uv run ruff format --check .

docs: setup
	uv run mkdocs build --strict --quiet --site-dir site

test: lint docs
	uv run pytest

eval: setup
	uv run agentrl-eval $(EVAL_ARGS)

# `make bench BENCH=env_step BENCH_ARGS="--tasks db"` runs one benchmark under bench/.
BENCH ?= env_step
bench: setup
	uv run python bench/$(BENCH).py $(BENCH_ARGS)
