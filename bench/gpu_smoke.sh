#!/usr/bin/env bash
# GPU smoke test of the vllm rollout engine: installs vLLM (CUDA) and the AgentRL packages into a fresh venv,
# trains a small locally built model for a few async steps with vLLM rollouts, and prints tokens/s, step time and
# trainer idle fraction (last line: JSON). Budget: under 8 minutes on one modern GPU.
#
#   bash bench/gpu_smoke.sh                 # needs PyPI (or PIP_FIND_LINKS / PIP_INDEX_URL pointing at a mirror)
#   AGENTRL_SMOKE_VENV=/path bash bench/gpu_smoke.sh   # reuse a venv that already has vllm
#
# Status: written, never run (no GPU machine was available to its author); see docs/deployment.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# The data root comes from the cache (built by `agentrl-envs data fetch` on first use); a local mirror of the
# archive stands in for GitHub when there is one.
if [ -f ../shared/upstream/AgentBench-578c5e9.tar.gz ]; then
    export AGENTRL_DATA_URL="${AGENTRL_DATA_URL:-$(pwd)/../shared/upstream/AgentBench-578c5e9.tar.gz}"
fi
VENV="${AGENTRL_SMOKE_VENV:-${AGENTRL_CACHE_DIR:-$HOME/.cache/agentrl}/gpu-smoke-venv}"
start=$(date +%s)

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader \
    || { echo "gpu_smoke: no NVIDIA GPU found (nvidia-smi missing)" >&2; exit 2; }

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import vllm, agentrl_trainer" 2>/dev/null; then
    python3 -m venv "$VENV"
    # vLLM brings its own CUDA torch; the workspace's CPU torch pin is left out (--no-deps on our packages).
    "$VENV/bin/pip" install --quiet --upgrade pip
    "$VENV/bin/pip" install --quiet vllm
    "$VENV/bin/pip" install --quiet --no-deps -e packages/agentrl-envs -e packages/agentrl-trainer
    # Their dependencies, from the two pyproject.toml files, less torch.
    "$VENV/bin/pip" install --quiet "trl>=1.16,<2" "accelerate>=1.10" "transformers>=5.0,<6" tokenizers datasets \
        matplotlib tqdm httpx safetensors pydantic gymnasium numpy jsonschema pyyaml rich bm25s PyStemmer rapidfuzz
fi
echo "gpu_smoke: install done in $(($(date +%s) - start)) s" >&2

# The trainer launches vLLM with this interpreter (it can import vllm).
timeout 420 "$VENV/bin/python" bench/gpu_smoke.py "$@"
echo "gpu_smoke: total $(($(date +%s) - start)) s" >&2
